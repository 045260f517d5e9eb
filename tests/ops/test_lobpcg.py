"""ember.lobpcg against torch.lobpcg: eigenvalues of random SPD matrices (both methods, both
ends, float32/float64), the generalized problem, sparse and batched input, the tracker, bad
input, and the gradient (gradcheck and PyTorch's on the same start)."""

import numpy as np
import pytest
import torch

import ember


def _spd(m, seed, spectrum=None):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    w = np.arange(1.0, m + 1.0) if spectrum is None else spectrum
    return (q * w) @ q.T, rng.standard_normal((m, 3))


def _eigvals(a, b=None):
    if b is None:
        return np.linalg.eigvalsh(a)
    lower = np.linalg.cholesky(b)
    inv = np.linalg.inv(lower)
    return np.linalg.eigvalsh(inv @ a @ inv.T)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_eigenvalues_match_torch_and_numpy(method, largest):
    a, x0 = _spd(30, 0)
    E, X = ember.lobpcg(ember.tensor(a), k=3, X=ember.tensor(x0), method=method,  # noqa: N806
                        largest=largest)
    Et, _ = torch.lobpcg(torch.tensor(a), k=3, X=torch.tensor(x0), method=method,  # noqa: N806
                         largest=largest)
    w = np.linalg.eigvalsh(a)
    want = w[::-1][:3] if largest else w[:3]
    np.testing.assert_allclose(E.numpy(), Et.numpy(), rtol=1e-6)
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-6)
    # the eigenvectors: orthonormal and with small residuals
    x = X.numpy()
    np.testing.assert_allclose(x.T @ x, np.eye(3), atol=1e-6)
    np.testing.assert_allclose(a @ x, x * E.numpy(), atol=1e-5)


def test_float32_random_start_and_preconditioner():
    a, _ = _spd(40, 1)
    ember.manual_seed(0)
    A = ember.tensor(a, dtype=ember.float32)  # noqa: N806
    E, X = ember.lobpcg(A, k=2)  # noqa: N806
    assert E.dtype == X.dtype == ember.float32 and tuple(X.shape) == (40, 2)
    np.testing.assert_allclose(E.numpy(), np.linalg.eigvalsh(a)[::-1][:2], rtol=1e-4)
    iK = ember.tensor(np.linalg.inv(a), dtype=ember.float32)  # noqa: N806
    E, _ = ember.lobpcg(A, k=2, largest=False, iK=iK)  # noqa: N806
    np.testing.assert_allclose(E.numpy(), np.linalg.eigvalsh(a)[:2], rtol=1e-4)


@pytest.mark.parametrize("method", ["ortho", "basic"])
def test_generalized_problem(method):
    a, x0 = _spd(24, 2)
    b, _ = _spd(24, 3, spectrum=np.linspace(1.0, 3.0, 24))
    E, X = ember.lobpcg(ember.tensor(a), k=2, B=ember.tensor(b), X=ember.tensor(x0[:, :2]),  # noqa: N806
                        method=method, largest=False)
    if method == "ortho":  # torch's 'basic' finds the smallest pair twice here (it locks
        # converged pairs without keeping the basis B-orthogonal to them); Ember's does not
        Et, _ = torch.lobpcg(torch.tensor(a), k=2, B=torch.tensor(b),  # noqa: N806
                             X=torch.tensor(x0[:, :2]), method=method, largest=False)
        np.testing.assert_allclose(E.numpy(), Et.numpy(), rtol=1e-6)
    np.testing.assert_allclose(E.numpy(), _eigvals(a, b)[:2], rtol=1e-6)
    x = X.numpy()
    np.testing.assert_allclose(x.T @ b @ x, np.eye(2), atol=1e-6)  # B-orthonormal


def test_sparse_input_with_a_wider_start():
    a, x0 = _spd(30, 4)
    a[np.abs(a) < 0.3] = 0.0
    a += 3.0 * np.eye(30)  # diagonally dominant, so still SPD after the thinning
    E, X = ember.lobpcg(ember.tensor(a).to_sparse(), k=2, X=ember.tensor(x0))  # noqa: N806
    Et, _ = torch.lobpcg(torch.tensor(a).to_sparse(), k=2, X=torch.tensor(x0))  # noqa: N806
    assert tuple(E.shape) == (2,) and tuple(X.shape) == (30, 2)  # k of the n = 3 columns
    np.testing.assert_allclose(E.numpy(), Et.numpy(), rtol=1e-6)
    np.testing.assert_allclose(E.numpy(), np.linalg.eigvalsh(a)[::-1][:2], rtol=1e-6)


def test_batch_and_integer_input():
    a0, x0 = _spd(15, 5)
    a1, x1 = _spd(15, 6, spectrum=np.arange(2.0, 32.0, 2.0))
    A = ember.tensor(np.stack([a0, a1]))  # noqa: N806
    E, X = ember.lobpcg(A, k=1, X=ember.tensor(np.stack([x0[:, :1], x1[:, :1]])))  # noqa: N806
    assert tuple(X.shape) == (2, 15, 1)
    np.testing.assert_allclose(E.numpy(), [[15.0], [30.0]], rtol=1e-6)
    ember.manual_seed(1)
    E, _ = ember.lobpcg(ember.tensor(np.diag(np.arange(1, 10))), k=1)  # noqa: N806
    assert E.dtype == ember.float32
    np.testing.assert_allclose(E.numpy(), [9.0], rtol=1e-4)


def test_tracker_sees_each_step_and_can_stop():
    a, x0 = _spd(30, 7)
    steps = []

    def tracker(worker):
        steps.append((worker.ivars["istep"], worker.tvars["rerr"].shape))
        if worker.ivars["istep"] == 3:
            worker.bvars["force_stop"] = True

    ember.lobpcg(ember.tensor(a), k=3, X=ember.tensor(x0), tracker=tracker)
    assert steps == [(1, (3,)), (2, (3,)), (3, (3,))]
    _, _ = ember.lobpcg(ember.tensor(a), k=3, X=ember.tensor(x0), niter=2,
                        tracker=lambda w: steps.append(w.ivars["istep"]))
    assert steps[3:] == [1, 2]


def test_ortho_params_reach_the_worker():
    a, x0 = _spd(30, 8)
    seen = {}
    E, _ = ember.lobpcg(ember.tensor(a), k=2, X=ember.tensor(x0[:, :2]),  # noqa: N806
                        ortho_iparams={"ortho_i_max": 5}, ortho_fparams={"ortho_tol": 1e-10},
                        ortho_bparams={"ortho_use_drop": True},
                        tracker=lambda w: seen.update(w.iparams, **w.fparams, **w.bparams))
    assert seen["ortho_i_max"] == 5 and seen["ortho_tol"] == 1e-10 and seen["ortho_use_drop"]
    np.testing.assert_allclose(E.numpy(), [30.0, 29.0], rtol=1e-6)


def test_bad_input():
    a, _ = _spd(9, 9)
    A = ember.tensor(a)  # noqa: N806
    with pytest.raises(ValueError, match="lobpcg: A must be a square matrix"):
        ember.lobpcg(ember.ones(9, 8))
    with pytest.raises(ValueError, match=r"lobpcg: .*not applicable .*\(=9\).*\(=4\)"):
        ember.lobpcg(A, k=4)
    with pytest.raises(ValueError, match=r"not applicable"):  # torch's rule too
        torch.lobpcg(torch.tensor(a), k=4)
    with pytest.raises(ValueError, match="lobpcg: A and B must have the same shape"):
        ember.lobpcg(A, B=ember.eye(8))
    with pytest.raises(ValueError, match="lobpcg: X must have A's shape"):
        ember.lobpcg(A, X=ember.ones(8, 1, dtype=ember.float64))
    with pytest.raises(ValueError, match="lobpcg: method must be 'basic' or 'ortho'"):
        ember.lobpcg(A, method="fast")
    with pytest.raises(ValueError, match=r"lobpcg: k \(=2\) .* n \(=1\)"):
        ember.lobpcg(A, k=2, n=1)


@pytest.mark.parametrize("largest", [True, False])
def test_gradient_matches_torch(largest):
    a, x0 = _spd(12, 10)
    w = np.random.default_rng(11).standard_normal((12, 2))

    def loss(lib, A):  # noqa: N803 - eigenvector signs fixed by their first entries
        E, U = lib.lobpcg(A, k=2, X=lib.tensor(x0[:, :2]), largest=largest, tol=1e-13)  # noqa: N806
        return (E * E).sum() + (U * U[0:1].sign() * lib.tensor(w)).sum()

    A = ember.tensor(a, requires_grad=True)  # noqa: N806
    loss(ember, A).backward()
    At = torch.tensor(a, requires_grad=True)  # noqa: N806
    loss(torch, At).backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), atol=1e-9)
    np.testing.assert_allclose(A.grad.numpy(), A.grad.numpy().T)  # symmetric, as torch's


def _two_eigenpairs(x0):
    """A's two largest eigenpairs from the start ``x0``, eigenvectors' signs fixed (so that
    finite differences see a smooth function)."""
    def eigenpairs(A):  # noqa: N803
        E, U = ember.lobpcg(A, k=2, X=ember.tensor(x0[:, :2]), tol=1e-14, niter=300)  # noqa: N806
        return E, U * U[0:1].sign().detach()
    return eigenpairs


def test_gradcheck():
    a, x0 = _spd(6, 12)
    assert ember.autograd.gradcheck(_two_eigenpairs(x0), (ember.tensor(a, requires_grad=True),),
                                    atol=1e-5, rtol=1e-4)


def test_backward_refuses_what_torch_refuses():
    a, x0 = _spd(9, 13)
    A = ember.tensor(a, requires_grad=True)  # noqa: N806
    E, _ = ember.lobpcg(A, B=ember.eye(9, dtype=ember.float64), X=ember.tensor(x0[:, :1]))  # noqa: N806
    with pytest.raises(ember.errors.GradError, match="backward with B"):
        E.sum().backward()
    S = ember.tensor(a).to_sparse().requires_grad_()  # noqa: N806
    with pytest.raises(ValueError, match="lobpcg: gradients through sparse A"):
        ember.lobpcg(S, X=ember.tensor(x0[:, :1]))


def test_niter_minus_one_iterates_until_convergence():
    # PyTorch's documented rule: niter=-1 iterates until the tolerance is met
    a, x0 = _spd(30, 14)
    E, _ = ember.lobpcg(ember.tensor(a), k=2, X=ember.tensor(x0[:, :2]), niter=-1)  # noqa: N806
    Et, _ = torch.lobpcg(torch.tensor(a), k=2, X=torch.tensor(x0[:, :2]), niter=-1)  # noqa: N806
    np.testing.assert_allclose(E.numpy(), Et.numpy(), rtol=1e-6)
    np.testing.assert_allclose(E.numpy(), [30.0, 29.0], rtol=1e-6)


def test_a_tolerance_below_rounding_runs_to_niter():
    # tol=0 (or one under float32's rounding) cannot be met: PyTorch keeps the best
    # orthogonalisation after ortho_i_max rounds and stops at niter, and so does Ember
    a, x0 = _spd(12, 15)
    for tol, dtype in ((0.0, np.float64), (1e-13, np.float32)):
        A, X = ember.tensor(a.astype(dtype)), ember.tensor(x0[:, :2].astype(dtype))  # noqa: N806
        E, _ = ember.lobpcg(A, k=2, X=X, tol=tol, niter=20)  # noqa: N806
        Et, _ = torch.lobpcg(torch.tensor(a.astype(dtype)), k=2,  # noqa: N806
                             X=torch.tensor(x0[:, :2].astype(dtype)), tol=tol, niter=20)
        np.testing.assert_allclose(E.numpy(), Et.numpy(), rtol=1e-5)


def test_complex_input_is_refused():
    a, _ = _spd(9, 16)
    with pytest.raises(ember.errors.DTypeError, match="lobpcg: .*complex"):
        ember.lobpcg(ember.tensor(a.astype(np.complex128)))


def test_second_derivative_matches_finite_differences():
    # double backward differentiates the eigenpairs inside the gradient formula too, as
    # PyTorch's (whose gradgradcheck passes): with them held fixed it was silently wrong
    a, x0 = _spd(6, 17)
    assert ember.autograd.gradgradcheck(_two_eigenpairs(x0),
                                        (ember.tensor(a, requires_grad=True),),
                                        atol=1e-4, rtol=1e-3)


def test_empty_batch_and_empty_block():
    E, X = ember.lobpcg(ember.zeros(0, 12, 12, dtype=ember.float64), k=2)  # noqa: N806
    Et, Xt = torch.lobpcg(torch.zeros(0, 12, 12, dtype=torch.float64), k=2)  # noqa: N806
    assert tuple(E.shape) == tuple(Et.shape) and tuple(X.shape) == tuple(Xt.shape)
    with pytest.raises(ValueError, match=r"lobpcg: .*n \(=0\)"):  # (PyTorch: ZeroDivisionError)
        ember.lobpcg(ember.eye(12, dtype=ember.float64), X=ember.ones(12, 0, dtype=ember.float64))
