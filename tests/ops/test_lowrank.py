"""svd_lowrank and pca_lowrank (lowrank.py) against torch: singular values and subspaces
(the random sketches differ), gradients by finite differences, and torch's errors."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import gradcheck
from tests.ops.optable import raises_like_torch

R = np.random.default_rng(0)


def _low_rank(shape, rank):
    *batch, m, n = shape
    return R.standard_normal((*batch, m, rank)) @ R.standard_normal((*batch, rank, n))


def _projector(basis):
    return basis @ np.swapaxes(basis, -1, -2)


@pytest.mark.parametrize("shape,rank,q", [((8, 5), 2, 4), ((5, 9), 3, 3), ((2, 7, 6), 2, 5)])
@pytest.mark.parametrize("niter", [0, 2])
def test_svd_lowrank_recovers_a_low_rank_matrix_as_torch(shape, rank, q, niter):
    a = _low_rank(shape, rank)
    ember.manual_seed(1)
    U, S, V = ember.svd_lowrank(ember.tensor(a), q=q, niter=niter)  # noqa: N806
    tU, tS, tV = torch.svd_lowrank(torch.tensor(a), q=q, niter=niter)  # noqa: N806
    assert tuple(U.shape) == tuple(tU.shape) and tuple(V.shape) == tuple(tV.shape)
    assert tuple(S.shape) == tuple(tS.shape) and S.dtype is ember.float64
    np.testing.assert_allclose(S.numpy()[..., :rank], tS.numpy()[..., :rank], rtol=1e-10)
    u, v = U.numpy()[..., :rank], V.numpy()[..., :rank]
    tu, tv = tU.numpy()[..., :rank], tV.numpy()[..., :rank]
    np.testing.assert_allclose(_projector(u), _projector(tu), atol=1e-10)
    np.testing.assert_allclose(_projector(v), _projector(tv), atol=1e-10)
    np.testing.assert_allclose((U.numpy() * S.numpy()[..., None, :]) @ np.swapaxes(
        V.numpy(), -1, -2), a, atol=1e-10)


def test_svd_lowrank_with_M_and_pca_lowrank_match_torch():
    a = _low_rank((9, 6), 6) + 3.0
    m = np.broadcast_to(a.mean(0, keepdims=True), a.shape)
    _, S, _ = ember.svd_lowrank(ember.tensor(a), q=6, M=ember.tensor(m[:1]))  # noqa: N806
    _, tS, _ = torch.svd_lowrank(torch.tensor(a), q=6, M=torch.tensor(m.copy()))  # noqa: N806
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-8)
    for center in (True, False):
        _, S, V = ember.pca_lowrank(ember.tensor(a), q=6, center=center)  # noqa: N806
        _, tS, tV = torch.pca_lowrank(torch.tensor(a), q=6, center=center)  # noqa: N806
        np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-8)
        np.testing.assert_allclose(_projector(V.numpy()[:, :2]), _projector(tV.numpy()[:, :2]),
                                   atol=1e-8)
    assert ember.pca_lowrank(ember.tensor(a))[1].shape == (6,)  # q = min(6, m, n)


def test_gradient_of_singular_values_matches_torch_and_fd():
    a = R.standard_normal((5, 3))
    x = ember.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)

    def svals(t):
        ember.manual_seed(0)  # (one sketch for every evaluation)
        return ember.svd_lowrank(t, q=3)[1]

    assert gradcheck(svals, (x,))
    svals(x).sum().backward()
    torch.svd_lowrank(tx, q=3)[1].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-10)


def test_errors():
    raises_like_torch(lambda lib: lib.pca_lowrank(lib.ones(3, 2), q=3), ValueError,
                      r"q\(=3\) must be non-negative integer and not greater than min\(m, n\)=2")
    raises_like_torch(lambda lib: lib.pca_lowrank(lib.ones(3, 2), niter=-1), ValueError,
                      r"niter\(=-1\) must be non-negative")
    with pytest.raises(ember.ShapeError, match="svd_lowrank: A must be a matrix"):
        ember.svd_lowrank(ember.ones(3))
