"""Half-precision gradients of embedding and of reflect/replicate/circular padding sum in
torch's order and dtype, bit for bit; full refuses a NumPy array fill as torch does."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

HALVES = ["float16", "bfloat16"]


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("dim,freq,pad", [(3, False, None), (3, True, None), (40, True, 1),
                                          (33, False, 0), (70, True, None)])
def test_half_embedding_grad_as_torch(dtype, dim, freq, pad):
    rng = np.random.default_rng(dim + freq)
    idx = rng.integers(0, 4, size=150)
    g = rng.standard_normal((150, dim)) * 50
    tw = torch.zeros(4, dim, dtype=getattr(torch, dtype), requires_grad=True)
    TF.embedding(torch.tensor(idx), tw, padding_idx=pad, scale_grad_by_freq=freq).backward(
        torch.tensor(g).to(tw.dtype))
    ew = ember.zeros(4, dim, dtype=getattr(ember, dtype)).requires_grad_()
    EF.embedding(ember.tensor(idx), ew, padding_idx=pad, scale_grad_by_freq=freq).backward(
        ember.tensor(g).to(ew.dtype))
    assert np.array_equal(ew.grad.float().numpy(), tw.grad.float().numpy())


def test_bfloat16_embedding_grad_stalls_as_torch():
    w = ember.zeros(2, 3, dtype=ember.bfloat16).requires_grad_()
    EF.embedding(ember.zeros(4096, dtype=ember.int64), w).backward(
        ember.ones(4096, 3, dtype=ember.bfloat16))
    assert w.grad[0].tolist() == [256.0] * 3  # (torch's running bfloat16 sum)


@pytest.mark.parametrize("dtype", [*HALVES, "float32"])
@pytest.mark.parametrize("mode,shape,pads", [
    ("reflect", (5,), (3, 2)), ("reflect", (4, 5), (2, 3, 1, 3)),
    ("reflect", (3, 4, 5), (1, 2, -1, 2, 2, -1)), ("replicate", (4,), (5, 6)),
    ("replicate", (3, 4), (4, 0, 2, 5)), ("replicate", (3, 3, 4), (2, 2, 3, 1, -1, 2)),
    ("circular", (5,), (4, 3)), ("circular", (4, 5), (3, 4, 2, 3)),
    ("circular", (3, 4, 5), (2, -1, 3, 2, 1, 2)), ("circular", (4, 6), (-2, 3, 2, 2))])
def test_pad_grad_as_torch(dtype, mode, shape, pads):
    if dtype == "float32" and mode != "circular":
        pytest.skip("float32 reflect/replicate keep the slab fold (last-bit differences)")
    rng = np.random.default_rng(len(shape) + sum(pads))
    x = rng.standard_normal((2, 3, *shape))
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    to = TF.pad(tx, pads, mode=mode)
    g = rng.standard_normal(to.shape) * 30
    to.backward(torch.tensor(g).to(tx.dtype))
    ex = ember.tensor(x).to(getattr(ember, dtype)).requires_grad_()
    EF.pad(ex, pads, mode=mode).backward(ember.tensor(g).to(ex.dtype))
    assert np.array_equal(ex.grad.float().numpy(), tx.grad.float().numpy())


@pytest.mark.parametrize("fill", [np.array([2.5]), np.array(2.5), np.array([[1]])])
@pytest.mark.parametrize("make", [
    lambda m, f: m.full((2,), f), lambda m, f: m.full_like(m.zeros(2), f),
    lambda m, f: m.zeros(2).new_full((2,), f)])
def test_full_refuses_ndarray_fill_as_torch(make, fill):
    with pytest.raises(TypeError):
        make(torch, fill)
    with pytest.raises(TypeError, match="fill_value.*numpy.ndarray"):
        make(ember, fill)


def test_full_takes_numpy_scalar_fill_as_torch():
    assert ember.full((2,), np.float64(2.5)).tolist() == torch.full((2,), np.float64(2.5)).tolist()
