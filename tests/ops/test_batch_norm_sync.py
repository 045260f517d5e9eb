"""SyncBatchNorm's kernels (batch_norm_sync.py): composed over a batch split into "ranks"
they give torch's batch norm, forward and backward; batch_norm_update_stats against torch."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import gradcheck
from tests.ops.optable import assert_same

R = np.random.default_rng(0)
X = R.standard_normal((6, 3, 4))
W, B = R.uniform(0.5, 2, 3), R.standard_normal(3)
EPS = 1e-5


@pytest.mark.parametrize("split", [(3, 3), (1, 2, 3)])
def test_sync_kernels_compose_to_batch_norm(split):
    parts = np.split(X, np.cumsum(split)[:-1])
    tensors = [ember.tensor(p) for p in parts]
    stats = [ember.batch_norm_stats(t, EPS) for t in tensors]
    counts = ember.tensor([float(p.size // 3) for p in parts], dtype=ember.float64)
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    mean, invstd = ember.batch_norm_gather_stats_with_counts(
        tensors[0], ember.stack([s[0] for s in stats]), ember.stack([s[1] for s in stats]),
        rm, rv, 0.1, EPS, counts)
    w, b = ember.tensor(W), ember.tensor(B)
    out = ember.cat([ember.batch_norm_elemt(t, w, b, mean, invstd, EPS) for t in tensors])

    tx = torch.tensor(X, requires_grad=True)
    tw, tb = torch.tensor(W, requires_grad=True), torch.tensor(B, requires_grad=True)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    want = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, True, 0.1, EPS)
    assert_same(out, want.detach(), atol=1e-12)
    assert_same((rm, rv), (trm, trv), atol=1e-12)

    g = R.standard_normal(X.shape)
    want.backward(torch.tensor(g))
    gparts = [ember.tensor(p) for p in np.split(g, np.cumsum(split)[:-1])]
    reduced = [ember.batch_norm_backward_reduce(gp, t, mean, invstd, w, True, True, True)
               for gp, t in zip(gparts, tensors)]
    sum_dy, sum_dy_xmu, grad_w, grad_b = (sum(r[i] for r in reduced) for i in range(4))
    count = ember.tensor([p.size // 3 for p in parts], dtype=ember.int32)
    grad_x = ember.cat([ember.batch_norm_backward_elemt(gp, t, mean, invstd, w, sum_dy,
                                                        sum_dy_xmu, count)
                        for gp, t in zip(gparts, tensors)])
    assert_same((grad_x, grad_w, grad_b), (tx.grad, tw.grad, tb.grad), atol=1e-12)


def test_gather_stats_equal_counts_and_empty_reduce_outputs():
    mean, invstd = ember.tensor([[0.0, 1.0], [2.0, 3.0]]), ember.tensor([[1.0, 2.0], [0.5, 1.0]])
    a = ember.batch_norm_gather_stats(ember.zeros(1, 2), mean, invstd, None, None, 0.1, EPS, 5)
    b = ember.batch_norm_gather_stats_with_counts(ember.zeros(1, 2), mean, invstd, None, None,
                                                  0.1, EPS, ember.tensor([5.0, 5.0]))
    for mine, other in zip(a, b):
        np.testing.assert_allclose(mine.numpy(), other.numpy(), rtol=1e-6)
    outs = ember.batch_norm_backward_reduce(ember.ones(2, 2), ember.ones(2, 2), ember.zeros(2),
                                            ember.ones(2), None, False, False, True)
    assert [tuple(o.shape) for o in outs] == [(0,), (0,), (0,), (2,)]


def test_update_stats_matches_torch_and_stats_are_differentiable():
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    assert_same(ember.batch_norm_update_stats(ember.tensor(X), rm, rv, 0.3),
                torch.batch_norm_update_stats(torch.tensor(X), trm, trv, 0.3), atol=1e-12)
    assert_same((rm, rv), (trm, trv), atol=1e-12)
    x = ember.tensor(X[:2, :, :2], requires_grad=True)
    assert gradcheck(lambda t: ember.batch_norm_stats(t, EPS), (x,))


def test_errors():
    with pytest.raises(ember.ShapeError, match="batch_norm_stats: expected an \\(N, C, \\*\\)"):
        ember.batch_norm_stats(ember.ones(3), EPS)
    with pytest.raises(ember.ShapeError, match="counts of shape \\(world,\\)"):
        ember.batch_norm_gather_stats_with_counts(ember.ones(2, 2), ember.ones(2, 2),
                                                  ember.ones(2, 2), None, None, 0.1, EPS,
                                                  ember.ones(3))
