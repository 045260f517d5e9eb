"""Gradients that add into the last dimension through an index with a stride (a stepped slice
of an index tensor): numba's column kernel takes a contiguous copy, as PyTorch computes them."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_indices_along_the_last_dim(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 300)).astype(dtype)
    index = rng.integers(0, 300, 400)[::2]  # a stride of 16 bytes
    source = rng.standard_normal((64, 200)).astype(dtype)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ei, ti = ember.from_numpy(index), torch.tensor(index)  # ei shares the strided view
    assert ei.stride() == (2,)
    g = rng.standard_normal((64, 200)).astype(dtype)
    for run in (lambda a, i: a[:, i], lambda a, i: a.index_select(1, i)):
        e.grad = t.grad = None
        run(e, ei).backward(ember.tensor(g))
        run(t, ti).backward(torch.tensor(g))
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
    added = ember.tensor(x).index_add(1, ei, ember.tensor(source))
    want = torch.tensor(x).index_add(1, ti, torch.tensor(source))
    np.testing.assert_allclose(added.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
