"""Sums over many and repeated indices (gather's and index_select's gradients, scatter_add,
index_add): the flat and row kernels of add_at.py against np.add.at and PyTorch, bit for bit
where the order of the sums is the same."""

import numpy as np
import pytest
import torch

import ember


def test_gather_flat_positions_match_torch_over_shapes_dims_and_index_dtypes():
    # the eager flat take's positions (index x stride + offsets): index smaller than the input
    # outside dim, larger along it, int32 and int64, with the gradient
    rng = np.random.default_rng(0)
    for _ in range(60):
        shape = tuple(int(s) for s in rng.integers(1, 5, rng.integers(1, 5)))
        dim = int(rng.integers(-len(shape), len(shape)))
        ishape = tuple(int(rng.integers(1, 6)) if d == dim % len(shape) else
                       int(rng.integers(1, s + 1)) for d, s in enumerate(shape))
        a, i = rng.standard_normal(shape), rng.integers(0, shape[dim], ishape)
        x, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        for dtype in (np.int64, np.int32):
            got = x.gather(dim, ember.from_numpy(i.astype(dtype)))
            np.testing.assert_array_equal(got.detach().numpy(),
                                          tx.gather(dim, torch.from_numpy(i)).detach().numpy())
        got.sum().backward()
        tx.gather(dim, torch.from_numpy(i)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_scatter_add_and_gather_grad_of_large_indices_sum_as_add_at_and_torch():
    # from 1024 indexed elements the sums run as one flat add.at (same order, same bits);
    # repeated indices, int32 indices, float32 and float64; negative ones through index_put
    from ember.ops.add_at import add_at

    rng = np.random.default_rng(0)
    for shape, dim, dtype in (((64, 48), 1, np.float32), ((8, 40, 6), 0, np.float64),
                              ((33, 70), 0, np.float32)):
        ishape = tuple(2 * s if d == dim else s for d, s in enumerate(shape))
        a, src = rng.standard_normal(shape).astype(dtype), rng.standard_normal(ishape)
        src = src.astype(dtype)
        i = rng.integers(0, shape[dim], ishape)
        x, s = ember.tensor(a, requires_grad=True), ember.tensor(src, requires_grad=True)
        tx, ts = torch.tensor(a, requires_grad=True), torch.tensor(src, requires_grad=True)
        ei = ember.from_numpy(i.astype(np.int32))
        out = x.scatter_add(dim, ei, s) * 2 + x.gather(dim, ei).sum()
        tout = tx.scatter_add(dim, torch.from_numpy(i), ts) * 2 + tx.gather(
            dim, torch.from_numpy(i)).sum()
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5)
        w = rng.standard_normal(shape).astype(dtype)
        (out * ember.tensor(w)).sum().backward()
        (tout * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-5)
    view, values = rng.standard_normal((30, 40)), rng.standard_normal((50, 60))
    for low in (0, -30):  # (negative indices leave the flat path: add.at wraps them)
        key = (rng.integers(low, 30, (50, 1)), rng.integers(0, 40, (1, 60)))
        got, want = view.copy(), view.copy()
        add_at(np, got, key, values)
        np.add.at(want, key, values)
        assert got.tobytes() == want.tobytes()
    with pytest.raises(IndexError):
        add_at(np, view.copy(), (np.full((50, 1), 30), np.arange(40)[None]), 1.0)


def test_flat_positions_of_int32_keys_do_not_wrap_past_2_to_31():
    from ember.ops.add_at import flat_index

    rows, cols = np.array([[70000]], np.int32), np.array([[7, 39999]], np.int32)
    assert flat_index((rows, cols), (70001, 40000)).tolist() == [[2_800_000_007, 2_800_039_999]]


@pytest.mark.parametrize("numba", [True, False])
def test_rows_added_at_a_vector_index_sum_as_add_at(numba, monkeypatch):
    # index_select's and index_add's sums along any dim: numba's row kernel where it runs,
    # else add.at per leading slice; either way add.at's sums in its order (the same bits)
    from ember.backend import compiled
    from ember.ops.add_at import add_at

    if not numba:
        monkeypatch.setattr(compiled, "numba_enabled", lambda: False)
    rng = np.random.default_rng(1)
    for shape, dim, dtype, itype in (((40, 64), 0, np.float32, np.int64),
                                     ((3, 20, 50), 1, np.float64, np.int32),
                                     ((2, 3, 9, 80), 2, np.float32, np.int64),
                                     # many leading slices of short rows (one numba call)
                                     ((16, 12, 7, 5), 2, np.float32, np.int32),
                                     ((64, 8, 9), 2, np.float64, np.int64),
                                     # elements along the last dim (a padding's gradient)
                                     ((16, 12, 70), 2, np.float32, np.int64),
                                     ((8, 300), 1, np.float64, np.int32)):
        index = rng.integers(-shape[dim], shape[dim], 2 * shape[dim]).astype(itype)
        values = rng.standard_normal(shape[:dim] + (index.size,) + shape[dim + 1:])
        values = values.astype(dtype)
        values.flat[::7] = -0.0
        key = (slice(None),) * dim + (index,)
        got, want = np.ones(shape, dtype), np.ones(shape, dtype)
        add_at(np, got, key, values)
        np.add.at(want, key, values)
        assert got.tobytes() == want.tobytes()
        x = ember.tensor(values, requires_grad=True)
        tx = torch.tensor(values, requires_grad=True)
        w = rng.standard_normal(shape[:dim] + (3,) + shape[dim + 1:]).astype(dtype)
        (x.index_select(dim, ember.tensor([1, 0, 1])) * ember.tensor(w)).sum().backward()
        (tx.index_select(dim, torch.tensor([1, 0, 1])) * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    with pytest.raises(IndexError):
        add_at(np, np.zeros((4, 300)), (np.array([0, 4] * 3),), np.ones((6, 300)))


@pytest.mark.parametrize("shape,dim,count,dtype", [
    ((6, 300), 1, 2000, np.float32),       # many indices along the last dimension
    ((40, 30, 5), 1, 400, np.float64),     # trailing dimensions folded into the index
    ((200, 16), 0, 900, np.int64),         # leading dimension, integers
])
def test_index_add_with_many_repeated_indices_matches_torch(shape, dim, count, dtype):
    # large enough for the per-slice 1-D accumulation; sums in torch's order, so equal
    rng = np.random.default_rng(0)
    index = rng.integers(0, shape[dim], count)
    source_shape = shape[:dim] + (count,) + shape[dim + 1:]
    base = (rng.random(shape) * 10).astype(dtype)
    source = (rng.random(source_shape) * 10).astype(dtype)
    out = ember.tensor(base).index_add(dim, ember.tensor(index), ember.tensor(source))
    expected = torch.tensor(base).index_add(dim, torch.tensor(index), torch.tensor(source))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    # and the gradient of a gather with negative and repeated indices
    x = ember.tensor(base.astype(np.float64), requires_grad=True)
    key = (slice(None),) * dim + (ember.tensor(index - shape[dim]),)
    x[key].pow(2).sum().backward()
    tx = torch.tensor(base.astype(np.float64), requires_grad=True)
    tx[(slice(None),) * dim + (torch.tensor(index - shape[dim]),)].pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
