"""linalg.tensorinv / tensorsolve (against PyTorch and finite differences) and the LDLᵀ
factorization ldl_factor / ldl_factor_ex / ldl_solve (LAPACK's compact form and pivots,
exactly as PyTorch returns them; no derivative, as in PyTorch)."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import Arg, OpCase, S, arg, op_tests


def _well_conditioned(*shape):  # a random matrix plus a multiple of the identity, reshaped
    return Arg(shape, low=-0.5, high=0.5)


def _shift(x, n):
    return x + 3 * x.new_tensor(np.eye(n)).reshape(x.shape)


CASES = [
    OpCase("tensorinv", lambda a: ember.linalg.tensorinv(_shift(a, 4), ind=2),
           lambda a: torch.linalg.tensorinv(_shift(a, 4), ind=2),
           [S(_well_conditioned(2, 2, 4))]),
    OpCase("tensorinv_ind1", lambda a: ember.linalg.tensorinv(_shift(a, 4), ind=1),
           lambda a: torch.linalg.tensorinv(_shift(a, 4), ind=1),
           [S(_well_conditioned(4, 2, 2))], gradgrad=False),
    OpCase("tensorsolve", lambda a, b: ember.linalg.tensorsolve(_shift(a, 6), b),
           lambda a, b: torch.linalg.tensorsolve(_shift(a, 6), b),
           [S(_well_conditioned(2, 3, 6), arg(2, 3))]),
    OpCase("tensorsolve_dims",
           lambda a, b: ember.linalg.tensorsolve(_shift(a, 6).permute(2, 0, 1), b, dims=(0,)),
           lambda a, b: torch.linalg.tensorsolve(_shift(a, 6).permute(2, 0, 1), b, dims=(0,)),
           [S(_well_conditioned(6, 3, 2), arg(6))], gradgrad=False),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_tensorinv_tensorsolve_errors():
    with pytest.raises(ValueError, match="strictly positive integer for 'ind', but got 0"):
        ember.linalg.tensorinv(ember.zeros(4, 2, 2), ind=0)
    with pytest.raises(ember.ShapeError, match="requirement prod.A.shape.ind:.. == "
                       "prod.A.shape.:ind.., but got 12 != 2"):
        ember.linalg.tensorinv(ember.zeros(2, 3, 4), ind=1)
    with pytest.raises(ember.ShapeError, match="prod.A.shape.B.ndim:.. = 18, prod.A.shape"
                       ".:B.ndim.. = 2 and B.numel.. = 6"):
        ember.linalg.tensorsolve(ember.zeros(2, 3, 6), ember.zeros(6))
    with pytest.raises(ember.ShapeError, match="= 6, prod.A.shape.:B.ndim.. = 8"):
        ember.linalg.tensorsolve(ember.zeros(2, 4, 6), ember.zeros(6, 1))
    with pytest.raises(ember.DTypeError, match="tensorinv: expected a float32 or float64"):
        ember.linalg.tensorinv(ember.zeros(2, 2, dtype=ember.int64), ind=1)
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.tensorinv(ember.zeros(2, 2, 4))


def _symmetric(rng, shape, small_diagonal, dtype="float64", hermitian=False):
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    a = a + np.swapaxes(a.conj() if hermitian else a, -1, -2)
    if small_diagonal:  # pushes Bunch-Kaufman to 2×2 pivots
        n = shape[-1]
        a[..., np.arange(n), np.arange(n)] *= 0.01
    return a.astype(dtype)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
@pytest.mark.parametrize("dtype, hermitian", [("float64", False), ("float32", False),
                                              ("complex128", False), ("complex128", True),
                                              ("complex64", True)])
def test_ldl_matches_torch(n, dtype, hermitian):
    rng = np.random.default_rng(n)
    tol = 1e-10 if dtype.endswith("128") or dtype == "float64" else 1e-4
    saw_block = False
    for small in (False, True):
        a = _symmetric(rng, (3, n, n), small, dtype, hermitian)
        b = _symmetric(rng, (3, n, 2), False, dtype) if n == 2 else \
            rng.standard_normal((3, n, 2)).astype(dtype)
        ld, piv = ember.linalg.ldl_factor(ember.tensor(a), hermitian=hermitian)
        tld, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian)
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
        assert piv.dtype is ember.int32 and ld.dtype.name == dtype
        np.testing.assert_allclose(ld.numpy(), tld.numpy(), rtol=tol, atol=tol)
        x = ember.linalg.ldl_solve(ld, piv, ember.tensor(b), hermitian=hermitian)
        tx = torch.linalg.ldl_solve(tld, tpiv, torch.tensor(b), hermitian=hermitian)
        np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=10 * tol, atol=10 * tol)
        saw_block |= bool((piv.numpy() < 0).any())
    assert saw_block or n == 1


def test_hermitian_ldl_ignores_the_imaginary_part_of_the_diagonal_as_torch():
    a = _symmetric(np.random.default_rng(5), (5, 5), True, "complex128", hermitian=True)
    a[np.arange(5), np.arange(5)] += 3j
    ld, piv = ember.linalg.ldl_factor(ember.tensor(a), hermitian=True)
    tld, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=True)
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_allclose(ld.numpy(), tld.numpy(), atol=1e-12)
    assert not ld.numpy().diagonal().imag.any()


def test_ldl_reads_the_lower_triangle_and_broadcasts():
    rng = np.random.default_rng(0)
    a = _symmetric(rng, (4, 4), True)
    upper_garbage = a + np.triu(rng.standard_normal((4, 4)), 1)
    ld, piv = ember.linalg.ldl_factor(ember.tensor(upper_garbage), hermitian=True)
    ref, _ = ember.linalg.ldl_factor(ember.tensor(a))
    np.testing.assert_array_equal(ld.numpy(), ref.numpy())
    b = rng.standard_normal((2, 1, 4, 3))  # batch dims broadcast against the factor's
    x = ember.linalg.ldl_solve(ld, piv, ember.tensor(b))
    assert x.shape == (2, 1, 4, 3)
    np.testing.assert_allclose(np.einsum("ij,abjk->abik", a, x.numpy()), b, atol=1e-10)


def test_ldl_singular_errors_and_no_derivative():
    out = ember.linalg.ldl_factor_ex(ember.zeros(2, 3, 3))
    ref = torch.linalg.ldl_factor_ex(torch.zeros(2, 3, 3))
    np.testing.assert_array_equal(out.info.numpy(), ref.info.numpy())
    np.testing.assert_array_equal(out.pivots.numpy(), ref.pivots.numpy())
    with pytest.raises(ember.linalg.LinAlgError, match="ldl_factor: .Batch element 0.: .* "
                       "block 1 is exactly singular"):
        ember.linalg.ldl_factor(ember.zeros(2, 3, 3))
    with pytest.raises(ember.linalg.LinAlgError, match="ldl_factor_ex"):
        ember.linalg.ldl_factor_ex(ember.zeros(3, 3), check_errors=True)
    with pytest.raises(ember.ShapeError, match="square matrices"):
        ember.linalg.ldl_factor(ember.zeros(2, 3))
    ld, piv = ember.linalg.ldl_factor(ember.eye(2))
    with pytest.raises(ember.ShapeError, match="B must be a batch of matrices with 2 rows"):
        ember.linalg.ldl_solve(ld, piv, ember.ones(3, 1))
    with pytest.raises(ember.ShapeError, match=r"pivots must have shape \(\*, 2\)"):
        ember.linalg.ldl_solve(ld, piv[:1], ember.ones(2, 1))  # (int64 ones pass, as torch's)
    a = ember.eye(2, dtype=ember.float64).requires_grad_()
    with pytest.raises(ember.GradError, match="ldl_factor: it has no derivative"):
        ember.linalg.ldl_factor(a).LD.sum().backward()


def test_ldl_solve_batches_of_all_three_must_broadcast():
    # (LD~pivots and LD~B broadcast but pivots~B do not: NumPy's ValueError in an OpError)
    ld, piv = ember.linalg.ldl_factor(ember.eye(3, dtype=ember.float64))
    with pytest.raises(ember.ShapeError, match=r"ldl_solve: the batch dims of LD \(1, 3, 3\) "
                       r"float64, pivots \(3, 3\) int32 and B \(4, 3, 2\) float64 do not"):
        ember.linalg.ldl_solve(ld.expand(1, 3, 3), piv.expand(3, 3),
                               ember.ones(4, 3, 2, dtype=ember.float64))


def test_ldl_under_vmap():
    rng = np.random.default_rng(1)
    a = ember.tensor(_symmetric(rng, (3, 4, 4), True))
    b = ember.tensor(rng.standard_normal((2, 4, 1)))
    ld, piv = ember.linalg.ldl_factor(a)
    vld, vpiv = ember.vmap(ember.linalg.ldl_factor)(a)
    np.testing.assert_array_equal(vpiv.numpy(), piv.numpy())
    x = ember.vmap(lambda f, p: ember.linalg.ldl_solve(f, p, b))(ld, piv)  # (3, 2, 4, 1)
    np.testing.assert_allclose(x.numpy(), ember.linalg.ldl_solve(ld.unsqueeze(1),
                                                                piv.unsqueeze(1), b).numpy())


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_ldl_of_empty_matrices_as_torch(shape):
    ld, piv = ember.linalg.ldl_factor(ember.zeros(*shape))
    tld, tpiv = torch.linalg.ldl_factor(torch.zeros(*shape))
    assert ld.shape == tuple(tld.shape) and piv.shape == tuple(tpiv.shape)
    assert piv.dtype is ember.int32
    b = ember.zeros(*shape[:-1], 2)
    x = ember.linalg.ldl_solve(ld, piv, b)
    assert x.shape == tuple(torch.linalg.ldl_solve(tld, tpiv, torch.zeros(*shape[:-1], 2)).shape)
