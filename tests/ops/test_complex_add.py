"""Complex ``add``/``sub`` bit for bit as PyTorch's kernel: ``a + alpha·b`` with ``alpha·b``
a complex product even for ``alpha`` 1 (``(1+1j) + (inf+0j)`` is ``inf+nanj``, -0 parts may
turn +0), ``sub`` as ``a + (-alpha)·b``, ``number + z`` as ``z + number``."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import assert_same_bits

_EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 1e38, -3e38]
_GRID = np.array([complex(r, i) for r in _EDGES for i in _EDGES])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("call", [
    lambda m, x, y: x + y, lambda m, x, y: x - y, lambda m, x, y: x.add_(y),
    lambda m, x, y: x.__isub__(y), lambda m, x, y: m.add(x, y, alpha=2),
    lambda m, x, y: m.sub(x, y, alpha=2), lambda m, x, y: m.add(x, y, alpha=1.0),
    lambda m, x, y: m.sub(x, y, alpha=0.5 - 1j), lambda m, x, y: m.rsub(x, y),
    lambda m, x, y: x.real + y, lambda m, x, y: x - y.real,
    lambda m, x, y: x.reshape(10, 10, 10, 10)[:, :, :1, :1] + y.reshape(10, 10, 10, 10)[:1, :1],
    lambda m, x, y: x.reshape(100, 100).T - y.reshape(100, 100),
])
def test_complex_add_sub_edges_as_torch(dtype, call):
    """Every pair of edge values (inf, NaN, signed zeros) to the bit; ~45% differed before."""
    a, b = (x.ravel().astype(dtype) for x in np.meshgrid(_GRID, _GRID, indexing="ij"))
    assert_same_bits(call(ember, ember.tensor(a), ember.tensor(b)),
          call(torch, torch.from_numpy(a.copy()), torch.from_numpy(b.copy())))


@pytest.mark.parametrize("number", [np.inf, -np.inf, np.nan, 1e300, complex(0, np.inf),
                                    complex(-0.0, 1), -0.0, 2.5j])
@pytest.mark.parametrize("call", [lambda z, s: z + s, lambda z, s: s + z, lambda z, s: z - s,
                                  lambda z, s: s - z])
def test_complex_and_a_number_as_torch(number, call):
    """``inf + (1+1j)`` is inf+nanj in PyTorch (``z + inf``); ``inf - z`` is inf-1j."""
    z = _GRID.astype(np.complex64)
    assert_same_bits(call(ember.tensor(z), number), call(torch.from_numpy(z), number))


@pytest.mark.parametrize("alpha", [1, 2, 1j, 0.5 - 2j])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_complex_add_sub_gradients_and_nodes_as_torch(op, alpha):
    rng = np.random.default_rng(65)
    x, y = (rng.normal(size=s) + 1j * rng.normal(size=s) for s in ((3, 4), (4,)))
    w = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    ex, ey = ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    eo, to = getattr(ember, op)(ex, ey, alpha=alpha), getattr(torch, op)(tx, ty, alpha=alpha)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__ or \
        str(eo.grad_fn) == f"<{type(to.grad_fn).__name__}>"
    (eo * ember.tensor(w)).real.sum().backward()
    (to * torch.tensor(w)).real.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ey.grad.numpy(), ty.grad.numpy(), rtol=1e-12)
