"""PyTorch's pre-linalg spellings (linalg_legacy.py): lu, lu_solve, triangular_solve, geqrf,
orgqr, ormqr, and the removed functions' errors, against PyTorch and finite differences."""

import warnings

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import S, arg, assert_same, op_tests, raises_like_torch
from tests.ops.test_linalg_decomp import dominant, row

U = dict(low=-1.0, high=1.0)


def _quiet(f):
    """``f`` with the deprecation warnings of ``lu`` silenced (PyTorch's and Ember's)."""
    def run(*a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*a)
    return run


def _lu_solve(lib, a, b):
    lu, piv = lib.linalg.lu_factor(dominant(lib, a))
    return lib.lu_solve(b, lu, piv)


CASES = [
    row("lu_legacy", _quiet(lambda lib, x: lib.lu(x)[0]), [S(arg(3, 3)), S(arg(2, 3, 4))]),
    row("lu_legacy_method", _quiet(lambda lib, x: x.lu(get_infos=True)[0]), [S(arg(4, 3))]),
    row("lu_solve_legacy", _lu_solve, [S(arg(3, 3, **U), arg(3, 2)),
                                       S(arg(2, 3, 3, **U), arg(3, 1))]),
    row("triangular_solve", lambda lib, b, a: tuple(lib.triangular_solve(b, dominant(lib, a))),
        [S(arg(3, 2), arg(3, 3, **U)), S(arg(3, 2), arg(2, 3, 3, **U))]),
    row("triangular_solve_lower_t",
        lambda lib, b, a: b.triangular_solve(dominant(lib, a), False, True)[0],
        [S(arg(2, 3, 2), arg(3, 3, **U))]),
    row("triangular_solve_unit",
        lambda lib, b, a: lib.triangular_solve(b, a, unitriangular=True).solution,
        [S(arg(3, 2), arg(3, 3, **U))]),
    row("orgqr", lambda lib, a, t: lib.orgqr(a, t), [S(arg(4, 3), arg(2))]),
    row("ormqr", lambda lib, a, t, c: lib.ormqr(a, t, c),
        [S(arg(4, 3), arg(3), arg(4, 2)), S(arg(2, 3, 4), arg(2, 3), arg(2, 3, 2))]),
    row("ormqr_right_t", lambda lib, a, t, c: a.ormqr(t, c, left=False, transpose=True),
        [S(arg(4, 2), arg(2), arg(3, 4))]),
]
(test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp) = op_tests(CASES)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_geqrf_matches_lapack(shape):
    x = np.random.default_rng(0).standard_normal(shape)
    assert_same(tuple(ember.geqrf(ember.from_numpy(x))), tuple(torch.geqrf(torch.from_numpy(x))),
                atol=1e-12)
    a, tau = ember.from_numpy(x).geqrf()
    q = ember.orgqr(a, tau) if shape[-2] >= shape[-1] else ember.orgqr(a[..., :shape[-2]], tau)
    np.testing.assert_allclose((q @ a.triu()[..., :q.shape[-1], :]).numpy(), x, atol=1e-12)


def test_lu_get_infos_and_warning():
    with pytest.warns(UserWarning, match="linalg.lu_factor"):
        result = ember.lu(ember.zeros(2, 2), get_infos=True)
    assert result.info.item() == 1 and tuple(result._fields) == ("LU", "pivots", "info")
    with pytest.warns(UserWarning):
        assert len(ember.lu(ember.eye(2))) == 2


def test_errors():
    raises_like_torch(lambda lib: lib.geqrf(lib.ones(3, requires_grad=False)), ember.ShapeError,
                      "geqrf")
    raises_like_torch(lambda lib: lib.geqrf(lib.ones(3, 2, requires_grad=True))[0].sum()
                      .backward(), ember.GradError, "derivative for 'geqrf' is not implemented")
    raises_like_torch(lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(3, 2)),
                      ember.ShapeError, r"other.shape\[-2\] must be equal to input.shape\[-2\]")
    raises_like_torch(lambda lib: lib.triangular_solve(lib.ones(3, 2), lib.ones(2, 3)),
                      ember.ShapeError, "square")
    for name, args in [("solve", 2), ("eig", 1), ("lstsq", 2), ("symeig", 1), ("matrix_rank", 1)]:
        raises_like_torch(lambda lib, n=name, k=args: getattr(lib, n)(*[lib.eye(2)] * k),
                          ember.errors.OpError, f"{name}: .*removed. Hint: use ember.linalg")
    for name in ("solve", "eig", "lstsq", "symeig"):
        assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name)
    assert not hasattr(ember.Tensor, "matrix_rank") and not hasattr(torch.Tensor, "matrix_rank")


def test_geqrf_under_vmap():
    x = np.random.default_rng(4).standard_normal((3, 4, 2))
    a, tau = ember.func.vmap(ember.geqrf)(ember.from_numpy(x))
    assert_same((a, tau), tuple(torch.geqrf(torch.from_numpy(x))), atol=1e-12)


def test_ormqr_refuses_the_shapes_torch_refuses():
    a, tau = ember.geqrf(ember.ones(2, 4, 3) + ember.eye(4, 3))
    for other, taus, match in [
            (ember.ones(4, 2), tau, "same number of dimensions"),           # no broadcasting
            (ember.ones(3, 4, 2), tau, r"batch dimensions of other"),
            (ember.ones(2, 4, 2), tau[0], "one dimension less"),
            (ember.ones(2, 4, 2), tau.expand(3, 2, 3)[0, :1], r"batch dimensions of tau"),
            (ember.ones(2, 4, 2), tau[..., :2], r"tau.shape\[-1\] must be equal to min")]:
        with pytest.raises(ember.ShapeError, match=f"ormqr: .*{match}"):
            ember.ormqr(a, taus, other)
    t_a, t_tau = torch.geqrf(torch.from_numpy(a.numpy()))
    with pytest.raises(RuntimeError, match="must be equal to min"):
        torch.ormqr(t_a, t_tau[..., :2], torch.ones(2, 4, 2))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_geqrf_and_ormqr_match_torch(dtype):
    # (geqrf and ormqr refused complex input; PyTorch takes it, and ormqr's transpose is Qᴴ)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 5, 3)) + 1j * rng.standard_normal((2, 5, 3))).astype(dtype)
    c = (rng.standard_normal((2, 5, 2)) + 1j * rng.standard_normal((2, 5, 2))).astype(dtype)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    e_qr, t_qr = ember.geqrf(ember.from_numpy(x)), torch.geqrf(torch.from_numpy(x))
    assert_same(tuple(e_qr), tuple(t_qr), atol=tol)
    for left in (True, False):
        other = c if left else c.swapaxes(-1, -2).copy()  # (C Q multiplies rows of 5)
        for transpose in (False, True):
            assert_same(ember.ormqr(*e_qr, ember.from_numpy(other), left=left,
                                    transpose=transpose),
                        torch.ormqr(*t_qr, torch.from_numpy(other), left=left,
                                    transpose=transpose), atol=tol)


def test_complex_ormqr_gradients_match_torch():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    c = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    w = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    a, tau = ember.geqrf(ember.from_numpy(x))
    grads = []
    for lib, (h, t) in [(ember, (a.numpy(), tau.numpy())), (torch, (a.numpy(), tau.numpy()))]:
        h, t, o = (lib.tensor(v, requires_grad=True) for v in (h, t, c))
        (lib.ormqr(h, t, o, transpose=True) * lib.tensor(w)).real.sum().backward()
        grads.append([v.grad.numpy() for v in (h, t, o)])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    args = tuple(ember.tensor(v, requires_grad=True) for v in (a.numpy(), tau.numpy(), c))
    assert ember.autograd.gradcheck(lambda h, t, o: ember.ormqr(h, t, o, transpose=True), args)
