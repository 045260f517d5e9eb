"""Weight-only quantized Embedding and EmbeddingBag (quint8 rows with float scales and zero
points) against PyTorch: the same integers, scales and float outputs."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same


def _converted(make_t, make_e):
    torch.manual_seed(0)
    t, e = make_t(), make_e()
    copy_weights(t, e)
    t.qconfig = tq.float_qparams_weight_only_qconfig
    e.qconfig = eq.float_qparams_weight_only_qconfig
    return tq.convert(tq.prepare(t)), eq.convert(eq.prepare(e))


def test_quantized_embedding_equals_torch():
    tc, ec = _converted(lambda: torch.nn.Sequential(torch.nn.Embedding(40, 6)),
                        lambda: ember.nn.Sequential(ember.nn.Embedding(40, 6)))
    tw, ew = tc[0].weight(), ec[0].weight()
    assert ew.qscheme() is ember.per_channel_affine_float_qparams
    same(ew.int_repr(), tw.int_repr())
    same(ew.q_per_channel_scales(), tw.q_per_channel_scales())
    same(ew.q_per_channel_zero_points(), tw.q_per_channel_zero_points())
    same(ew.dequantize(), tw.dequantize())
    idx = np.random.default_rng(0).integers(0, 40, (3, 5))
    same(ec(ember.tensor(idx)), tc(torch.tensor(idx)))
    with pytest.raises(IndexError, match="index 40 is out of range for 40 embeddings"):
        ec(ember.tensor([1, 40]))


@pytest.mark.parametrize("weighted", [False, True])
def test_quantized_embedding_bag_equals_torch(weighted):
    kw = dict(mode="sum", include_last_offset=weighted)
    tc, ec = _converted(lambda: torch.nn.Sequential(torch.nn.EmbeddingBag(30, 5, **kw)),
                        lambda: ember.nn.Sequential(ember.nn.EmbeddingBag(30, 5, **kw)))
    assert type(ec[0]).__module__ == "ember.quant.modules.embedding_ops"
    tc, ec = tc[0], ec[0]
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 30, 11)
    offsets = np.array([0, 2, 2, 7, 11] if weighted else [0, 2, 2, 7])
    w = rng.uniform(0.5, 2, 11).astype(np.float32) if weighted else None
    t = tc(torch.tensor(idx), torch.tensor(offsets), None if w is None else torch.tensor(w))
    e = ec(ember.tensor(idx), ember.tensor(offsets), None if w is None else ember.tensor(w))
    same(e, t)
    idx2 = rng.integers(0, 30, (4, 3))
    if weighted:
        with pytest.raises(ValueError, match="2-D indices"):
            ec(ember.tensor(idx2))
    else:
        same(ec(ember.tensor(idx2)), tc(torch.tensor(idx2)))


def test_embedding_quantization_errors():
    bag = ember.nn.EmbeddingBag(5, 2)  # (mode='mean': PyTorch's quantized bag would sum)
    bag.qconfig = eq.float_qparams_weight_only_qconfig
    with pytest.raises(ValueError, match="only mode='sum'"):
        eq.convert(eq.prepare(ember.nn.Sequential(bag)))
    emb = ember.nn.Embedding(5, 2)
    emb.qconfig = eq.default_qconfig
    with pytest.raises(ValueError, match="float_qparams_weight_only_qconfig"):
        eq.convert(eq.prepare(ember.nn.Sequential(emb)))
    q = eq.convert(eq.prepare(_with_qconfig(ember.nn.Embedding(5, 2))))
    state = q.state_dict()
    fresh = eq.convert(eq.prepare(_with_qconfig(ember.nn.Embedding(5, 2))))
    fresh.load_state_dict(state)
    same(fresh(ember.tensor([0, 4])), q(ember.tensor([0, 4])))


def _with_qconfig(m):
    s = ember.nn.Sequential(m)
    s.qconfig = eq.float_qparams_weight_only_qconfig
    return s


def test_embedding_qat_trains_and_converts_like_torch():
    torch.manual_seed(0)
    t, e = torch.nn.Sequential(torch.nn.Embedding(20, 4)), ember.nn.Sequential(
        ember.nn.Embedding(20, 4))
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_embedding_qat_qconfig, eq.default_embedding_qat_qconfig
    tp = tq.prepare_qat(t.train(), mapping=tq.get_embedding_qat_module_mappings())
    ep = eq.prepare_qat(e.train(), mapping=eq.get_embedding_qat_module_mappings())
    assert type(ep[0]).__module__ == "ember.quant.modules.qat_embedding"
    idx = np.random.default_rng(3).integers(0, 20, (5, 2))
    same(ep(ember.tensor(idx)), tp(torch.tensor(idx)))
    same(ep[0].weight_fake_quant.zero_point, tp[0].weight_fake_quant.zero_point)
    # (PyTorch's convert strips the fake quantizer's observer before swapping the table, and
    # then fails: build its quantized table from the trained module directly)
    t_table = torch.ao.nn.quantized.Embedding.from_float(tp[0].eval())
    ec = eq.convert(ep.eval())
    assert type(ec[0]).__module__ == "ember.quant.modules.embedding_ops"
    same(ec(ember.tensor(idx)), t_table(torch.tensor(idx)))


def test_quantized_embedding_bag_offsets_edge_cases_like_torch():
    tc, ec = _converted(lambda: torch.nn.Sequential(
        torch.nn.EmbeddingBag(8, 3, mode="sum", include_last_offset=True)),
        lambda: ember.nn.Sequential(ember.nn.EmbeddingBag(8, 3, mode="sum",
                                                          include_last_offset=True)))
    tc, ec = tc[0], ec[0]
    idx = [1, 2, 4, 5, 0, 3]
    # include_last_offset: the last offset ends the last bag, the indices after it are unused
    same(ec(ember.tensor(idx), ember.tensor([0, 3, 4])),
         tc(torch.tensor(idx), torch.tensor([0, 3, 4])))
    with pytest.raises(ValueError, match="offsets must start at 0"):
        ec(ember.tensor(idx), ember.tensor([0, 3, 9]))
    with pytest.raises(ValueError, match="include_last_offset"):
        ec(ember.tensor(idx), ember.tensor([], dtype="int64"))
    ec.include_last_offset = tc.include_last_offset = False
    t = tc(torch.tensor(idx), torch.tensor([], dtype=torch.int64))  # no bags
    assert tuple(ec(ember.tensor(idx), ember.tensor([], dtype="int64")).shape) == tuple(t.shape)


def test_quantized_embedding_takes_1d_or_2d_indices_as_torch():
    _, ec = _converted(lambda: torch.nn.Sequential(torch.nn.Embedding(8, 3)),
                       lambda: ember.nn.Sequential(ember.nn.Embedding(8, 3)))
    for bad in (ember.tensor(3), ember.tensor([[[1, 2]]])):
        with pytest.raises(ValueError, match="1-D or 2-D indices"):
            ec(bad)
