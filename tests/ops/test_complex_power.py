"""Complex ``a ** b`` bit for bit as PyTorch's pow (C's cpow, ``exp(b log a)`` with C's
complex product): NumPy's own shortcuts (a real integer exponent by repeated products, a zero
exponent as 1, a zero base as 0 or NaN) gave other values."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import assert_same_bits

_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-30, 1e30, 99.0, -99.0, 100.0, 2.5,
          np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_tensor_power_edges_as_torch(dtype):
    """0j ** 0j is NaN (was 1), 0j ** -1.5 inf+nanj (was nan+nanj), (inf+nanj) ** 4 inf+nanj:
    every pair of edge values to the bit."""
    g = np.array([complex(a, b) for a in _EDGES for b in _EDGES], dtype)
    a, b = (x.ravel() for x in np.meshgrid(g, g, indexing="ij"))
    assert_same_bits(ember.pow(ember.tensor(a), ember.tensor(b)),
          torch.pow(torch.from_numpy(a), torch.from_numpy(b)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", [4, -3, 7, 50, -99, 1.5, 0.25, 150, 1 + 1j, -1.5 + 0j])
def test_complex_power_of_real_exponents_as_torch(dtype, exponent):
    """z ** 4 (Python or tensor exponent) was NumPy's repeated product, ~all values an ulp
    or more off PyTorch's exp(4 log z)."""
    rng = np.random.default_rng(65)
    z = ((rng.normal(size=2000) + 1j * rng.normal(size=2000)) * 3).astype(dtype)
    z[:len(_EDGES)] = np.array(_EDGES, dtype)
    t, e = torch.from_numpy(z), ember.tensor(z)
    assert_same_bits(e ** exponent, t ** exponent)
    w = np.full(z.shape, exponent, dtype)
    assert_same_bits(e ** ember.tensor(w), t ** torch.from_numpy(w))


def test_complex_power_broadcast_and_mixed_as_torch():
    """An integer base against a broadcast complex exponent, 0-d operands, float_power."""
    base, w = np.array([0, 2, -3]), np.array([[-1 + 0j], [4 + 0j], [0j], [0.5 + 2j]])
    assert_same_bits(ember.pow(ember.tensor(base), ember.tensor(w)),
          torch.pow(torch.from_numpy(base), torch.from_numpy(w)))
    assert_same_bits(ember.float_power(ember.tensor(base), ember.tensor(w.astype(np.complex64))),
          torch.float_power(torch.from_numpy(base), torch.from_numpy(w.astype(np.complex64))))
    assert_same_bits(ember.tensor(0j) ** ember.tensor(0j), torch.tensor(0j) ** torch.tensor(0j))
    assert_same_bits(ember.pow(0, ember.tensor([-1 + 0j, 2j])),
                     torch.pow(0, torch.tensor([-1 + 0j, 2j])))


def test_complex_power_grad_as_torch():
    """The gradient of a real loss through z ** w with an integer-valued w (both inputs)."""
    z, w = np.array([1 + 2j, -1 + 0.5j, 0.3 - 2j]), np.array([3 + 0j, -2 + 0j, 4 + 0j])
    ez, ew = ember.tensor(z, requires_grad=True), ember.tensor(w, requires_grad=True)
    tz, tw = torch.tensor(z, requires_grad=True), torch.tensor(w, requires_grad=True)
    (ez ** ew).abs().sum().backward()
    (tz ** tw).abs().sum().backward()
    np.testing.assert_allclose(ez.grad.numpy(), tz.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
