"""``hermitian=True`` in linalg.pinv and linalg.matrix_rank reads only the lower triangle, as
PyTorch's (which calls eigh): a matrix that is not Hermitian is taken as the Hermitian one its
lower triangle makes (Ember took the SVD of the whole matrix: a rank-1 ``a bᵀ`` had rank 1,
torch's 3, and another pseudoinverse)."""

import numpy as np
import pytest
import torch

import ember


def _both(x):
    return ember.from_numpy(x.copy()), torch.from_numpy(x.copy())


def _close(mine, ref, tol=1e-10):
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().resolve_conj().numpy(),
                               rtol=tol, atol=tol)


def _not_hermitian(dtype, shape=(2, 3, 3), seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape[:-1]), rng.standard_normal(shape[:-1])
    if np.dtype(dtype).kind == "c":
        a, b = a + 1j * rng.standard_normal(a.shape), b - 1j * rng.standard_normal(b.shape)
    m = a[..., :, None] * b[..., None, :]  # rank 1, its lower triangle's Hermitian: rank 3
    return m.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("kw", [{}, {"atol": 0.5}, {"rtol": 0.3}, {"atol": 0.1, "rtol": 0.6}])
def test_pinv_and_matrix_rank_read_the_lower_triangle_as_torch(dtype, kw):
    e, t = _both(_not_hermitian(dtype))
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    _close(ember.linalg.pinv(e, hermitian=True, **kw), torch.linalg.pinv(t, hermitian=True, **kw),
           tol)
    rank = ember.linalg.matrix_rank(e, hermitian=True, **kw)
    assert rank.tolist() == torch.linalg.matrix_rank(t, hermitian=True, **kw).tolist()
    if not kw:
        assert rank.tolist() == [3, 3]  # (the SVD of the whole matrix said 1)


def test_hermitian_with_tensor_tolerances_and_empty_batches_as_torch():
    x = _not_hermitian("float64", (2, 3, 4, 4))
    atol = np.abs(np.random.default_rng(1).standard_normal((2, 3)))
    (e, t), (ea, ta) = _both(x), _both(atol)
    _close(ember.linalg.pinv(e, atol=ea, hermitian=True),
           torch.linalg.pinv(t, atol=ta, hermitian=True))
    _close(ember.linalg.matrix_rank(e, atol=ea, hermitian=True),
           torch.linalg.matrix_rank(t, atol=ta, hermitian=True))
    e, t = _both(np.zeros((2, 0, 0)))
    _close(ember.linalg.pinv(e, hermitian=True), torch.linalg.pinv(t, hermitian=True))
    _close(ember.linalg.matrix_rank(e, hermitian=True),
           torch.linalg.matrix_rank(t, hermitian=True))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_pinv_hermitian_gradients_as_torch(dtype):
    """torch's pinv backward (and forward-mode) formula, with the input as given and the
    lower triangle's pseudoinverse."""
    x = _not_hermitian(dtype)
    w = _not_hermitian(dtype, seed=1) + 0.5
    e, t = _both(x)
    e.requires_grad_(True), t.requires_grad_(True)
    (ember.linalg.pinv(e, hermitian=True) * ember.from_numpy(w)).sum().real.backward()
    (torch.linalg.pinv(t, hermitian=True) * torch.from_numpy(w)).sum().real.backward()
    _close(e.grad, t.grad, 1e-8)
    tangent = _not_hermitian(dtype, seed=2)
    _, mine = ember.func.jvp(lambda a: ember.linalg.pinv(a, hermitian=True), (e.detach(),),
                             (ember.from_numpy(tangent),))
    _, ref = torch.func.jvp(lambda a: torch.linalg.pinv(a, hermitian=True), (t.detach(),),
                            (torch.from_numpy(tangent),))
    _close(mine, ref, 1e-8)
