"""Memory-efficient scaled_dot_product_attention: the blockwise path against the composite
and PyTorch (values, gradients, masks, causal, bfloat16), and peak memory linear in the
sequence length."""

import gc
import tracemalloc

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.ops import attention
from ember.ops.attention_blockwise import blockwise_attention

R = np.random.default_rng(0)


def _qkv(shape_q, shape_k, dtype=np.float64):
    ev = shape_k[-1] + 1
    return (R.standard_normal(shape_q).astype(dtype), R.standard_normal(shape_k).astype(dtype),
            R.standard_normal(shape_k[:-1] + (ev,)).astype(dtype))


MASKS = {
    None: lambda L, S: None,
    "causal": lambda L, S: "causal",
    "bool": lambda L, S: R.random((L, S)) > 0.3,
    "bool_dead_rows": lambda L, S: np.concatenate([np.zeros((1, S), bool),
                                                   R.random((L - 1, S)) > 0.3]),
    "add": lambda L, S: R.standard_normal((1, L, S)),
}


@pytest.mark.parametrize("mask_kind", list(MASKS))
@pytest.mark.parametrize("L,S", [(37, 37), (20, 45)])
def test_matches_composite_and_torch(mask_kind, L, S):
    qv, kv, vv = _qkv((2, 3, L, 8), (2, 3, S, 8))
    mv = MASKS[mask_kind](L, S)
    causal = isinstance(mv, str)
    mask_np = None if causal else mv
    outs, grads = [], []
    for blockwise in (True, False):
        q, k, v = (ember.tensor(a, requires_grad=True) for a in (qv, kv, vv))
        m = None if mask_np is None else ember.tensor(mask_np)
        if blockwise:
            o = blockwise_attention(q, k, v, m, causal, 0.3, block=16)
        else:
            o = F.scaled_dot_product_attention(q, k, v, m, is_causal=causal, scale=0.3)
        (o * o).sum().backward()
        outs.append(o.detach().numpy())
        grads.append([t.grad.numpy() for t in (q, k, v)])
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (qv, kv, vv))
    tm = None if mask_np is None else torch.tensor(mask_np)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, tm, is_causal=causal,
                                                          scale=0.3)
    (to * to).sum().backward()
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-12)
    rows = slice(1, None) if mask_kind == "bool_dead_rows" else slice(None)  # torch: NaN
    np.testing.assert_allclose(outs[0][..., rows, :], to.detach().numpy()[..., rows, :],
                               atol=1e-12)
    for a, b in zip(grads[0], grads[1]):
        np.testing.assert_allclose(a, b, atol=1e-10)
    if mask_kind != "bool_dead_rows":
        for a, t in zip(grads[0], (tq, tk, tv)):
            np.testing.assert_allclose(a, t.grad.numpy(), atol=1e-10)


def test_public_path_switches_and_gradgrad(monkeypatch):
    monkeypatch.setattr(attention, "MEMORY_EFFICIENT_MIN", 0)
    qv, kv, vv = _qkv((1, 2, 6, 4), (1, 2, 6, 4))
    q, k, v = (ember.tensor(a, requires_grad=True) for a in (qv, kv, vv))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert o._node.prim.name == "scaled_dot_product_attention"
    assert ember.autograd.gradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v))
    assert ember.autograd.gradgradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c), (q, k, v))
    # dropout keeps the composite
    o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert o._node.prim.name != "scaled_dot_product_attention"


def test_jvp_matches_finite_differences(monkeypatch):
    from ember.autograd.forward import jvp

    monkeypatch.setattr(attention, "MEMORY_EFFICIENT_MIN", 0)
    qv, kv, vv = _qkv((2, 5, 4), (2, 7, 4))
    ts = _qkv((2, 5, 4), (2, 7, 4))
    fn = lambda a, b, c: F.scaled_dot_product_attention(a, b, c)  # noqa: E731
    primals = tuple(ember.tensor(a) for a in (qv, kv, vv))
    _, d = jvp(fn, primals, tuple(ember.tensor(a) for a in ts))
    eps = 1e-6
    hi = fn(*(ember.tensor(a + eps * t) for a, t in zip((qv, kv, vv), ts)))
    lo = fn(*(ember.tensor(a - eps * t) for a, t in zip((qv, kv, vv), ts)))
    np.testing.assert_allclose(d.numpy(), ((hi - lo) / (2 * eps)).numpy(), atol=1e-6)


def test_bfloat16_and_autocast(monkeypatch):
    monkeypatch.setattr(attention, "MEMORY_EFFICIENT_MIN", 0)
    qv, kv, vv = _qkv((1, 2, 40, 8), (1, 2, 40, 8), np.float32)
    q, k, v = (ember.tensor(a, requires_grad=True) for a in (qv, kv, vv))
    with ember.autocast("cpu"):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert o.dtype is ember.bfloat16
    o.float().sum().backward()
    assert q.grad.dtype is ember.float32
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (qv, kv, vv)), is_causal=True)
    np.testing.assert_allclose(o.float().detach().numpy(), ref.numpy(), atol=3e-2)


def _peak(T, blockwise):
    qv = R.standard_normal((1, 2, T, 16)).astype(np.float32)
    q, k, v = (ember.tensor(qv, requires_grad=True) for _ in range(3))
    gc.collect()
    tracemalloc.start()
    if blockwise:
        o = blockwise_attention(q, k, v, None, True, 0.25, block=64)
    else:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o.sum().backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_peak_memory_grows_linearly(monkeypatch):
    monkeypatch.setattr(attention, "MEMORY_EFFICIENT_MIN", 1 << 60)
    small, big = _peak(256, True), _peak(1024, True)
    assert big < 4 * small * 1.3  # 4× the length: ≈4× the memory, not 16×
    naive = _peak(1024, False)
    assert big < naive / 4
