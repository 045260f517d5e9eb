"""4-bit (quint4x2) embedding tables: the observer, the QAT fake quantizer, the quantized
EmbeddingBag (values, packed bytes, sums) and quantize_dynamic, against torch.ao.quantization."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same

_RNG = np.random.default_rng(0)


def _packed(q):
    """PyTorch's quint4x2 layout: the values in order, two a byte, the first in the low
    nibble."""
    q = q.astype(np.uint8).reshape(-1)
    q = np.pad(q, (0, q.size % 2))
    return q[0::2] | (q[1::2] << 4)


def test_observer_and_fake_quantizer_choose_torchs_qparams():
    for _ in range(3):
        w = (_RNG.normal(size=(6, 5)) * 2 + _RNG.normal()).astype(np.float32)
        t, e = tq.default_float_qparams_observer_4bit(), eq.default_float_qparams_observer_4bit()
        t(torch.tensor(w)), e(ember.tensor(w))
        assert (e.quant_min, e.quant_max, e.dtype) == (0, 15, ember.quint4x2)
        for a, b in zip(e.calculate_qparams(), t.calculate_qparams()):
            same(a, b)
        t, e = tq.default_embedding_fake_quant_4bit(), eq.default_embedding_fake_quant_4bit()
        same(e(ember.tensor(w)), t(torch.tensor(w)))
        for a, b in zip(e.calculate_qparams(), t.calculate_qparams()):
            same(a, b)


@pytest.mark.parametrize("dim", [6, 5])
def test_quantized_embedding_bag_equals_torch(dim):
    def build(nn):
        return nn.Sequential(nn.EmbeddingBag(9, dim, mode="sum"))
    t, e = build(torch.nn), build(ember.nn)
    copy_weights(t, e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = tq.quantize_dynamic(t, dtype=torch.quint4x2)
    qe = eq.quantize_dynamic(e, dtype=ember.quint4x2)
    tw, ew = qt[0].weight(), qe[0].weight()
    assert ew.dtype is ember.quint4x2 and ew.int_repr().numpy().max() <= 15
    packed = _packed(ew.int_repr().numpy())  # (PyTorch's storage may have spare bytes)
    np.testing.assert_array_equal(packed, tw.int_repr().numpy()[:packed.size])
    same(ew.q_per_channel_scales(), tw.q_per_channel_scales())
    same(ew.q_per_channel_zero_points(), tw.q_per_channel_zero_points())
    idx, offsets = np.array([0, 8, 3, 3, 5, 1, 7]), np.array([0, 2, 2, 5])
    if dim % 2:  # (PyTorch's 4-bit bags of odd width return dim + 1 garbled columns)
        assert tuple(qe[0](ember.tensor(idx), ember.tensor(offsets)).shape) == (4, dim)
        return
    psw = _RNG.normal(size=idx.size).astype(np.float32)
    same(qe[0](ember.tensor(idx), ember.tensor(offsets)),
         qt[0](torch.tensor(idx), torch.tensor(offsets)))
    same(qe[0](ember.tensor(idx), ember.tensor(offsets), ember.tensor(psw)),
         qt[0](torch.tensor(idx), torch.tensor(offsets), torch.tensor(psw)))
    same(qe[0](ember.tensor(idx[:6].reshape(2, 3))), qt[0](torch.tensor(idx[:6].reshape(2, 3))))
    fresh = eq.quantize_dynamic(build(ember.nn), dtype=ember.quint4x2)
    fresh.load_state_dict(qe.state_dict())
    same(fresh[0](ember.tensor(idx), ember.tensor(offsets)),
         qe[0](ember.tensor(idx), ember.tensor(offsets)))


def test_qat_4bit_bag_converts_like_torch():
    t, e = torch.nn.EmbeddingBag(8, 4, mode="sum"), ember.nn.EmbeddingBag(8, 4, mode="sum")
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_embedding_qat_qconfig_4bit, \
        eq.default_embedding_qat_qconfig_4bit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tp = tq.prepare_qat(torch.nn.Sequential(t).train(),
                            mapping=tq.get_embedding_qat_module_mappings())
        tc = tq.convert(tp.eval(), mapping=tq.get_embedding_static_quant_module_mappings())
    ep = eq.prepare_qat(ember.nn.Sequential(e).train(),
                        mapping=eq.get_embedding_qat_module_mappings())
    idx = np.array([[1, 2, 7], [0, 0, 3]])
    same(ep(ember.tensor(idx)), tp(torch.tensor(idx)))
    ec = eq.convert(ep.eval(), mapping=eq.get_embedding_static_quant_module_mappings())
    assert ec[0].weight().dtype is ember.quint4x2
    same(ec(ember.tensor(idx)), tc(torch.tensor(idx)))


def test_4bit_plain_embedding_raises():  # (PyTorch's builds one whose lookup fails)
    with pytest.raises(ValueError, match="use an EmbeddingBag"):
        ember.ao.nn.quantized.Embedding(4, 2, dtype=ember.quint4x2)
    m = ember.nn.Sequential(ember.nn.Embedding(4, 2))
    with pytest.raises(ValueError, match="EmbeddingBag"):
        eq.quantize_dynamic(m, {ember.nn.Embedding}, dtype=ember.quint4x2)


def test_4bit_bag_with_include_last_offset_needs_the_last_offset_at_the_end_as_torch():
    def build(nn):
        return nn.Sequential(nn.EmbeddingBag(6, 4, mode="sum", include_last_offset=True))
    t, e = build(torch.nn), build(ember.nn)
    copy_weights(t, e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = tq.quantize_dynamic(t, dtype=torch.quint4x2)
    qe = eq.quantize_dynamic(e, dtype=ember.quint4x2)
    idx = np.array([0, 5, 3, 3, 1])
    same(qe[0](ember.tensor(idx), ember.tensor([0, 2, 5])),
         qt[0](torch.tensor(idx), torch.tensor([0, 2, 5])))
    for offsets in ([0, 2, 4], [0, 2]):
        with pytest.raises(RuntimeError, match="last offset value should be the size"):
            qt[0](torch.tensor(idx), torch.tensor(offsets))
        with pytest.raises(ValueError, match="the last offset must be 5.*4-bit"):
            qe[0](ember.tensor(idx), ember.tensor(offsets))
