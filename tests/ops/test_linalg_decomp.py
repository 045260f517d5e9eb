"""Inverses, determinants, solvers and factorizations (ember/ops/linalg_solve.py,
linalg_decomp.py) against PyTorch and finite differences (see optable.py), plus errors, the
torch.* aliases and Tensor methods.

Inputs are made well-conditioned inside the op under test, in both frameworks alike: a
diagonally dominant matrix for inverses and solves, ``X Xᵀ + 3I`` (symmetric positive-definite)
for ``cholesky`` and ``eigh``. Eigen- and singular vectors and QR factors are defined up to
sign: rows are compared with each column's sign fixed by its first entry.
"""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import Const, OpCase, S, arg, assert_same, op_tests, raises_like_torch


def _eye(lib, x, n=None):
    return lib.eye(n or x.shape[-1], dtype=x.dtype)


def dominant(lib, x):
    """A diagonally dominant matrix from entries in [-1, 1]: far from singular."""
    return x + 4 * _eye(lib, x)


def spd(lib, x):
    return x @ x.mT + 3 * _eye(lib, x)


def _col_signs(lib, m):
    """+1/-1 per column, the sign of its first entry."""
    return lib.sign(m[..., :1, :])


def eigh_fixed(lib, x, **kw):
    w, v = lib.linalg.eigh(spd(lib, x), **kw)
    return w, v * _col_signs(lib, v)


def qr_fixed(lib, x, mode="reduced"):
    q, r = lib.linalg.qr(x, mode=mode)
    s = lib.sign(r.diagonal(0, -2, -1))
    k = s.shape[-1]
    if q.shape[-1] > k:  # complete mode, tall: the extra columns by their first entry
        s_q = lib.cat([s, lib.sign(q[..., :1, k:]).squeeze(-2)], dim=-1)
        return q * s_q.unsqueeze(-2), r * s_q.unsqueeze(-1)[..., :r.shape[-2], :]
    return q * s.unsqueeze(-2), r * s.unsqueeze(-1)


def svd_fixed(lib, x, full_matrices=False, narrow=False):
    u, s, vh = lib.linalg.svd(x, full_matrices=full_matrices)
    k = s.shape[-1]
    if narrow:
        u, vh = u[..., :k], vh[..., :k, :]
    su = _col_signs(lib, u)
    u = u * su
    sv = su.mT[..., :k, :]
    if vh.shape[-2] > k:  # the extra rows of a full Vh: by their first entry
        sv = lib.cat([sv, lib.sign(vh[..., k:, :1])], dim=-2)
    return u, s, vh * sv


def lu_solve_both(lib, a, b, **kw):
    lu, piv = lib.linalg.lu_factor(a)
    return lib.linalg.lu_solve(lu, piv, b, **kw)


def lib_fn(f, **kw):
    """One row's op in Ember and in PyTorch: ``f(lib, *args)``."""
    return (lambda *a: f(ember, *a, **kw)), (lambda *a: f(torch, *a, **kw))


def row(name, f, samples, **opts):
    e, t = lib_fn(f)
    return OpCase(name, e, t, samples, **opts)


U = dict(low=-1.0, high=1.0)
SQUARE = [S(arg(3, 3, **U)), S(arg(2, 3, 3, **U))]
SQUARE_NC = SQUARE + [S(arg(3, 3, noncontig=True, **U))]
TALL_WIDE = [S(arg(3, 2)), S(arg(2, 3)), S(arg(2, 3, 2))]
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])

CASES = [
    row("inv", lambda lib, x: lib.linalg.inv(dominant(lib, x)), SQUARE_NC),
    row("inverse", lambda lib, x: lib.inverse(dominant(lib, x)), SQUARE[:1]),
    row("det", lambda lib, x: lib.linalg.det(dominant(lib, x) - 3.5 * _eye(lib, x)), SQUARE_NC),
    row("det_method", lambda lib, x: dominant(lib, x).det(), SQUARE[:1]),
    row("det_singular", lambda lib, x: lib.linalg.det(x), [S(Const(SINGULAR))], grad=False),
    row("slogdet", lambda lib, x: lib.linalg.slogdet(dominant(lib, x) - 5 * _eye(lib, x)),
        SQUARE),
    row("logdet", lambda lib, x: lib.logdet(spd(lib, x)), SQUARE),
    row("solve_matrix", lambda lib, a, b: lib.linalg.solve(dominant(lib, a), b),
        [S(arg(3, 3, **U), arg(3, 2)), S(arg(2, 3, 3, **U), arg(3, 2)),
         S(arg(3, 3, **U), arg(2, 3, 4))]),
    row("solve_vector", lambda lib, a, b: lib.linalg.solve(dominant(lib, a), b),
        [S(arg(3, 3, **U), arg(3)), S(arg(2, 3, 3, **U), arg(2, 3)),
         S(arg(2, 3, 3, **U), arg(3))]),
    row("solve_right", lambda lib, a, b: lib.linalg.solve(dominant(lib, a), b, left=False),
        [S(arg(3, 3, **U), arg(2, 3))]),
    row("solve_triangular",
        lambda lib, a, b: lib.linalg.solve_triangular(dominant(lib, a), b, upper=True),
        [S(arg(3, 3, **U), arg(3, 2)), S(arg(2, 3, 3, **U), arg(3, 1))]),
    row("solve_triangular_lower_right",
        lambda lib, a, b: lib.linalg.solve_triangular(dominant(lib, a), b, upper=False,
                                                      left=False),
        [S(arg(3, 3, **U), arg(2, 3))]),
    row("solve_triangular_unit",
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
        [S(arg(3, 3, **U), arg(3, 2))]),
    row("cholesky", lambda lib, x: lib.linalg.cholesky(spd(lib, x)), SQUARE_NC),
    row("cholesky_upper", lambda lib, x: lib.linalg.cholesky(spd(lib, x), upper=True),
        SQUARE[:1]),
    row("cholesky_method", lambda lib, x: spd(lib, x).cholesky(), SQUARE[:1]),
    row("qr", qr_fixed, TALL_WIDE + [S(arg(3, 3))]),
    row("qr_complete_wide", lambda lib, x: qr_fixed(lib, x, "complete"), [S(arg(2, 3))]),
    row("qr_complete_tall", lambda lib, x: qr_fixed(lib, x, "complete"), [S(arg(3, 2))],
        grad=False),
    row("qr_r", lambda lib, x: lib.linalg.qr(x, mode="r").R.abs(), [S(arg(3, 2))],
        grad=False),
    row("eigh", eigh_fixed, SQUARE_NC),
    row("eigh_upper", lambda lib, x: eigh_fixed(lib, x, UPLO="U"), SQUARE[:1]),
    row("eigvalsh", lambda lib, x: lib.linalg.eigvalsh(spd(lib, x)), SQUARE),
    row("svd", svd_fixed, TALL_WIDE + [S(arg(3, 3))]),
    row("svd_full", lambda lib, x: svd_fixed(lib, x, True), [S(arg(3, 2)), S(arg(2, 3))],
        grad=False),
    row("svd_full_narrowed", lambda lib, x: svd_fixed(lib, x, True, True),
        [S(arg(3, 2)), S(arg(2, 3)), S(arg(3, 3))]),
    row("svd_full_square", lambda lib, x: svd_fixed(lib, x, True), [S(arg(3, 3))]),
    row("svdvals", lambda lib, x: lib.linalg.svdvals(x), TALL_WIDE),
    row("pinv", lambda lib, x: lib.linalg.pinv(x), TALL_WIDE + [S(arg(3, 3, noncontig=True))]),
    row("pinverse", lambda lib, x: lib.pinverse(x), [S(arg(3, 2))]),
    row("lstsq", lambda lib, a, b: lib.linalg.lstsq(a, b).solution,
        [S(arg(3, 2), arg(3, 2)), S(arg(2, 3, 2), arg(2, 3)), S(arg(4, 2), arg(4))]),
    row("matrix_power", lambda lib, x: lib.linalg.matrix_power(x, 3), SQUARE),
    row("matrix_power_neg", lambda lib, x: lib.linalg.matrix_power(dominant(lib, x), -2),
        SQUARE[:1]),
    row("matrix_power_method", lambda lib, x: x.matrix_power(2), SQUARE[:1]),
    row("matrix_power_zero", lambda lib, x: lib.linalg.matrix_power(x, 0), SQUARE),
    row("matrix_exp", lambda lib, x: lib.linalg.matrix_exp(x), SQUARE_NC),
    row("matrix_exp_large", lambda lib, x: lib.linalg.matrix_exp(3 * x), SQUARE[:1],
        rtol=1e-3),
    row("lu_factor", lambda lib, x: lib.linalg.lu_factor(x).LU, SQUARE_NC),
    row("lu_solve", lu_solve_both, [S(arg(3, 3), arg(3, 2)), S(arg(2, 3, 3), arg(3, 1))]),
    row("lu_solve_adjoint", lambda lib, a, b: lu_solve_both(lib, a, b, adjoint=True),
        [S(arg(3, 3), arg(3, 2))]),
    row("lu_solve_right", lambda lib, a, b: lu_solve_both(lib, a, b.mT, left=False),
        [S(arg(3, 3), arg(3, 2))]),
    row("matrix_rank", lambda lib, x: lib.linalg.matrix_rank(x), SQUARE + TALL_WIDE,
        grad=False),
    row("matrix_rank_deficient", lambda lib, x: lib.linalg.matrix_rank(x, atol=1e-6),
        [S(Const(SINGULAR))], grad=False),
]

(test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp) = op_tests(CASES)


# -- results, aliases and methods ------------------------------------------------------------
def _np(seed, *shape):
    return np.random.default_rng(seed).uniform(-1, 1, shape) + 4 * np.eye(*shape[-2:])


def test_named_results_and_old_api():
    x = _np(0, 3, 2)
    e, t = ember.from_numpy(x), torch.from_numpy(x)
    lst_e, lst_t = ember.linalg.lstsq(e, e[:, :1]), torch.linalg.lstsq(t, t[:, :1])
    assert_same(tuple(lst_e), tuple(lst_t), atol=1e-12)
    q, r = ember.qr(e)
    assert q.shape == (3, 2) and ember.linalg.qr(e, mode="complete").Q.shape == (3, 3)
    u, s, v = ember.svd(e)
    tu, ts, tv = torch.svd(t)
    assert_same((u.abs(), s, v.abs()), (tu.abs(), ts, tv.abs()), atol=1e-12)
    assert_same(tuple(ember.svd(e, compute_uv=False)), tuple(torch.svd(t, compute_uv=False)),
                atol=1e-12)
    sq = _np(1, 3, 3)
    es, ts_ = ember.from_numpy(sq), torch.from_numpy(sq)
    assert_same((es.inverse(), es.logdet(), *es.slogdet(), es.matrix_exp(), es.pinverse()),
                (ts_.inverse(), ts_.logdet(), *ts_.slogdet(), ts_.matrix_exp(), ts_.pinverse()),
                atol=1e-12, rtol=1e-12)
    assert ember.linalg.slogdet(es).sign.shape == ()
    assert ember.linalg.eigh(es + es.mT).eigenvalues.shape == (3,)


def test_svd_driver_keyword_as_torch():
    """``driver=None`` is the CPU's only choice (torch's cuSOLVER drivers need CUDA)."""
    x = _np(0, 3, 2)
    assert_same(ember.linalg.svdvals(ember.from_numpy(x), driver=None),
                torch.linalg.svdvals(torch.from_numpy(x), driver=None), atol=1e-12)
    assert_same(ember.linalg.svd(ember.from_numpy(x), False, driver=None).S,
                torch.linalg.svd(torch.from_numpy(x), False, driver=None).S, atol=1e-12)
    for fn in ("svd", "svdvals"):
        raises_like_torch(lambda lib, fn=fn: getattr(lib.linalg, fn)(lib.ones(2, 2),
                                                                    driver="gesvdj"),
                          ember.errors.ArgumentError, rf"linalg.{fn}: driver= is only supported "
                                                      "on CUDA inputs")
    with pytest.raises(ember.errors.ArgumentError, match="driver must be None, 'gesvd', "
                                                         "'gesvdj' or 'gesvda', got 'x'"):
        ember.linalg.svd(ember.ones(2, 2), driver="x")


def test_float32_batched_values():
    x = _np(2, 2, 3, 3).astype(np.float32)
    e, t = ember.from_numpy(x), torch.from_numpy(x)
    assert_same(ember.linalg.inv(e), torch.linalg.inv(t), rtol=1e-5, atol=1e-6)
    assert_same(ember.linalg.solve(e, e[0]), torch.linalg.solve(t, t[0]), rtol=1e-5, atol=1e-6)
    assert_same(ember.linalg.svdvals(e), torch.linalg.svdvals(t), rtol=1e-5, atol=1e-6)


def test_singular_and_degenerate():
    same = dict(rtol=1e-12, atol=1e-12)
    assert_same(ember.linalg.det(ember.zeros(3, 3)), torch.linalg.det(torch.zeros(3, 3)))
    assert_same(tuple(ember.linalg.slogdet(ember.zeros(2, 2))),
                tuple(torch.linalg.slogdet(torch.zeros(2, 2))))
    assert_same(ember.logdet(-ember.eye(3)), torch.logdet(-torch.eye(3)))
    assert_same(ember.linalg.pinv(ember.from_numpy(SINGULAR)),
                torch.linalg.pinv(torch.from_numpy(SINGULAR)), **same)
    # repeated eigenvalues: the eigenvector gradient has inf/NaN in it, as in PyTorch
    a = ember.eye(3, dtype=ember.float64).requires_grad_()
    _, v = ember.linalg.eigh(a)
    (g,) = ember.autograd.grad(v.sum(), [a])
    assert not np.isfinite(np.asarray(g._data)).all()


def test_cholesky_upper_reads_the_upper_triangle():
    # as LAPACK's uplo='U': a non-symmetric input shows which triangle is read
    x = np.array([[5.0, 2.0], [-1.0, 3.0]])
    e, t = ember.from_numpy(x), torch.from_numpy(x)
    assert_same(ember.linalg.cholesky(e, upper=True), torch.linalg.cholesky(t, upper=True),
                atol=1e-12)
    assert_same(ember.cholesky(e, upper=True), torch.cholesky(t, upper=True), atol=1e-12)
    assert_same(ember.linalg.cholesky(e), torch.linalg.cholesky(t), atol=1e-12)


@pytest.mark.parametrize("x", [np.full((3, 3), np.inf), np.full((2, 2), np.inf + 0j),
                               np.array([[4.0, np.inf, 1.0], [np.inf, 4.0, 1.0], [1.0, 1.0, 4.0]]),
                               np.array([[4.0, 1.0], [1.0, np.inf]]),
                               np.array([[4.0, 1.0, 0.5], [np.inf, 3.0, 0.2], [0.5, 0.2, 2.0]])
                               + 0j])
def test_cholesky_of_infinite_entries_fails_as_potrf(x):
    # an infinite pivot over an infinite entry is inf/inf = NaN: the next minor fails (NumPy's
    # OpenBLAS factor gave 0 there, info 0, and cholesky raised nothing)
    got, want = ember.linalg.cholesky_ex(ember.tensor(x)), torch.linalg.cholesky_ex(torch.tensor(x))
    np.testing.assert_array_equal(got.L.numpy(), want.L.numpy())
    assert got.info.item() == want.info.item()


def test_cholesky_of_a_non_finite_matrix_leaves_its_batch_mates_to_lapack():
    # only the matrices whose factor has a non-finite diagonal go through the column loop: a
    # finite batch-mate keeps LAPACK's factor, bit for bit (it moved by ~1 ulp before)
    rng = np.random.default_rng(0)
    y = rng.standard_normal((50, 50))
    p = y @ y.T + 50 * np.eye(50)
    x = np.stack([p, np.full((50, 50), np.inf), p])
    got = ember.linalg.cholesky_ex(ember.tensor(x))
    want = torch.linalg.cholesky_ex(torch.tensor(x))
    alone = ember.linalg.cholesky(ember.tensor(p)).numpy()
    np.testing.assert_array_equal(got.L.numpy()[[0, 2]], np.stack([alone, alone]))
    np.testing.assert_array_equal(got.L.numpy()[1], want.L.numpy()[1])
    np.testing.assert_array_equal(got.info.numpy(), want.info.numpy())


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 2, 2)])
def test_lu_of_empty_matrices(shape):
    def run(lib):
        LU, pivots = lib.linalg.lu_factor(lib.zeros(shape))  # noqa: N806
        return LU, pivots, lib.linalg.lu_solve(LU, pivots, lib.zeros(*shape[:-1], 2))
    assert_same(run(ember), run(torch))

# -- errors ----------------------------------------------------------------------------------
def test_errors():
    LinAlgError = ember.linalg.LinAlgError  # noqa: N806
    raises_like_torch(lambda lib: lib.linalg.inv(lib.zeros(3, 3)), LinAlgError,
                      r"linalg.inv: .*singular \(\(3, 3\) float32\)")
    raises_like_torch(lambda lib: lib.linalg.inv(lib.zeros(2, 3, 3)), LinAlgError,
                      r"Batch element 0")
    raises_like_torch(lambda lib: lib.linalg.solve(lib.zeros(2, 2), lib.ones(2)), LinAlgError,
                      "linalg.solve: .*singular")
    raises_like_torch(
        lambda lib: lib.linalg.cholesky(lib.tensor([[[1.0, 0.0], [0.0, 1.0]],
                                                    [[1.0, 2.0], [2.0, 1.0]]])),
        LinAlgError, r"\(Batch element 1\): .*leading minor of order 2 is not positive-definite")
    raises_like_torch(lambda lib: lib.linalg.inv(lib.ones(3, 3, dtype=lib.int64)),
                      ember.DTypeError, "linalg.inv: .*float32 or float64.*int64")
    raises_like_torch(lambda lib: lib.linalg.det(lib.ones(2, 2, dtype=lib.float16)),
                      ember.DTypeError, "linalg.det: .*low-precision")
    raises_like_torch(lambda lib: lib.linalg.det(lib.ones(2, 3)), ember.ShapeError,
                      r"linalg.det: A must be batches of square matrices, but they are 2 by 3")
    raises_like_torch(lambda lib: lib.linalg.eigh(lib.ones(3)), ember.ShapeError,
                      "at least 2 dimensions")
    raises_like_torch(lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(4)), ember.ShapeError,
                      "linalg.solve: incompatible shapes")
    raises_like_torch(lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(3, dtype=lib.float64)),
                      ember.DTypeError, "same dtype")
    raises_like_torch(lambda lib: lib.linalg.solve_triangular(lib.eye(3), lib.ones(2, 3),
                                                              upper=True), ember.ShapeError,
                      "linalg.solve_triangular: incompatible shapes")
    raises_like_torch(lambda lib: lib.linalg.matrix_power(lib.zeros(2, 2), -1), LinAlgError,
                      "singular")
    raises_like_torch(lambda lib: lib.linalg.qr(lib.ones(2, 2), mode="x"), ValueError, "mode")
    raises_like_torch(lambda lib: lib.linalg.lu_factor(lib.zeros(2, 2)), LinAlgError,
                      r"U\[1,1\] is zero")


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 3), (0, 3)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_full_svd_jvp_of_a_non_square_matrix_as_torch(shape, dtype):
    # raised OpError 'forward-mode derivatives of full_matrices=True need a square matrix'
    # (opdb51b); torch's, as Ember's vjp: the first k vectors' tangents as the reduced SVD's,
    # a zero tangent for the extra ones
    rng = np.random.default_rng(0)
    a, da = (rng.standard_normal(shape) + (1j * rng.standard_normal(shape)
                                           if dtype == "complex128" else 0) for _ in range(2))
    k = min(shape[-2:])
    full = ember.func.jvp(lambda x: tuple(ember.linalg.svd(x)), (ember.tensor(a),),
                          (ember.tensor(da),))[1]
    reduced = ember.func.jvp(lambda x: tuple(ember.linalg.svd(x, full_matrices=False)),
                             (ember.tensor(a),), (ember.tensor(da),))[1]
    want = torch.func.jvp(lambda x: tuple(torch.linalg.svd(x)), (torch.tensor(a),),
                          (torch.tensor(da),))[1]
    assert [tuple(t.shape) for t in full] == [tuple(t.shape) for t in want]
    for got, red in zip(full, (reduced[0], reduced[1], reduced[2])):
        np.testing.assert_allclose(got.numpy()[tuple(slice(0, d) for d in red.shape)],
                                   red.numpy(), rtol=1e-10, atol=1e-12)
    assert not full[0][..., k:].numpy().any() and not full[2][..., k:, :].numpy().any()
    assert not want[0][..., k:].numpy().any() and not want[2][..., k:, :].numpy().any()
    assert_same(full[1], want[1], rtol=1e-12, atol=1e-12)


def test_non_differentiable_modes():
    x = ember.from_numpy(_np(3, 3, 2)).requires_grad_()
    with pytest.raises(ember.GradError, match="mode=.r."):
        ember.autograd.grad(ember.linalg.qr(x, mode="r").R.sum(), [x])
    with pytest.raises(ember.GradError, match="nrows > ncols"):
        ember.autograd.grad(ember.linalg.qr(x, mode="complete").Q.sum(), [x])


# -- vmap ------------------------------------------------------------------------------------
VMAPPED = [
    (lambda a: ember.linalg.inv(a), 1),
    (lambda a: ember.linalg.slogdet(a), 1),
    (lambda a: ember.linalg.det(a), 1),
    (lambda a, b: ember.linalg.solve(a, b), 2),
    (lambda a, b: ember.linalg.solve_triangular(a, b, upper=True, left=False), 2),
    (lambda a: ember.linalg.cholesky(a @ a.mT), 1),
    (lambda a: ember.linalg.qr(a), 1),
    (lambda a: ember.linalg.qr(a, mode="r"), 1),
    (lambda a: ember.linalg.eigh(a + a.mT), 1),
    (lambda a: ember.linalg.svd(a), 1),
    (lambda a: ember.linalg.pinv(a), 1),
    (lambda a: ember.linalg.matrix_exp(a), 1),
    (lambda a: ember.linalg.matrix_rank(a), 1),
    (lambda a, b: ember.linalg.lstsq(a, b).solution, 2),
    (lambda a: ember.linalg.lu_factor(a), 1),
    (lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b), 2),
]


@pytest.mark.parametrize("k", range(len(VMAPPED)))
def test_vmap(k):
    fn, nargs = VMAPPED[k]
    xs = [ember.from_numpy(_np(10 + i, 2, 3, 3)) for i in range(nargs)]
    for dims in [(0,) * nargs, (0,) + (None,) * (nargs - 1)]:
        args = [x if d == 0 else x[0] for x, d in zip(xs, dims)]
        got = ember.func.vmap(fn, in_dims=dims)(*args)
        want = [fn(*[x[b] if d == 0 else x for x, d in zip(args, dims)]) for b in range(2)]
        got = got if isinstance(got, tuple) else (got,)
        want = [w if isinstance(w, tuple) else (w,) for w in want]
        for i, g in enumerate(got):
            ref = np.stack([np.asarray(w[i]._data) for w in want])
            np.testing.assert_allclose(np.asarray(g._data), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_det_gradient_of_a_matrix_holding_nan_is_nan(dtype):
    # (the cofactors go through an SVD, which raised 'did not converge' on a NaN; PyTorch
    # gives NaN there, and the batch's finite matrices keep their gradients)
    a = np.array([[[1.0, np.nan, 2.0], [0.5, 3.0, 1.0], [2.0, 1.0, 0.0]],
                  [[1.0, 0.0, 2.0], [0.5, 3.0, 1.0], [2.0, 1.0, 0.0]]]).astype(dtype)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        lib.linalg.det(x).abs().sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6, equal_nan=True)
    assert np.isnan(grads[0][0]).all()
    x = ember.tensor(a[1:].astype(np.float64), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.linalg.det(t), (x,))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_solve_triangular_with_an_infinite_right_side_substitutes_as_torch(upper, left, k):
    # an inf in B: LU's row pivoting spread it into NaN where substitution (torch's trsm)
    # never reaches it ([[1, 0], [0.5, 1]] X = [0, inf] gave [nan, inf], torch [0, inf])
    lower = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.3, 0.2, 2.0]])
    a = lower.T if upper else lower
    b = np.zeros(3)
    b[k] = np.inf
    b = b[:, None] if left else b[None]
    ours = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=upper, left=left)
    theirs = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=upper,
                                           left=left)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("where", [(2, 2), (1, 0), (2, 0)])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_solve_triangular_with_a_non_finite_triangle_substitutes_as_torch(upper, left, where,
                                                                          bad):
    # inf/NaN in A (B finite): the LU solve spread NaN over all of X (and B's gradient, a
    # solve with Aᵀ); trsm's substitution keeps the entries it computes before reaching it
    lower = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.3, 0.2, 2.0]])
    lower[where] = bad
    a = lower.T if upper else lower
    b = np.ones((3, 1)) if left else np.ones((1, 3))
    out = []
    for lib in (ember, torch):
        x = lib.tensor(b, requires_grad=True)
        y = lib.linalg.solve_triangular(lib.tensor(a), x, upper=upper, left=left)
        y.sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_solve_left_false_with_a_non_finite_right_side_factors_A_as_torch(k, bad):
    # X A = B: torch factors A (getrs with transpose); solving Aᵀ Xᵀ = Bᵀ factored Aᵀ, whose
    # pivots put inf/NaN elsewhere ([1, inf, 1] gave all NaN, torch [inf, -inf, inf])
    a = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 1.0], [0.5, 0.0, 2.0]])
    b = np.ones((1, 3))
    b[0, k] = bad
    ours = ember.linalg.solve(ember.tensor(a), ember.tensor(b), left=False)
    theirs = torch.linalg.solve(torch.tensor(a), torch.tensor(b), left=False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("where", [(0, 0), (1, 1), (2, 1)])
def test_inv_and_solve_of_a_non_finite_matrix_spread_it_as_torch(dtype, bad, where):
    # NumPy's inv/solve (OpenBLAS) skip the zeros that torch's (MKL) multiplies by a NaN:
    # inv([[nan, 1], [1, 2]]) was [[nan, nan], [-1, 1]], torch's all NaN; such a matrix now
    # goes through LU substitution, its finite batch-mate keeps LAPACK's answer bit for bit
    if dtype == "complex128" and bad == np.inf:
        pytest.skip("MKL's complex division by inf is NaN (torch: all NaN), not LAPACK's")
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.5, 0.0, 4.0]], dtype=dtype)
    a[where] = bad
    good = np.eye(3, dtype=dtype) * 2 + 0.25
    batch = np.stack([good, a])
    b = np.ones((2, 3, 2), dtype=dtype)
    b[:, 0] = 0
    calls = [lambda lib, x, y: lib.linalg.inv(x), lambda lib, x, y: lib.linalg.inv_ex(x).inverse,
             lambda lib, x, y: lib.linalg.matrix_power(x, -1),
             lambda lib, x, y: lib.linalg.solve(x, y),
             lambda lib, x, y: lib.linalg.solve_ex(x, y).result,
             lambda lib, x, y: lib.linalg.solve(x, y.mT, left=False)]
    for call in calls:
        try:  # (an infinite pivot can leave a zero one: singular, as in torch)
            theirs = call(torch, torch.tensor(batch), torch.tensor(b)).resolve_conj().numpy()
        except RuntimeError:
            with pytest.raises(ember.linalg.LinAlgError, match="Batch element 1"):
                call(ember, ember.tensor(batch), ember.tensor(b))
            continue
        ours = call(ember, ember.tensor(batch), ember.tensor(b)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, equal_nan=True)
        if not ember.linalg.inv_ex(ember.tensor(a)).info:  # (a singular one: all by LU)
            alone = call(ember, ember.tensor(good[None]), ember.tensor(b[:1])).numpy()
            np.testing.assert_array_equal(ours[0], alone[0])


@pytest.mark.parametrize("column", [[0.0, np.nan, 1.0], [np.nan, 1.0, 2.0], [1.0, 0.0, np.nan],
                                    [0.0, 0.0, np.nan]])
def test_lu_pivoting_never_picks_a_nan_unless_it_comes_first_as_lapack(column):
    # LAPACK's i?amax starts from the first element and a NaN never compares larger, so a
    # NaN below a zero leaves a zero pivot: singular (info), as torch's
    a = np.array([[column[0], 1.0, 2.0], [column[1], 3.0, 1.0], [column[2], 1.0, 5.0]])
    t = torch.linalg.lu_factor_ex(torch.tensor(a))
    e = ember.linalg.lu_factor_ex(ember.tensor(a))
    assert e.pivots.tolist() == t.pivots.tolist()
    assert e.info.item() == t.info.item()
    assert ember.linalg.inv_ex(ember.tensor(a)).info.item() == \
        torch.linalg.inv_ex(torch.tensor(a)).info.item()
