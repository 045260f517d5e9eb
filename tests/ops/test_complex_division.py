"""Complex division ``a / z`` bit for bit as PyTorch 2.13's CPU kernel (c10's scaled division
with fused multiply-adds; :mod:`ember.ops.complex_reciprocal`)."""

import numpy as np
import pytest
import torch

import ember
from ember.backend import compiled
from ember.ops.complex_reciprocal import _in_loop, _in_passes

_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, 1e308, 1e-310, 2.5, -1.0,
          1e30]


def _same(mine, ref):
    """Equal bits, or NaN where PyTorch has NaN (payloads aside), in both parts."""
    assert mine.shape == ref.shape and mine.dtype == ref.dtype
    a, b = (np.stack([x.real, x.imag]) for x in (mine, ref))
    assert np.all((a == b) & (np.signbit(a) == np.signbit(b)) | (np.isnan(a) & np.isnan(b)))


def _random(rng, shape, dtype):
    top = 30 if dtype == "complex64" else 200
    with np.errstate(all="ignore"):
        return (rng.standard_normal(shape + (2,)) * 10.0 ** rng.integers(-top, top, shape + (2,))
                ).view(np.complex128)[..., 0].astype(dtype)


def _cases(dtype):
    """(numerator, divisor, how to divide) of every layout PyTorch loops over differently."""
    rng = np.random.default_rng(583)
    edges = np.array([complex(p, q) for p in _EDGES for q in _EDGES], dtype)
    real = "float32" if dtype == "complex64" else "float64"
    r = lambda *shape: _random(rng, shape, dtype)  # noqa: E731
    div = lambda x, y: x / y  # noqa: E731
    yield np.repeat(edges, edges.size), np.tile(edges, edges.size), div
    for n in (1, 7, 16, 17, 1001):
        yield r(n), r(n), div
    yield r(), r(), div  # 0-d
    yield r(99), r(99), lambda x, y: x[::2] / y[::2]
    yield r(5, 7), r(5, 7), lambda x, y: x.T / y.T
    yield r(5, 7), r(7, 5), lambda x, y: x.T / y
    yield r(6, 5), r(5), div
    yield r(6, 5), r(6, 1), div
    yield r(3, 1), r(1, 9), div
    yield r(9), r(), div
    yield r(), r(9), div
    yield r(3, 4, 5), r(4, 5), lambda x, y: x.div(y)
    yield r(11).real.astype(real), r(11), div
    yield r(11), r(11).real.astype(real), div
    yield r(11), r(11), lambda x, y: x / 3.7
    yield r(11), r(11), lambda x, y: x / (2 - 3j)
    yield r(7).real.astype("float32"), r(7).astype("complex64"), div


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_division_bits_as_torch(dtype, numba):
    """``a / z``, ``div``, mixes with real tensors and numbers, broadcasting, 0-d, strided and
    transposed operands: PyTorch's bits, at 0, -0, inf, nan, huge, tiny and subnormal parts too
    (NumPy's formula was an ulp off in ~1/5 of values; a complex64 quotient that ends an odd
    loop of PyTorch's rounds its numerators twice). In place as well."""
    if numba and not compiled.numba_enabled():
        pytest.skip("numba is off")
    saved = compiled.numba_enabled()
    try:
        compiled.use_numba(numba)
        for a, z, f in _cases(dtype):
            _same(f(ember.tensor(a), ember.tensor(z)).numpy(),
                  f(torch.from_numpy(a), torch.from_numpy(z)).numpy())
        a, z = _cases(dtype).__next__()[:2]
        e, t = ember.tensor(a[:7].copy()), torch.from_numpy(a[:7].copy())
        e /= ember.tensor(z[:7])
        t /= torch.from_numpy(z[:7])
        _same(e.numpy(), t.numpy())
    finally:
        compiled.use_numba(saved)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_division_loop_gives_the_passes_bits(dtype):
    """numba's loop and the NumPy passes agree bitwise (NaN payloads included) on random bit
    patterns, with the numerators rounded once and twice."""
    if not compiled.numba_enabled():
        pytest.skip("numba is off")
    ints = np.uint32 if dtype == "complex64" else np.uint64
    bits = np.random.default_rng(7).integers(0, np.iinfo(ints).max, size=(2, 20000),
                                             dtype=ints, endpoint=True)
    a, z = bits[0].view(dtype), bits[1].view(dtype)
    with np.errstate(all="ignore"):
        for fused in (True, False):
            assert np.array_equal(_in_loop(np, a, z, fused).view(ints),
                                  _in_passes(np, a, z, fused).view(ints))


def test_complex_division_gradient_as_torch():
    """The gradients of ``a / z`` are PyTorch's, and pass float64 finite differences."""
    rng = np.random.default_rng(3)
    a, z, w = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4)) for _ in range(3))
    ea, ez = ember.tensor(a, requires_grad=True), ember.tensor(z, requires_grad=True)
    ta, tz = torch.tensor(a, requires_grad=True), torch.tensor(z, requires_grad=True)
    (ea / ez * ember.tensor(w)).real.sum().backward()
    (ta / tz * torch.tensor(w)).real.sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ez.grad.numpy(), tz.grad.numpy(), rtol=1e-13, atol=1e-15)
    assert ember.autograd.gradcheck(ember.div, (ea.detach().requires_grad_(),
                                                ez.detach().requires_grad_()))
