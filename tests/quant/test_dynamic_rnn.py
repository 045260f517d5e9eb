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
    with pytest.raises(ValueError, match="input_size. Expected 2, got 4"):
        el(ember.randn(5, 1, 4))
    with pytest.raises(ValueError, match="input must have 3 dimensions"):
        el(ember.randn(5, 2))
    with pytest.raises(ValueError, match=r"Expected hidden\[0\] size \(1, 1, 3\)"):
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


def _pair(mode, **kw):
    torch.manual_seed(0)
    t = torch.nn.Sequential(getattr(torch.nn, mode)(3, 4, **kw))
    e = ember.nn.Sequential(getattr(ember.nn, mode)(3, 4, **kw))
    copy_weights(t, e)
    return tq.quantize_dynamic(t)[0], eq.quantize_dynamic(e)[0]


def _close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=2e-6)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_dynamic_rnn_takes_packed_sequences_like_torch(mode):
    tl, el = _pair(mode, bidirectional=True)
    x = np.random.default_rng(4).normal(size=(5, 3, 3)).astype(np.float32)
    lengths = [3, 5, 2]  # (unsorted: the states follow the caller's batch order)
    tp = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=False)
    ep = ember.nn.utils.rnn.pack_padded_sequence(ember.tensor(x), lengths, enforce_sorted=False)
    (ty, ts), (ey, es) = tl(tp), el(ep)
    assert isinstance(ey, ember.nn.utils.rnn.PackedSequence)
    _close(ey.data, ty.data)
    for a, b in zip(es if mode == "LSTM" else (es,), ts if mode == "LSTM" else (ts,)):
        _close(a, b)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_dynamic_rnn_drops_out_between_layers_in_training(mode):
    tl, el = _pair(mode, num_layers=2, dropout=1.0)  # (p = 1: the second layer sees zeros)
    x = np.random.default_rng(5).normal(size=(4, 2, 3)).astype(np.float32)
    ty, ey = tl.train()(torch.tensor(x))[0], el.train()(ember.tensor(x))[0]
    _close(ey, ty)
    _close(el.eval()(ember.tensor(x))[0], tl.eval()(torch.tensor(x))[0])


def test_dynamic_rnn_empty_batch_and_sequence():
    tl, el = _pair("GRU")
    ty, th = tl(torch.zeros(4, 0, 3))
    ey, eh = el(ember.zeros(4, 0, 3))
    assert tuple(ey.shape) == tuple(ty.shape) and tuple(eh.shape) == tuple(th.shape)
    with pytest.raises(ValueError, match="sequence length"):
        el(ember.zeros(0, 2, 3))
    with pytest.raises(TypeError, match="expected a float32 input"):
        el(ember.zeros(2, 2, 3, dtype="float64"))


def test_dynamic_lstm_state_must_be_a_pair():
    _, el = _pair("LSTM")
    for hx in (ember.zeros(1, 2, 4), ember.zeros(2, 1, 2, 4)):
        with pytest.raises(TypeError, match=r"hx must be a tuple \(h_0, c_0\)"):
            el(ember.zeros(3, 2, 3), hx)


@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_dynamic_rnn_from_a_bias_free_layer_raises_as_torch(dtype):
    for mode in ("LSTM", "GRU"):
        t = torch.nn.Sequential(getattr(torch.nn, mode)(3, 2, bias=False))
        with pytest.raises(AssertionError, match="mod.bias must be True"):
            tq.quantize_dynamic(t, dtype=getattr(torch, dtype))
        e = ember.nn.Sequential(getattr(ember.nn, mode)(3, 2, bias=False))
        with pytest.raises(ValueError, match=f"dynamic quantized {mode}: .*bias=True"):
            eq.quantize_dynamic(e, dtype=getattr(ember, dtype))
