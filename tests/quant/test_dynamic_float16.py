"""quantize_dynamic with dtype=float16 (float16 weights for Linear, LSTM, GRU) and quint8
(per-row tables for Embedding, EmbeddingBag), against torch.ao.quantization."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same

_RNG = np.random.default_rng(0)


def _quantized_pair(build, dtype="float16", spec=None):
    t, e = build(torch.nn), build(ember.nn)
    copy_weights(t, e)
    t_spec = None if spec is None else {getattr(torch.nn, n) for n in spec}
    e_spec = None if spec is None else {getattr(ember.nn, n) for n in spec}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (tq.quantize_dynamic(t, t_spec, dtype=getattr(torch, dtype)),
                eq.quantize_dynamic(e, e_spec, dtype=getattr(ember, dtype)))


def test_float16_linear_equals_torch():
    def build(nn):
        return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3, bias=False))
    qt, qe = _quantized_pair(build)
    want = "DynamicQuantizedLinear(in_features=6, out_features=5, dtype=ember.float16)"
    assert repr(qe[0]) == want
    assert "dtype=torch.float16" in repr(qt[0])
    same(qe[0].weight(), qt[0].weight())  # (float16 values, widened)
    x = _RNG.normal(size=(4, 3, 6)).astype(np.float32)
    np.testing.assert_allclose(qe(ember.tensor(x)).numpy(), qt(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-7)
    fresh = _quantized_pair(build)[1]
    fresh.load_state_dict(qe.state_dict())
    same(fresh(ember.tensor(x)), qe(ember.tensor(x)))


def test_float16_weights_saturate_and_round_like_torch():
    t, e = torch.nn.Linear(3, 2), ember.nn.Linear(3, 2)
    w = np.array([[1e6, 1e-7, 0.1], [-7e4, 3.14159, 2.0 ** -20]], np.float32)
    e.weight.data[...] = ember.tensor(w)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = tq.quantize_dynamic(torch.nn.Sequential(t), dtype=torch.float16)
    with pytest.warns(UserWarning, match="float16 range"):
        qe = eq.quantize_dynamic(ember.nn.Sequential(e), dtype=ember.float16)
    same(qe[0].weight(), qt[0].weight())


def test_float16_linear_relu():
    t = torch.ao.nn.intrinsic.LinearReLU(torch.nn.Linear(4, 3), torch.nn.ReLU())
    e = ember.ao.nn.intrinsic.LinearReLU(ember.nn.Linear(4, 3), ember.nn.ReLU())
    copy_weights(t, e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = tq.quantize_dynamic(torch.nn.Sequential(t), {type(t)}, dtype=torch.float16)
    qe = eq.quantize_dynamic(ember.nn.Sequential(e), {type(e)}, dtype=ember.float16)
    x = _RNG.normal(size=(5, 4)).astype(np.float32)
    out = qe(ember.tensor(x)).numpy()
    assert (out >= 0).all() and (out == 0).any()
    np.testing.assert_allclose(out, qt(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_float16_recurrent_layers_equal_torch(mode):
    def build(nn):
        return nn.Sequential(getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True,
                                               batch_first=True))
    qt, qe = _quantized_pair(build)
    assert qe[0].dtype is ember.float16
    assert repr(qe[0]) == repr(qt[0])  # (no dtype, as torch 2.13's)
    x = _RNG.normal(size=(2, 5, 3)).astype(np.float32)
    (ot, st), (oe, se) = qt[0](torch.tensor(x)), qe[0](ember.tensor(x))
    np.testing.assert_allclose(oe.numpy(), ot.detach().numpy(), atol=2e-6)
    for a, b in zip(se if mode == "LSTM" else [se], st if mode == "LSTM" else [st]):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), atol=2e-6)
    state = qe.state_dict()
    assert state["0.weight_hh_l1_reverse"].dtype is ember.float16
    fresh = _quantized_pair(build)[1]
    fresh.load_state_dict(state)
    same(fresh[0](ember.tensor(x))[0], oe)


def test_quint8_quantizes_embedding_tables_like_torch():
    def build(nn):
        return nn.Sequential(nn.Embedding(7, 4), nn.Linear(4, 2))
    qt, qe = _quantized_pair(build, "quint8")
    assert type(qe[0]).__name__ == "Embedding" and type(qe[1]) is ember.nn.Linear
    idx = np.array([[0, 6, 3], [2, 2, 1]])
    same(qe[0](ember.tensor(idx)), qt[0](torch.tensor(idx)))
    qt, qe = _quantized_pair(lambda nn: nn.Sequential(nn.EmbeddingBag(7, 4, mode="sum")), "quint8",
                             ["EmbeddingBag"])
    same(qe[0](ember.tensor(idx)), qt[0](torch.tensor(idx)))


def test_unknown_dtypes_raise():
    with pytest.raises(ValueError, match="default settings for ember.qint32"):
        eq.quantize_dynamic(ember.nn.Sequential(ember.nn.Linear(2, 2)), dtype=ember.qint32)
    with pytest.raises(ValueError, match="qint8 or ember.float16"):
        ember.ao.nn.quantized.dynamic.Linear(2, 2, dtype=ember.quint8)
