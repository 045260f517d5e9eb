"""cumsum and cumprod of long float32 rows: their error stays within a small factor of
PyTorch's (which accumulates float32 in float64 on the CPU), against a float64 reference."""

import numpy as np
import pytest
import torch

import ember


def _relative_error(got, exact):
    return float(np.max(np.abs(np.asarray(got, np.float64) - exact)) / np.max(np.abs(exact)))


def _inputs(kind, n):
    r = np.random.RandomState(0)
    if kind == "offset":  # large offset + noise: float32 running sums lose it step by step
        return (1e4 + r.randn(n)).astype(np.float32)
    if kind == "near_one":  # a product that stays finite over n steps
        return (1 + r.randn(n) / (10 * np.sqrt(n))).astype(np.float32)
    return r.randn(n).astype(np.float32)


@pytest.mark.parametrize("op, kind", [("cumsum", "offset"), ("cumsum", "normal"),
                                      ("cumprod", "near_one")])
def test_long_float32_scan_is_as_accurate_as_torch(op, kind):
    a = _inputs(kind, 100_000)
    exact = getattr(np, op)(a.astype(np.float64))
    ours = _relative_error(getattr(ember, op)(ember.tensor(a), 0).numpy(), exact)
    theirs = _relative_error(getattr(torch, op)(torch.from_numpy(a), 0).numpy(), exact)
    assert ours <= 2 * theirs + 1e-7  # (it was 7e-4 against torch's 3e-8 for cumsum, offset)


def test_cumsum_gradient_is_a_long_float32_scan_too():
    a = _inputs("offset", 100_000)
    x = ember.tensor(a, requires_grad=True)
    x.cumsum(0).backward(ember.tensor(a))  # the vjp: a cumsum from the end
    exact = np.cumsum(a.astype(np.float64)[::-1])[::-1]
    t = torch.from_numpy(a).requires_grad_()
    t.cumsum(0).backward(torch.from_numpy(a))
    assert _relative_error(x.grad.numpy(), exact) <= 2 * _relative_error(t.grad.numpy(),
                                                                         exact) + 1e-7


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64"])
def test_other_dtypes_keep_their_dtype_and_match_torch(dtype):
    a = np.random.RandomState(1).randn(4, 300)
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    x = ember.tensor(a).to(getattr(ember, dtype))
    for op in ("cumsum", "cumprod"):
        got, want = getattr(ember, op)(x, 1), getattr(torch, op)(t, 1)
        assert got.dtype is getattr(ember, dtype)
        np.testing.assert_allclose(got.to(ember.complex128).numpy(),
                                   want.to(torch.complex128).numpy(), rtol=1e-6, atol=0)
