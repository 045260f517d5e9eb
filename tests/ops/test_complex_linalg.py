"""Linear algebra of complex matrices against PyTorch: values, gradients (reverse and forward
mode, against PyTorch and central differences in complex128 through the real and imaginary
parts), the phase checks of ``svd``/``eigh``/``eig`` and what PyTorch refuses."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import OpCase, S, arg, op_tests
from tests.ops.optable import complex_case as case


def _hpd(lib, z):
    """A Hermitian positive-definite matrix made from ``z``."""
    return z @ z.mH + 3 * lib.eye(z.shape[-1], dtype=z.dtype)


def _herm(z):
    return z + z.mH


CASES = [
    case("inv", lambda m, a: m.linalg.inv(a), (3, 3)),
    case("solve", lambda m, a, b: m.linalg.solve(a, b), (2, 3, 3), (3, 2)),
    case("solve_right", lambda m, a, b: m.linalg.solve(a, b, left=False), (3, 3), (2, 3)),
    case("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(
        a + 3 * m.eye(3), b, upper=True), (3, 3), (3, 2)),
    case("solve_triangular_right_unit", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), (3, 3), (2, 3)),
    case("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), (2, 3, 3)),
    case("det", lambda m, a: m.linalg.det(a), (2, 3, 3)),
    case("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), (2, 3, 3)),
    case("logdet", lambda m, a: m.logdet(a), (3, 3)),
    case("lu_factor", lambda m, a: m.linalg.lu_factor(a)[0], (3, 3)),
    case("lu_wide_tall", lambda m, a, b: (*m.linalg.lu(a)[1:], *m.linalg.lu(b)[1:]),
         (2, 3), (3, 2), gradgrad=False),
    case("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), (3, 3),
         (3, 2), gradgrad=False),
    case("lu_solve_adjoint_right", lambda m, a, b: m.linalg.lu_solve(
        *m.linalg.lu_factor(a), b, left=False, adjoint=True), (3, 3), (2, 3),
         gradgrad=False),
    case("cholesky", lambda m, a: m.linalg.cholesky(_hpd(m, a)), (2, 3, 3)),
    case("cholesky_upper", lambda m, a: m.linalg.cholesky(_hpd(m, a), upper=True), (3, 3)),
    case("qr", lambda m, a: tuple(m.linalg.qr(a)), (4, 3)),
    case("qr_wide", lambda m, a: tuple(m.linalg.qr(a)), (2, 3)),
    case("qr_complete_square", lambda m, a: tuple(m.linalg.qr(a, mode="complete")), (3, 3)),
    # eigenvectors and singular vectors enter through phase-invariant quantities
    case("eigh", lambda m, a: (lambda w, v: (w, v.abs(), v @ v.mH * w[..., :1, None]))(
        *m.linalg.eigh(_herm(a))), (2, 3, 3)),
    case("eigvalsh_upper", lambda m, a: m.linalg.eigvalsh(_herm(a), UPLO="U"), (3, 3)),
    case("svd", lambda m, a: (lambda u, s, vh: (s, u.abs(), u @ vh))(
        *m.linalg.svd(a, full_matrices=False)), (4, 3)),
    case("svd_wide", lambda m, a: (lambda u, s, vh: (u[..., :2] @ vh[..., :2, :], vh.abs()))(
        *m.linalg.svd(a, full_matrices=False)), (3, 4), gradgrad=False),
    case("svdvals", lambda m, a: m.linalg.svdvals(a), (3, 2)),
    case("eig", lambda m, a: (lambda w, v: (w, v.abs()))(*m.linalg.eig(a)), (2, 3, 3)),
    case("eigvals", lambda m, a: m.linalg.eigvals(a), (3, 3)),
    case("pinv", lambda m, a: m.linalg.pinv(a), (2, 3, 2)),
    case("pinv_wide", lambda m, a: m.linalg.pinv(a), (2, 3)),
    case("lstsq", lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelsd")), (4, 3), (4, 2),
         gradgrad=False),
    case("matrix_norms", lambda m, a: m.stack([m.linalg.matrix_norm(a, o) for o in (
        "fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf"))]), (2, 3, 3), gradgrad=False),
    case("cross", lambda m, a, b: m.linalg.cross(a, b), (2, 3), (2, 3), gradgrad=False),
    case("householder_product", lambda m, a, t: m.linalg.householder_product(a, t[0, :2]),
         (3, 2), (2, 2), gradgrad=False),
    case("cholesky_solve_inverse", lambda m, a, b: (
        m.cholesky_solve(b, m.linalg.cholesky(_hpd(m, a))),
        m.cholesky_inverse(m.linalg.cholesky(_hpd(m, a), upper=True), upper=True)),
        (3, 3), (3, 2), gradgrad=False),
    case("cond_tensorinv", lambda m, a: (m.linalg.cond(a), m.linalg.cond(a, "nuc"),
                                         m.linalg.tensorinv(a.reshape(3, 3, 1), ind=1)),
         (3, 3), gradgrad=False),
    # vecdot conjugates x: sum(conj(x) * y), along any dim
    case("vecdot", lambda m, x, y: m.linalg.vecdot(x, y), (2, 3), (2, 3)),
    case("vecdot_dim0", lambda m, x, y: m.linalg.vecdot(x, y, dim=0), (3, 2), (3, 1)),
    case("vecdot_dim1", lambda m, x, y: m.linalg.vecdot(x, y, dim=1), (2, 3, 2), (3, 1)),
    case("vecdot_0d", lambda m, x, y: m.linalg.vecdot(x, y), (), ()),
    case("triangular_solve", lambda m, b, a: tuple(m.triangular_solve(b, a + 3 * m.eye(3))),
         (3, 2), (2, 3, 3)),
    case("triangular_solve_lower_t", lambda m, b, a: m.triangular_solve(
        b, a + 3 * m.eye(3), upper=False, transpose=True).solution, (3, 2), (3, 3)),
    case("triangular_solve_unit", lambda m, b, a: m.triangular_solve(
        b, a, unitriangular=True).solution, (3, 2), (3, 3)),
]

CASES += [  # eig of real matrices: complex results, real gradients
    OpCase("eig_real", lambda a: (lambda w, v: (ember.view_as_real(w), v.abs()))(
        *ember.linalg.eig(a)), lambda a: (lambda w, v: (torch.view_as_real(w), v.abs()))(
        *torch.linalg.eig(a)), [S(arg(2, 3, 3))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


RNG = np.random.default_rng(0)
Z = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))


def _both(fn):
    """``fn(lib, z)`` for a complex128 leaf ``z`` in each library: the results and gradients."""
    out = {}
    for lib in (torch, ember):
        z = lib.tensor(Z, requires_grad=True)
        loss = fn(lib, z)
        loss.backward()
        out[lib] = (loss.item(), np.asarray(z.grad.detach().numpy()))
    return out


@pytest.mark.parametrize("fn", [
    lambda m, z: m.linalg.svd(z)[0].sum().real,
    lambda m, z: m.linalg.svd(z)[2][0].real.sum(),
    lambda m, z: m.linalg.eigh(_herm(z))[1].sum().imag,
    lambda m, z: m.linalg.eig(z)[1][0].real.sum(),
], ids=["svd_U", "svd_Vh", "eigh", "eig"])
def test_losses_that_depend_on_phases_raise_as_torch(fn):
    t = torch.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        fn(torch, t).backward()
    z = ember.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\(i phi\\)"):
        fn(ember, z).backward()


@pytest.mark.parametrize("fn", [
    lambda m, z: (m.linalg.svd(z)[0][:, 0] * m.linalg.svd(z)[2][0].conj()).abs().sum(),
    lambda m, z: m.linalg.svd(z)[0].abs().sum() + m.linalg.svd(z)[1].sum(),
    lambda m, z: (m.linalg.eigh(_herm(z))[1] ** 2).abs().sum(),
    lambda m, z: m.linalg.slogdet(z)[0].imag + m.linalg.det(z).real,
], ids=["svd_outer", "svd_abs", "eigh_abs", "slogdet_sign"])
def test_phase_invariant_losses_match_torch(fn):
    out = _both(fn)
    assert out[ember][0] == pytest.approx(out[torch][0], rel=1e-10)
    np.testing.assert_allclose(out[ember][1], out[torch][1], atol=1e-10)


def _unit_phase(v):
    """Each column turned so that its largest component is real and positive (LAPACK makes it
    real; its sign differs between LAPACK builds)."""
    top = v[np.abs(v).argmax(axis=0), np.arange(v.shape[1])]
    return v * (np.abs(top) / top)


def test_eig_of_a_real_matrix_with_complex_eigenvalues_matches_torch():
    a = np.array([[0.0, -2.0, 1.0], [2.0, 0.0, 0.5], [0.0, 0.3, 1.0]])
    for e_dt, t_dt in ((ember.float32, torch.float32), (ember.float64, torch.float64)):
        w, v = ember.linalg.eig(ember.tensor(a, dtype=e_dt))
        tw, tv = torch.linalg.eig(torch.tensor(a, dtype=t_dt))
        assert (w.dtype.name, v.dtype.name) == (str(tw.dtype)[6:], str(tv.dtype)[6:])
        np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=1e-5)
        np.testing.assert_allclose(_unit_phase(v.numpy()), _unit_phase(tv.numpy()), atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=0), 1, rtol=1e-5)
    x = ember.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    ember.linalg.eigvals(x).imag.abs().sum().backward()
    torch.linalg.eigvals(t).imag.abs().sum().backward()
    assert x.grad.dtype is ember.float64
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-10)


def test_eig_refuses_what_torch_refuses():
    for lib in (torch, ember):
        with pytest.raises((RuntimeError, ember.ShapeError)):
            lib.linalg.eig(lib.ones(2, 3))
        with pytest.raises((RuntimeError, ember.DTypeError)):
            lib.linalg.eig(lib.ones(2, 2, dtype=lib.int64))


def test_operands_of_different_dtypes_are_refused():
    for lib in (torch, ember):
        with pytest.raises((RuntimeError, ember.DTypeError)):
            lib.linalg.solve(lib.tensor(Z), lib.ones(3, dtype=lib.float64))


def test_solve_triangular_converts_a_real_right_side_to_a_complex_A_as_torch():
    A = ember.tensor(np.triu(Z) + 3 * np.eye(3), requires_grad=True)
    B = ember.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    X = ember.linalg.solve_triangular(A, B, upper=True)
    At = torch.tensor(A.detach().numpy(), requires_grad=True)
    Bt = torch.tensor(B.detach().numpy(), requires_grad=True)
    assert X.dtype is ember.complex128
    Xt = torch.linalg.solve_triangular(At, Bt.to(torch.complex128), upper=True)  # (torch's
    np.testing.assert_allclose(X.detach().numpy(), Xt.detach().numpy(), rtol=1e-12)  # mixed
    X.abs().sum().backward()  # backward fails, so its reference converts B itself)
    Xt.abs().sum().backward()
    assert B.grad.dtype is ember.float64
    np.testing.assert_allclose(B.grad.numpy(), Bt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(A.grad.numpy(), At.grad.resolve_conj().numpy(), rtol=1e-10)
    assert ember.autograd.gradcheck(
        lambda a, b: ember.linalg.solve_triangular(a, b, upper=True), (A, B))


@pytest.mark.parametrize("a_dtype, b_dtype", [("complex64", "float64"),
                                               ("float64", "complex128"),
                                               ("float32", "float64")])
def test_solve_triangular_refuses_mixes_that_would_lose_information(a_dtype, b_dtype):
    # (PyTorch solves in A's dtype: it drops B's imaginary part or precision)
    A = ember.eye(2, dtype=getattr(ember, a_dtype))
    with pytest.raises(ember.DTypeError, match="operands must have the same dtype.*Hint"):
        ember.linalg.solve_triangular(A, ember.ones(2, 1, dtype=getattr(ember, b_dtype)),
                                      upper=True)


def test_cond_in_the_frobenius_norm_matches_torch():
    # (torch's backward of this one fails on its own in-place write: values only)
    assert ember.linalg.cond(ember.tensor(Z), "fro").item() == pytest.approx(
        torch.linalg.cond(torch.tensor(Z), "fro").item(), rel=1e-10)


def test_ldl_solve_refuses_a_complex_right_side_for_a_real_factor():
    ld, piv = ember.linalg.ldl_factor(ember.eye(2, dtype=ember.float64))
    with pytest.raises(ember.DTypeError, match="linalg.ldl_solve"):
        ember.linalg.ldl_solve(ld, piv, ember.tensor(Z[:, :1]))


HPD = Z @ Z.conj().T + 3 * np.eye(3)  # a Hermitian positive-definite leaf, used as it is


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("fn", [
    lambda m, a, upper: m.linalg.cholesky(a, upper=upper),
    lambda m, a, upper: m.linalg.cholesky_ex(a, upper=upper).L,
    lambda m, a, upper: m.cholesky(a, upper=upper),
], ids=["linalg.cholesky", "cholesky_ex", "cholesky"])
def test_cholesky_gradients_of_a_hermitian_leaf_match_torch(fn, upper):
    # (a leaf, not z zᴴ: a conjugated gradient of the upper factor shows only here)
    w = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))
    grads = []
    for lib in (torch, ember):
        a = lib.tensor(HPD, requires_grad=True)
        (fn(lib, a, upper) * lib.tensor(w)).real.sum().backward()
        grads.append(np.asarray(a.grad.detach().numpy()))
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_forward_mode_matches_torch(upper):
    tangent = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))  # not Hermitian
    import torch.autograd.forward_ad as fwd
    with fwd.dual_level():
        dual = fwd.make_dual(torch.tensor(HPD), torch.tensor(tangent))
        ref = fwd.unpack_dual(torch.linalg.cholesky(dual, upper=upper)).tangent
    _, mine = ember.autograd.forward.jvp(lambda a: ember.linalg.cholesky(a, upper=upper),
                                         (ember.tensor(HPD),), (ember.tensor(tangent),))
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda lib, x, d: lib.linalg.vector_norm(x, dtype=d),
    lambda lib, x, d: lib.linalg.matrix_norm(x, dtype=d),
    lambda lib, x, d: lib.linalg.matrix_norm(x, "nuc", dtype=d),
    lambda lib, x, d: lib.linalg.norm(x, dtype=d)])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_complex_norm_dtype_of_a_real_input_is_refused_as_torch(fn, dtype):
    # (vector_norm returned a complex norm, matrix_norm ignored the dtype)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with pytest.raises(RuntimeError, match="dtype should be real"):
        fn(torch, torch.from_numpy(x), getattr(torch, dtype))
    with pytest.raises(ember.DTypeError, match="dtype must be a real dtype, got dtype=complex"
                                               r".*such as dtype=ember.float32$"):
        fn(ember, ember.from_numpy(x), getattr(ember, dtype))


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 1.0), (3, 1, 0.5), (1, -1, 1.0),
                                             (float("inf"), 1, 0.7)])
def test_renorm_of_a_complex_tensor_matches_torch(p, dim, maxnorm):
    # (renorm refused complex input; PyTorch scales by the norm of the moduli)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))
    w = rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    got = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.renorm(t, p, dim, maxnorm)
        (y * lib.tensor(w)).real.sum().backward()
        got.append((y.detach().numpy(), t.grad.numpy()))
    for e, t in zip(*got):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-14)
    assert ember.renorm(ember.tensor(x.astype(np.complex64)), p, dim, maxnorm).dtype == \
        ember.complex64
    t = ember.tensor(x, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: ember.renorm(a, p, dim, maxnorm), (t,))
    with pytest.raises(ember.DTypeError, match="renorm: expected a floating or complex input"):
        ember.renorm(ember.ones(2, 3, dtype=ember.int64), p, dim, maxnorm)


@pytest.mark.parametrize("fn", [
    lambda lib, a: lib.linalg.svdvals(a), lambda lib, a: lib.linalg.svd(a),
    lambda lib, a: lib.linalg.eigh(a), lambda lib, a: lib.linalg.eigvalsh(a),
    lambda lib, a: lib.linalg.eig(a), lambda lib, a: lib.linalg.pinv(a)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_decompositions_of_non_finite_input_raise_linalg_error_as_torch(fn, dtype):
    # (svd, eigh and pinv raised an OpError wrapping NumPy's 'SVD did not converge', which
    # `except LinAlgError` missed; the message now names the batch element with NaN or inf)
    a = np.random.default_rng(3).standard_normal((2, 3, 3)).astype(dtype)
    a[1, 1, 1] = np.nan
    with pytest.raises(RuntimeError):  # (torch's LinAlgError; eig's a plain RuntimeError)
        fn(torch, torch.from_numpy(a))
    with pytest.raises(ember.linalg.LinAlgError, match=r"\(Batch element 1\): the algorithm "
                                                       r"failed to converge because the input "
                                                       r"matrix contains non-finite values"):
        fn(ember, ember.from_numpy(a))
