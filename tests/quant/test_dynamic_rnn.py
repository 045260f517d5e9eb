"""Dynamically quantized LSTM and GRU (int8 weights) against PyTorch's: the same weights'
integers, and outputs and states equal to float32 rounding."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", [dict(num_layers=2), dict(bidirectional=True, batch_first=True)])
def test_dynamic_rnn_equals_torch(mode, kw):
    torch.manual_seed(0)
    t = torch.nn.Sequential(getattr(torch.nn, mode)(3, 5, **kw))
    e = ember.nn.Sequential(getattr(ember.nn, mode)(3, 5, **kw))
    copy_weights(t, e)
    tq_, eq_ = tq.quantize_dynamic(t), eq.quantize_dynamic(e)
    assert type(eq_[0]).__module__ == "ember.quant.modules.dynamic_rnn"
    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype(np.float32)
    ty, ts = tq_[0](torch.tensor(x))
    ey, es = eq_[0](ember.tensor(x))
    np.testing.assert_allclose(ey.numpy(), ty.numpy(), atol=2e-6)
    for a, b in zip(es if mode == "LSTM" else (es,), ts if mode == "LSTM" else (ts,)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-6)


def test_dynamic_lstm_with_a_state_and_errors():
    torch.manual_seed(1)
    t, e = torch.nn.Sequential(torch.nn.LSTM(2, 3)), ember.nn.Sequential(ember.nn.LSTM(2, 3))
    copy_weights(t, e)
    tl, el = tq.quantize_dynamic(t)[0], eq.quantize_dynamic(e)[0]
    x = np.random.default_rng(1).normal(size=(5, 1, 2)).astype(np.float32)
    h = np.random.default_rng(2).normal(size=(2, 1, 1, 3)).astype(np.float32)
    ty, _ = tl(torch.tensor(x), (torch.tensor(h[0]), torch.tensor(h[1])))
    ey, _ = el(ember.tensor(x), (ember.tensor(h[0]), ember.tensor(h[1])))
    np.testing.assert_allclose(ey.numpy(), ty.numpy(), atol=2e-6)
    with pytest.raises(ValueError, match="input_size 2, got 4"):
        el(ember.randn(5, 1, 4))
    with pytest.raises(ValueError, match="input must have 3 dimensions"):
        el(ember.randn(5, 2))
    with pytest.raises(ValueError, match=r"expected a state of shape \(1, 1, 3\)"):
        el(ember.randn(5, 1, 2), (ember.zeros(1, 2, 3), ember.zeros(1, 1, 3)))


def test_dynamic_gru_state_dict_round_trip():
    e = ember.nn.Sequential(ember.nn.GRU(3, 4, num_layers=2))
    q = eq.quantize_dynamic(e, {ember.nn.GRU: eq.per_channel_dynamic_qconfig})
    state = q.state_dict()
    assert "0.weight_hh_l1_scale" in state and state["0.weight_ih_l0"].dtype is ember.int8
    fresh = ember.nn.Sequential(ember.ao.nn.quantized.dynamic.GRU(3, 4, num_layers=2))
    fresh.load_state_dict(state)
    x = ember.randn(5, 2, 3)
    assert bool((fresh(x)[0] == q(x)[0]).all())
