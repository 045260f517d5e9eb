"""The LU family, the ``_ex`` variants, Cholesky solves, ``cond``, the SVD matrix norms and the
other composites of ember.linalg (linalg_lu.py, linalg_kernels.py, linalg_composite.py), and
singular inputs (det/slogdet gradients, solve_triangular, lstsq's driver fields) against
PyTorch and finite differences (see optable.py)."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import (
    Const,
    OpCase,
    S,
    arg,
    assert_same,
    op_tests,
    raises_like_torch,
    same_as_torch,
    tensor_in,
)
from tests.ops.test_linalg_decomp import dominant, row, spd

U = dict(low=-1.0, high=1.0)
INF = float("inf")


def _norm_times_inverse_norm(x, p):
    return torch.linalg.matrix_norm(x, p) * torch.linalg.matrix_norm(torch.linalg.inv(x), p)


CASES = [
    row("lu", lambda lib, x: lib.linalg.lu(x), [S(arg(3, 3)), S(arg(2, 3, 3))]),
    row("lu_wide", lambda lib, x: lib.linalg.lu(x), [S(arg(2, 4)), S(arg(2, 2, 3))]),
    row("lu_tall", lambda lib, x: lib.linalg.lu(x), [S(arg(4, 2)), S(arg(2, 3, 2))]),
    row("lu_factor_rect", lambda lib, x: lib.linalg.lu_factor(x).LU, [S(arg(3, 4)), S(arg(4, 3))]),
    row("lu_factor_ex", lambda lib, x: tuple(lib.linalg.lu_factor_ex(x)), [S(arg(3, 3))]),
    row("lu_unpack", lambda lib, x: lib.lu_unpack(*lib.linalg.lu_factor(x))[1:], [S(arg(3, 3))]),
    row("inv_ex", lambda lib, x: tuple(lib.linalg.inv_ex(dominant(lib, x))),
        [S(arg(2, 3, 3, **U))]),
    row("solve_ex", lambda lib, a, b: tuple(lib.linalg.solve_ex(dominant(lib, a), b)),
        [S(arg(3, 3, **U), arg(3, 2)), S(arg(2, 3, 3, **U), arg(3))]),
    row("solve_ex_right", lambda lib, a, b: lib.linalg.solve_ex(dominant(lib, a), b,
                                                                left=False).result,
        [S(arg(3, 3, **U), arg(2, 3))]),
    row("cholesky_ex", lambda lib, x: tuple(lib.linalg.cholesky_ex(spd(lib, x))),
        [S(arg(3, 3)), S(arg(2, 3, 3))]),
    row("cholesky_ex_upper", lambda lib, x: lib.linalg.cholesky_ex(spd(lib, x), upper=True).L,
        [S(arg(3, 3))]),
    row("cholesky_solve", lambda lib, a, b: lib.cholesky_solve(b, lib.linalg.cholesky(spd(lib, a))),
        [S(arg(3, 3), arg(3, 2)), S(arg(2, 3, 3), arg(3, 1))]),
    row("cholesky_solve_upper",
        lambda lib, a, b: b.cholesky_solve(lib.linalg.cholesky(spd(lib, a), upper=True), True),
        [S(arg(3, 3), arg(2, 3, 2))]),
    row("cholesky_inverse", lambda lib, a: lib.cholesky_inverse(lib.linalg.cholesky(spd(lib, a))),
        [S(arg(3, 3)), S(arg(2, 3, 3))]),
    row("cholesky_inverse_upper",
        lambda lib, a: lib.linalg.cholesky(spd(lib, a), upper=True).cholesky_inverse(True),
        [S(arg(3, 3))]),
    row("cond", lambda lib, x: lib.linalg.cond(x), [S(arg(3, 3)), S(arg(2, 3, 2)), S(arg(2, 3))]),
    row("cond_-2", lambda lib, x: lib.linalg.cond(x, -2), [S(arg(3, 3)), S(arg(2, 3, 2))]),
    row("cond_nuc", lambda lib, x: lib.linalg.cond(dominant(lib, x), "nuc"), [S(arg(3, 3, **U))]),
    # PyTorch 2.13 cannot differentiate these (an in-place write in its cond): ‖A‖ ‖A⁻¹‖ instead
    *[OpCase(f"cond_{p}", lambda x, p=p: ember.linalg.cond(dominant(ember, x), p),
             lambda x, p=p: _norm_times_inverse_norm(dominant(torch, x), p),
             [S(arg(3, 3, **U)), S(arg(2, 3, 3, **U))]) for p in ("fro", INF, -INF, 1, -1)],
    *[row(f"matrix_norm_{p}", lambda lib, x, p=p: lib.linalg.matrix_norm(x, p),
          [S(arg(3, 4)), S(arg(2, 3, 2))]) for p in ("nuc", 2, -2)],
    row("matrix_norm_dims_keepdim",
        lambda lib, x: lib.linalg.matrix_norm(x, "nuc", dim=(0, 2), keepdim=True),
        [S(arg(3, 2, 4))]),
    row("norm_2", lambda lib, x: lib.linalg.norm(x, 2), [S(arg(3, 4))]),
    row("norm_nuc_dim", lambda lib, x: lib.linalg.norm(x, "nuc", dim=(-1, -2)), [S(arg(2, 3, 4))]),
    row("norm_vector_2", lambda lib, x: lib.linalg.norm(x, 2, dim=1), [S(arg(3, 4))]),
    row("diagonal", lambda lib, x: lib.linalg.diagonal(x, offset=1), [S(arg(2, 3, 4))]),
    row("diagonal_dims", lambda lib, x: lib.linalg.diagonal(x, dim1=0, dim2=2), [S(arg(3, 2, 3))]),
    row("vander", lambda lib, x: lib.linalg.vander(x), [S(arg(3)), S(arg(2, 4))]),
    row("vander_N", lambda lib, x: lib.linalg.vander(x, N=5), [S(arg(3))]),
    row("vander_zero", lambda lib, x: lib.linalg.vander(x, N=4),
        [S(Const(np.array([0.0, 2.0])))], grad=False),
    row("householder_product", lambda lib, a, t: lib.linalg.householder_product(a, t),
        [S(arg(4, 3), arg(2)), S(arg(2, 3, 3), arg(2, 3))]),
    row("householder_product_k0", lambda lib, a, t: lib.linalg.householder_product(a, t),
        [S(arg(3, 2), arg(0))], grad=False),
    row("det_singular_grad", lambda lib, x: lib.linalg.det(x @ x.mT), [S(arg(3, 2))]),
    row("solve_triangular_singular",
        lambda lib, a, b: lib.linalg.solve_triangular(a.triu(1), b, upper=True),
        [S(arg(3, 3), arg(3, 2))], grad=False),
    *[row(f"lstsq_{d}", lambda lib, a, b, d=d: tuple(lib.linalg.lstsq(a, b, driver=d)),
          [S(arg(4, 2), arg(4, 3)), S(arg(2, 4, 3), arg(2, 4, 1)), S(arg(4, 2), arg(4))])
      for d in ("gels", "gelsd", "gelss")],
    # gelsy has no residuals (PyTorch's empty one still requires grad: left out)
    row("lstsq_gelsy", lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gelsy")[::2],
        [S(arg(4, 2), arg(4, 3)), S(arg(3, 4), arg(3))]),
]

(test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp) = op_tests(CASES)


def _unused_grads(lib, fn, *leaves):
    """After ``fn(lib, *leaves).sum().backward()``: each leaf's ``.grad``, and whether
    ``autograd.grad`` without ``allow_unused`` raised for the first leaf."""
    fn(lib, *leaves).sum().backward()
    try:
        lib.autograd.grad(fn(lib, *leaves).sum(), leaves[:1])
        raised = False
    except (RuntimeError, ember.GradError):
        raised = True
    return [x.grad for x in leaves], raised


def test_householder_product_of_no_reflectors_is_in_the_graph_as_torch():
    # k = 0: [I; 0], still a result that needs a gradient, as PyTorch's, whose backward gives
    # x and tau no gradient (.grad None; it was zeros)
    for lib in (torch, ember):
        x = lib.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
        tau = lib.zeros(0, dtype=lib.float64, requires_grad=True)
        assert lib.linalg.householder_product(x, tau).requires_grad
        assert _unused_grads(lib, lambda L, x, t: L.linalg.householder_product(x, t), x, tau) == \
            ([None, None], True)
    for lib in (torch, ember):  # tau alone needing a gradient: the result needs one too
        tau = lib.zeros(0, dtype=lib.float64, requires_grad=True)
        assert lib.linalg.householder_product(lib.ones(3, 2, dtype=lib.float64), tau).requires_grad


# -- singular matrices -----------------------------------------------------------------------
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
BATCH = np.stack([SINGULAR, np.diag([2.0, 3.0, 4.0])])


@pytest.mark.parametrize("x", [SINGULAR, np.zeros((3, 3)), np.array([[1.0, 2.0], [2.0, 4.0]])])
def test_det_gradient_at_singular_matrices(x):
    # the cofactor matrix, finite; PyTorch gives it through its SVD formula (create_graph)
    e = ember.from_numpy(x.copy()).requires_grad_()
    t = torch.from_numpy(x.copy()).requires_grad_()
    (ge,) = ember.autograd.grad(ember.linalg.det(e), [e])
    (gt,) = torch.autograd.grad(torch.linalg.det(t), t, create_graph=True)
    assert_same(ge, gt.detach(), atol=1e-12)
    assert ember.autograd.gradcheck(ember.linalg.det, [e])


def test_slogdet_gradient_at_a_singular_matrix_is_no_error():
    # A⁻ᵀ through an adjoint LU solve, as PyTorch's: no error, non-finite where the LU meets
    # its zero pivot (which entries are inf or NaN depends on the BLAS's triangular-solve
    # kernel, and a LAPACK whose rounding leaves a pivot of 1e-16 gives ~1e15 instead, as
    # PyTorch's MKL does on some CPUs: so where both are finite they are compared)
    e = ember.from_numpy(SINGULAR.copy()).requires_grad_()
    t = torch.from_numpy(SINGULAR.copy()).requires_grad_()
    (ge,) = ember.autograd.grad(ember.linalg.slogdet(e).logabsdet, [e])
    (gt,) = torch.autograd.grad(torch.linalg.slogdet(t).logabsdet, t)
    ours, theirs = np.asarray(ge._data), gt.numpy()
    assert not np.isfinite(ours).all() or np.abs(ours).max() > 1e12
    assert not np.isfinite(theirs).all() or np.abs(theirs).max() > 1e12
    finite = np.isfinite(ours) & np.isfinite(theirs) & (np.abs(theirs) < 1e12)
    np.testing.assert_allclose(ours[finite], theirs[finite])


@pytest.mark.parametrize("upper,left,b", [
    (True, True, [[1.0], [1.0]]), (True, True, [[1.0], [0.0]]), (False, True, [[1.0], [1.0]]),
    (True, False, [[1.0, 1.0]])])
def test_solve_triangular_singular_gives_inf_nan(upper, left, b):
    a = [[1.0, 2.0], [0.0, 0.0]] if upper else [[0.0, 0.0], [2.0, 1.0]]

    def run(lib):
        return lib.linalg.solve_triangular(lib.tensor(a), lib.tensor(b), upper=upper, left=left)
    assert_same(run(ember), run(torch))


@pytest.mark.parametrize("fn", [
    lambda lib, x: tuple(lib.linalg.inv_ex(x)),
    lambda lib, x: tuple(lib.linalg.solve_ex(x, lib.ones(2, 3, dtype=x.dtype))),
    lambda lib, x: tuple(lib.linalg.lu_factor_ex(x)),
    lambda lib, x: tuple(lib.linalg.lu(x)),
    lambda lib, x: tuple(lib.linalg.cholesky_ex(x)),
    lambda lib, x: tuple(lib.linalg.cholesky_ex(x, upper=True)),
])
def test_ex_variants_on_singular_batches(fn):
    assert_same(fn(ember, ember.from_numpy(BATCH)), fn(torch, torch.from_numpy(BATCH)), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_slogdet_of_a_nan_matrix_has_no_sign_as_torch(dtype):
    """A NaN determinant's real sign is 0 (torch's sign(NaN)), not a made-up ±1."""
    a = np.arange(18.0).reshape(2, 3, 3) + 5 * np.eye(3)
    a[0, 1, 2] = a[1, 0, 0] = np.nan
    a = np.concatenate([a, np.eye(3)[None]]).astype(dtype)
    assert_same(tuple(ember.linalg.slogdet(ember.from_numpy(a))),
                tuple(torch.linalg.slogdet(torch.from_numpy(a))), rtol=1e-6)


@pytest.mark.parametrize("pos", [(0, 0), (1, 1), (2, 2), (1, 0), (2, 1), (0, 2)])
def test_cholesky_stops_at_a_nan_pivot_as_torch(pos):
    """LAPACK's potrf counts a NaN pivot as not positive-definite (NumPy's cholesky did not)."""
    a = np.eye(3)[None].repeat(2, 0) * 4 + 1
    a[1][pos] = np.nan
    for upper in (False, True):
        assert_same(tuple(ember.linalg.cholesky_ex(ember.from_numpy(a), upper=upper)),
                    tuple(torch.linalg.cholesky_ex(torch.from_numpy(a), upper=upper)), atol=1e-12)
    if pos != (0, 2):
        raises_like_torch(lambda lib: lib.linalg.cholesky(lib.from_numpy(a)),
                          ember.linalg.LinAlgError,
                          r"\(Batch element 1\): The factorization could not be completed")


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", INF, -INF, 1, -1])
def test_cond_of_singular_matrices(p):
    z = np.zeros((2, 3, 3))
    assert_same(ember.linalg.cond(ember.from_numpy(z), p),
                torch.linalg.cond(torch.from_numpy(z), p))
    if p in ("fro", INF, -INF, 1, -1):
        assert_same(ember.linalg.cond(ember.from_numpy(SINGULAR), p),
                    torch.linalg.cond(torch.from_numpy(SINGULAR), p))


@pytest.mark.parametrize("p", ["fro", INF, -INF, 1, -1])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cond_of_a_matrix_holding_nan_is_inf(p, dtype):
    # PyTorch turns a NaN product of the norms into inf (its cond ends in nan_to_num)
    a = np.stack([np.array([[1.0, np.nan], [2.0, 4.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])])
    a = a.astype(dtype)
    assert_same(ember.linalg.cond(ember.from_numpy(a), p),
                torch.linalg.cond(torch.from_numpy(a), p))


def test_lstsq_residuals_follow_the_driver_and_rank():
    a = np.random.default_rng(0).standard_normal((2, 5, 3))
    a[0, :, 2] = a[0, :, 1]  # rank 2: no residuals from gelsd/gelss
    b = np.random.default_rng(1).standard_normal((2, 5, 2))
    for driver in (None, "gelsy", "gelsd", "gelss"):
        e = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), driver=driver)
        t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), driver=driver)
        assert_same((e.residuals, e.rank, e.singular_values),
                    (t.residuals, t.rank, t.singular_values), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("driver", ["gelsd", "gelss"])
@pytest.mark.parametrize("rcond", [-1.0, 0.0, 1e-300, 1e-16, 0.99, 1.0, 2.0])
def test_lstsq_reads_rcond_as_lapack(dtype, driver, rcond):
    # (a zero or negative rcond fell back to the default eps * max(m, n): gelsd takes it, and
    # rcond >= 1, as eps/2, gelss a negative one as eps and 0 as the smallest normal number)
    eps = np.finfo(np.float64).eps
    a = np.diag([1.0, 0.5, 3 * eps, 0.75 * eps, 0.375 * eps, 0.0])[[3, 0, 5, 1, 4, 2]]
    a, b = a.astype(dtype), np.ones((6, 2), dtype)
    e = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), rcond, driver=driver)
    t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond, driver=driver)
    assert_same(tuple(e), tuple(t), rtol=1e-5)


@pytest.mark.parametrize("rcond", [1, 1.0, 0.25, 0.0, -1.0])
def test_lstsq_gelsy_keeps_a_singular_value_at_the_cutoff_as_torch(rcond):
    # (rcond=1 on diag(2, 1, 0.5) cut every value: rank 0 and a zero solution; torch's
    # gelsy keeps R's leading column, and a value equal to rcond times the largest. Where
    # rcond cuts, torch 2.13's own answer changes from run to run (rank 1 or 2 at 0.5; at 1,
    # sometimes the column of 0.5 leads): held against the pivoted answer there)
    a, b = np.diag([2.0, 1.0, 0.5])[[2, 0, 1]], np.ones((3, 2))
    e = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), rcond)
    if rcond == 1:
        assert e.rank.item() == 1
        assert e.solution.tolist() == [[0.5, 0.5], [0.0, 0.0], [0.0, 0.0]]
    else:
        t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond)
        assert_same(tuple(e), tuple(t), rtol=1e-12)
    with pytest.raises(TypeError):
        torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), "0.1")
    with pytest.raises(TypeError, match="linalg.lstsq: rcond must be a number"):
        ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), "0.1")


@pytest.mark.parametrize("driver", [None, "gelsd"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_lstsq_empty_residuals_stay_in_the_graph_as_torch(driver, shape):
    # (they did not require grad: a backward from them alone raised; then it gave zeros,
    # where torch gives no gradient: .grad None, and grad() asks for allow_unused)
    a = np.random.default_rng(4).standard_normal(shape)
    b = np.random.default_rng(5).standard_normal((shape[0], 2))
    got = {}
    for lib in (torch, ember):
        A, B = (lib.tensor(v, requires_grad=True) for v in (a, b))
        r = lib.linalg.lstsq(A, B, driver=driver)
        if tuple(r.residuals.shape) == (0,):
            assert r.residuals.requires_grad
            assert _unused_grads(lib, lambda L, A, B: L.linalg.lstsq(A, B, driver=driver)
                                 .residuals, A, B) == ([None, None], True)
            A.grad = B.grad = None
        r = lib.linalg.lstsq(A, B, driver=driver)
        (r.residuals.sum() + r.solution.sum()).backward()
        got[lib] = (r.residuals, A.grad, B.grad)
    for e, t in zip(got[ember], got[torch]):
        assert_same(e, t, atol=1e-10)
    with ember.no_grad():
        assert not ember.linalg.lstsq(ember.tensor(a, requires_grad=True), ember.tensor(b),
                                      driver=driver).residuals.requires_grad


def test_no_grad_from_outputs_get_a_zero_forward_ad_tangent_as_torch():
    # (lstsq's empty residuals and householder_product with no reflectors had no tangent)
    a = np.random.default_rng(4).standard_normal((5, 3))
    b = np.random.default_rng(5).standard_normal((5, 2))
    got = {}
    for lib in (torch, ember):
        fwad = lib.autograd.forward_ad
        with fwad.dual_level():
            d = fwad.make_dual(lib.tensor(a), lib.ones(5, 3, dtype=lib.float64))
            res = lib.linalg.lstsq(d, lib.tensor(b), driver="gelsy").residuals
            q = lib.linalg.householder_product(d, lib.zeros(0, dtype=lib.float64))
            got[lib] = [fwad.unpack_dual(t).tangent for t in (res, q)]
    for e, t in zip(got[ember], got[torch]):
        assert e is not None and t is not None
        assert_same(e, t)


@pytest.mark.parametrize("driver", ["gelsd", "gelss"])
@pytest.mark.parametrize("transform", ["vmap", "compile"])
def test_lstsq_residuals_under_vmap_and_compile_as_torch(driver, transform):
    # (bool() of the ranks raised there; a rank-deficient matrix, whose residuals PyTorch
    # leaves out, is a clear error: their shape cannot depend on the data)
    rng = np.random.default_rng(6)
    a, b, w = rng.standard_normal((4, 5, 3)), rng.standard_normal((5, 2)), rng.standard_normal(8)
    fn = lambda A, B: ember.linalg.lstsq(A, B, driver=driver)  # noqa: E731
    fn = ember.func.vmap(fn, (0, None)) if transform == "vmap" else ember.compile(fn)
    A, B = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    At, Bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    e, t = fn(A, B), torch.linalg.lstsq(At, Bt.expand(4, 5, 2), driver=driver)
    for x, y in zip(e, t):
        assert_same(x, y, atol=1e-10)
    (e.residuals.reshape(-1) * ember.tensor(w)).sum().backward()
    (t.residuals.reshape(-1) * torch.tensor(w)).sum().backward()
    assert_same(A.grad, At.grad, atol=1e-10)
    assert_same(B.grad, Bt.grad, atol=1e-10)
    a[2, :, 2] = a[2, :, 1]
    with pytest.raises(ember.linalg.LinAlgError, match=r"\(Batch element 2\): the matrix has "
                                                       r"rank 2 < 3 columns.*ember.export.*Hint"):
        fn(ember.tensor(a), ember.tensor(b))


def test_lu_unpack_without_data_or_pivots():
    x = np.random.default_rng(2).standard_normal((3, 4))
    for kw in (dict(unpack_data=False), dict(unpack_pivots=False)):
        assert_same(ember.lu_unpack(*ember.linalg.lu_factor(ember.from_numpy(x)), **kw),
                    torch.lu_unpack(*torch.linalg.lu_factor(torch.from_numpy(x)), **kw),
                    atol=1e-15)


def test_vander_of_integers_is_int64():
    assert_same(ember.linalg.vander(ember.tensor([1, 2, 3], dtype=ember.int32)),
                torch.linalg.vander(torch.tensor([1, 2, 3], dtype=torch.int32)))


def test_logdet_of_a_negative_determinant_is_nan_with_a_zero_gradient():
    # PyTorch: where(sign == -1, nan, logabsdet), so no gradient flows there
    x = np.stack([np.diag([-2.0, 1.0, 3.0]), np.diag([2.0, 1.0, 3.0]), np.zeros((3, 3))])
    e = ember.from_numpy(x.copy()).requires_grad_()
    t = torch.from_numpy(x.copy()).requires_grad_()
    assert_same(ember.logdet(e), torch.logdet(t))
    (ge,) = ember.autograd.grad(ember.logdet(e)[:2].sum(), [e])
    (gt,) = torch.autograd.grad(torch.logdet(t)[:2].sum(), t)
    assert_same(ge, gt)


def test_lstsq_takes_b_as_vectors_by_torchs_rule():
    """``B`` is a batch of vectors only when 1-D or shaped as ``A`` without its last dim (as in
    ``solve``); else it is a matrix, and rows that do not match are an error, not vectors."""
    rng = np.random.default_rng(0)
    for a_shape, b_shape in [((2, 4, 3), (2, 4)), ((4, 3), (4,)), ((3, 4, 3), (3, 4))]:
        a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        same_as_torch(lambda lib, a=a, b=b: lib.linalg.lstsq(lib.from_numpy(a),
                                                             lib.from_numpy(b)).solution,
                      atol=1e-12)
    raises_like_torch(lambda lib: lib.linalg.lstsq(lib.ones(1, 4, 3, dtype=lib.float64),
                                                   lib.ones(5, 4, dtype=lib.float64)),
                      ember.errors.OpError, "same number of rows")
    # a (3, 3) B for a (1, 3, 3) A is one 3-column matrix (torch's solution also repeats the
    # batch three times: (3, 3, 3))
    a, b = rng.standard_normal((1, 3, 3)) + 3 * np.eye(3), rng.standard_normal((3, 3))
    got = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b)).solution
    assert_same(got, torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b)).solution[:1],
                atol=1e-12)
    # a (3, 2) B for a (2, 3, 3) A (torch refuses it) is one matrix for both systems: torch's
    # answer for B[None] (documented in docs/tensors_and_autograd.md)
    a, b = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3), rng.standard_normal((3, 2))
    got = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b)).solution
    assert got.shape == (2, 3, 2)
    assert_same(got, torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b)[None]).solution,
                atol=1e-12)


def test_lstsq_gels_ignores_rcond():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    e = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), rcond=0.5, driver="gels")
    t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond=0.5, driver="gels")
    assert_same((e.solution, e.residuals), (t.solution, t.residuals), atol=1e-12)


def test_torch_norm_nuc():
    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    for kw in (dict(dim=(0, 1)), dict(dim=(-1, 1), keepdim=True)):
        assert_same(ember.from_numpy(x).norm("nuc", **kw), torch.from_numpy(x).norm("nuc", **kw),
                    atol=1e-12)
    assert_same(ember.norm(ember.from_numpy(x[0]), "nuc"),
                torch.norm(torch.from_numpy(x[0]), "nuc"), atol=1e-12)
    # a number p with two dims is a vector norm in torch.norm, not a spectral one
    assert_same(ember.norm(ember.from_numpy(x), 2, dim=(1, 2)),
                torch.norm(torch.from_numpy(x), 2, dim=(1, 2)), atol=1e-12)


# -- errors ----------------------------------------------------------------------------------
def test_errors():
    LinAlgError = ember.linalg.LinAlgError  # noqa: N806
    sing = lambda lib: lib.tensor(BATCH.tolist(), dtype=lib.float64)  # noqa: E731
    raises_like_torch(lambda lib: lib.linalg.inv_ex(sing(lib), check_errors=True), LinAlgError,
                      r"linalg.inv_ex: \(Batch element 0\): The diagonal element 3 is zero")
    raises_like_torch(lambda lib: lib.linalg.solve_ex(sing(lib), lib.ones(2, 3, dtype=lib.float64),
                                                      check_errors=True),
                      LinAlgError, r"linalg.solve_ex: \(Batch element 0\): .*singular")
    raises_like_torch(lambda lib: lib.linalg.lu_factor_ex(sing(lib), check_errors=True),
                      LinAlgError, r"\(Batch element 0\): U\[3,3\] is zero")
    raises_like_torch(lambda lib: lib.linalg.cholesky_ex(-lib.eye(2), check_errors=True),
                      LinAlgError, "leading minor of order 1 is not positive-definite")
    raises_like_torch(lambda lib: lib.linalg.cond(lib.ones(2, 3), 1), ember.ShapeError,
                      r"linalg.cond\(p=1\): .*square")
    raises_like_torch(lambda lib: lib.linalg.cond(lib.eye(2), 3), ValueError, "p must be")
    raises_like_torch(lambda lib: lib.linalg.householder_product(lib.ones(2, 3), lib.ones(2)),
                      ember.ShapeError, "k <= n <= m")
    raises_like_torch(lambda lib: lib.cholesky_solve(lib.ones(3, 1), lib.eye(2)),
                      ember.ShapeError, "cholesky_solve: B")
    raises_like_torch(lambda lib: lib.linalg.lstsq(lib.eye(2), lib.ones(2), driver="x"),
                      ValueError, "driver")
    raises_like_torch(lambda lib: lib.linalg.matrix_norm(lib.ones(3), "nuc"), ember.ShapeError,
                      "at least 2 dims")
    raises_like_torch(lambda lib: lib.linalg.matrix_norm(lib.ones(2, 2), 3), ValueError,
                      r"ord 3 is not supported; use 'fro', 'nuc', 2, -2")
    raises_like_torch(lambda lib: lib.ones(2, 2, 2).norm("nuc"), ember.ShapeError,
                      r"dim must be a 2-tuple")
    raises_like_torch(lambda lib: lib.ones(2, 2, 2).norm("fro", dim=(0, 1, 2)),
                      ember.ShapeError, r"dim must be a 2-tuple")
    raises_like_torch(lambda lib: lib.linalg.vector_norm(lib.ones(2, dtype=lib.float64),
                                                         dtype=lib.float32),
                      ember.DTypeError, "without narrowing")
    raises_like_torch(lambda lib: lib.linalg.vander(lib.ones(3), N=1), ValueError,
                      "N must be greater than 1")
    raises_like_torch(lambda lib: lib.linalg.vander(lib.ones(3, dtype=lib.bool)),
                      ember.DTypeError, "vander: x must be a floating or integer")
    raises_like_torch(lambda lib: lib.linalg.lstsq(lib.ones(3, 2), lib.ones(2, 3, 1)),
                      ember.errors.OpError, "B must have as many dims as A")


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3)])
@pytest.mark.parametrize("p", [None, "fro", "nuc", 2, -2, 1, -1, INF, -INF])
def test_cond_of_empty_matrices_is_zero_as_torch(shape, p):
    if p in ("fro", "nuc") and shape[-1] != shape[-2]:
        raises_like_torch(lambda lib: lib.linalg.cond(lib.zeros(*shape), p), ember.ShapeError,
                          "square")
        return
    same_as_torch(lambda lib: lib.linalg.cond(lib.zeros(*shape), p))
    same_as_torch(lambda lib: lib.linalg.cond(lib.zeros(*shape, dtype=lib.complex128), p))


@pytest.mark.parametrize("a,b", [((3, 3), (2, 3, 3)), ((1, 3, 3), (2, 3, 3)),
                                 ((2, 1, 3, 3), (4, 3, 3)), ((2, 3, 3), (3,)),
                                 ((1, 3, 3), (5, 2, 3, 1))])
@pytest.mark.parametrize("left", [True, False])
def test_solve_ex_info_has_the_batch_shape_of_A_as_torch(a, b, left):
    if not left and (len(b) < len(a) or b[-1] != 3):
        return  # (no XA = B: torch refuses it, vectors included)
    same_as_torch(lambda lib: tuple(lib.linalg.solve_ex(
        lib.eye(3, dtype=lib.float64).expand(*a) * 2, lib.ones(*b, dtype=lib.float64),
        left=left)))


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("left", [True, False])
def test_solve_ex_info_comes_from_the_lu_of_A_for_either_side_as_torch(dtype, left):
    # a zero column / a zero row: the LU of A and of Aᵀ stop at different pivots (2 vs 3);
    # torch reports A's for left=False too (Ember reported Aᵀ's)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    a[0, :, 1] = 0
    a[1, 1, :] = 0
    same_as_torch(lambda lib: lib.linalg.solve_ex(
        tensor_in(lib, a).to(getattr(lib, dtype)), tensor_in(lib, a).to(getattr(lib, dtype)),
        left=left).info)
    x = ember.linalg.solve(ember.tensor(a[2]), ember.tensor(a[:2]), left=left)
    assert np.allclose(torch.linalg.solve(torch.tensor(a[2]), torch.tensor(a[:2]),
                                          left=left).numpy(), x.numpy())


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_cholesky_inverse_of_a_factor_with_a_zero_diagonal_raises_as_torch(upper, batch):
    # (it gave inf/NaN silently)
    a = np.random.default_rng(3).standard_normal(batch + (3, 3)) + 3 * np.eye(3)
    a[..., 2, 2] = 0
    if batch:
        a[0, 2, 2] = 1
    factor = np.triu(a) if upper else np.tril(a)
    where = r"\(Batch element 1\): " if batch else ""
    raises_like_torch(lambda lib: lib.cholesky_inverse(tensor_in(lib, factor), upper=upper),
                      ember.linalg.LinAlgError,
                      f"cholesky_inverse: {where}The diagonal element 3 is zero, the inversion "
                      "could not be completed because the input matrix is singular")


@pytest.mark.parametrize("transform", ["vmap", "compile"])
def test_cholesky_inverse_zero_diagonal_raises_under_vmap_and_compile_as_torch(transform):
    # (the check runs on arrays, so vmap's and the jit's batches name the element as torch's
    # eager batch does; values of a batch without the zero agree)
    factor = np.tril(np.random.default_rng(3).standard_normal((3, 3, 3))) + 3 * np.eye(3)
    fn = (ember.func.vmap if transform == "vmap" else ember.compile)(ember.cholesky_inverse)
    assert_same(fn(ember.tensor(factor)), torch.cholesky_inverse(torch.tensor(factor)),
                atol=1e-12)
    factor[1, 2, 2] = 0
    message = (r"cholesky_inverse: \(Batch element 1\): The diagonal element 3 is zero, the "
               "inversion could not be completed because the input matrix is singular")
    with pytest.raises(RuntimeError, match=message[len("cholesky_inverse: "):]):
        torch.cholesky_inverse(torch.tensor(factor))
    with pytest.raises(ember.linalg.LinAlgError, match=message):
        fn(ember.tensor(factor))


M = np.random.default_rng(7).standard_normal((2, 3, 4))
TOLERANCES = [  # (atol, rtol), tensors given as lists
    ([0.5, 3.0], None), (None, [0.0, 0.9]), ([[0.0], [0.5]], None), ([0.5, 0.0], 0.1),
    (0.2, [[0.05], [0.3]]), ([1, 0], None),
]


def _tolerances(lib, atol, rtol):
    """The keywords for ``lib``: lists as tensors, and numbers as 0-d float64 tensors next to
    a tensor (torch takes both as numbers or both as tensors)."""
    tensors = any(isinstance(t, list) for t in (atol, rtol))

    def convert(v):
        if isinstance(v, list):
            return lib.tensor(v)
        return lib.tensor(float(v), dtype=lib.float64) if tensors and v is not None else v
    return {"atol": convert(atol), "rtol": convert(rtol)}


@pytest.mark.parametrize("atol,rtol", TOLERANCES)
def test_tensor_tolerances_broadcast_over_the_batch_as_torch(atol, rtol):
    out, grads = {}, {}
    for lib in (ember, torch):
        x = lib.from_numpy(M.copy()).requires_grad_(True)
        rank = lib.linalg.matrix_rank(x.detach(), **_tolerances(lib, atol, rtol))
        p = lib.linalg.pinv(x, **_tolerances(lib, atol, rtol))
        w = np.arange(p.numel(), dtype=np.float64).reshape(tuple(p.shape))
        (p * lib.from_numpy(w)).sum().backward()
        out[lib], grads[lib] = (rank, p), x.grad.numpy()
    assert_same(out[ember], out[torch], atol=1e-12)
    np.testing.assert_allclose(grads[ember], grads[torch], atol=1e-10)


def test_tolerance_errors():
    with pytest.raises(ember.ShapeError, match=r"linalg.pinv: atol of shape \(3,\) .* do not "
                                               r"broadcast against the batch dims \(2,\)"):
        ember.linalg.pinv(ember.ones(2, 3, 3), atol=ember.ones(3))
    with pytest.raises(ember.ShapeError, match="linalg.matrix_rank: atol"):
        ember.linalg.matrix_rank(ember.ones(2, 3, 3), rtol=ember.ones(3))
    raises_like_torch(lambda lib: lib.linalg.matrix_rank(lib.ones(2, 2), atol=lib.ones(
        1, dtype=lib.complex64)), ember.DTypeError, "linalg.matrix_rank: atol must be real")
    for fn in ("pinv", "matrix_rank"):  # an empty matrix ignores the tolerances' shape
        same_as_torch(lambda lib, fn=fn: getattr(lib.linalg, fn)(
            lib.zeros(0, 3), atol=lib.tensor([1.0, 0.0])))


@pytest.mark.parametrize("fn", ["pinv", "matrix_rank"])
def test_hermitian_needs_square_matrices_as_torch(fn):
    raises_like_torch(lambda lib: getattr(lib.linalg, fn)(lib.ones(3, 4), hermitian=True),
                      ember.ShapeError, rf"linalg.{fn}\(hermitian=True\): A must be batches of "
                                        "square matrices, but they are 3 by 4 matrices")
    same_as_torch(lambda lib: getattr(lib.linalg, fn)(lib.eye(3, dtype=lib.float64) * 2,
                                                      hermitian=True))


def test_deprecated_rcond_and_tol_as_torch():
    """torch's older spellings: ``pinv(A, rcond, hermitian)`` is ``rtol=rcond, atol=0`` and
    ``matrix_rank(A, tol, hermitian)`` is ``atol=tol, rtol=0``, positional or keyword."""
    m = np.random.default_rng(0).standard_normal((2, 4, 3))
    calls = [lambda lib, a: lib.linalg.pinv(a, rcond=0.5),
             lambda lib, a: lib.linalg.pinv(a, 0.7),
             lambda lib, a: lib.linalg.pinv(a, lib.tensor([0.5, 0.7], dtype=lib.float64)),
             lambda lib, a: lib.linalg.pinv(a @ a.mT, 0.5, True),
             lambda lib, a: lib.linalg.matrix_rank(a, tol=1.9),
             lambda lib, a: lib.linalg.matrix_rank(a, 2.1, False),
             lambda lib, a: lib.linalg.matrix_rank(a @ a.mT, tol=3.0, hermitian=True)]
    for call in calls:
        same_as_torch(lambda lib, call=call: call(lib, lib.from_numpy(m)), atol=1e-12)
    # both spellings at once: torch has no such overload, a TypeError (it was a ValueError)
    both = [lambda lib, a: lib.linalg.pinv(a, 0.1, atol=0.2),
            lambda lib, a: lib.linalg.pinv(a, rcond=0.1, rtol=0.2),
            lambda lib, a: lib.linalg.matrix_rank(a, tol=0.5, atol=0.1),
            lambda lib, a: lib.linalg.matrix_rank(a, 0.5, rtol=0.1)]
    for call in both:
        with pytest.raises(TypeError):
            call(torch, torch.ones(2, 2))
        with pytest.raises(TypeError, match=r"linalg.(pinv: rcond|matrix_rank: tol) is the "
                                            r"older spelling of (rtol|atol)"):
            call(ember, ember.ones(2, 2))


# -- vmap ------------------------------------------------------------------------------------
VMAPPED = [
    (lambda a: ember.linalg.det(a), 1),
    (lambda a: ember.linalg.inv_ex(a), 1),
    (lambda a, b: ember.linalg.solve_ex(a, b), 2),
    (lambda a: ember.linalg.lu(a), 1),
    (lambda a: ember.linalg.lu_factor_ex(a), 1),
    (lambda a: ember.linalg.cholesky_ex(a @ a.mT), 1),
    (lambda a, b: ember.cholesky_solve(b, ember.linalg.cholesky(a @ a.mT)), 2),
    (lambda a: ember.linalg.cond(a, 1), 1),
    (lambda a: ember.linalg.matrix_norm(a, "nuc"), 1),
    (lambda a, b: ember.linalg.householder_product(a, b[:, 0]), 2),
    (lambda a: ember.linalg.pinv(a, rtol=ember.tensor([[0.0], [0.9]]).double()), 1),
]


@pytest.mark.parametrize("k", range(len(VMAPPED)))
def test_vmap(k):
    fn, nargs = VMAPPED[k]
    rng = np.random.default_rng(k)
    xs = [ember.from_numpy(rng.uniform(-1, 1, (2, 3, 3)) + 4 * np.eye(3)) for _ in range(nargs)]
    got = ember.func.vmap(fn)(*xs)
    want = [fn(*[x[b] for x in xs]) for b in range(2)]
    got = got if isinstance(got, tuple) else (got,)
    want = [w if isinstance(w, tuple) else (w,) for w in want]
    for i, g in enumerate(got):
        ref = np.stack([np.asarray(w[i]._data) for w in want])
        np.testing.assert_allclose(np.asarray(g._data), ref, rtol=1e-10, atol=1e-12)
