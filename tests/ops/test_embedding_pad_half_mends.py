"""Half-precision gradients of reflect/replicate/circular padding sum in torch's order and
dtype, bit for bit; full refuses a NumPy array fill as torch does. (Half embedding gradients
stay summed in float32, on purpose: tests/nn/test_functional_sweep_fixes.py.)"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

HALVES = ["float16", "bfloat16"]


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
