"""Between layouts: coalescing, dense <-> COO, COO <-> CSR/CSC.

Index work runs on NumPy arrays (indices carry no gradient); values move with Ember ops
(``index_select``, ``index_add``), so every conversion is differentiable in the values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.dtypes import int64
from ember.layouts import layout, sparse_coo, sparse_csc, sparse_csr, strided
from ember.ops.creation import from_numpy, zeros
from ember.ops.gather import index_add, index_select
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

__all__ = ["coalesce", "coalesced_order", "coo_index", "dense_to_coo", "empty_index",
           "linear_index", "sorted_distinct", "to_compressed", "to_coo", "to_dense"]


def _long(a: np.ndarray) -> Tensor:
    return from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def coo_index(s: SparseTensor) -> np.ndarray:
    """The (sparse_dim, nnz) coordinates of ``s``'s entries, in its own order, any layout."""
    if s.layout is sparse_coo:
        return s._index[0].numpy()
    compressed, plain = (t.numpy() for t in s._index)
    outer = np.repeat(np.arange(len(compressed) - 1), np.diff(compressed))
    return np.stack([outer, plain] if s.layout is sparse_csr else [plain, outer])


def sorted_distinct(compressed: np.ndarray, plain: np.ndarray) -> bool:
    """Whether the plain indices of each compressed row (column) increase strictly."""
    if len(plain) < 2:
        return True
    rising = np.diff(plain) > 0
    rising[compressed[1:-1][(compressed[1:-1] > 0) & (compressed[1:-1] < len(plain))] - 1] = True
    return bool(rising.all())


def linear_index(index: np.ndarray, sparse_shape: tuple[int, ...]) -> np.ndarray:
    """Each entry's position in the row-major order of the sparse dimensions."""
    if index.shape[0] == 0:
        return np.zeros(index.shape[1], dtype=np.int64)
    return np.ravel_multi_index(tuple(index), sparse_shape).astype(np.int64, copy=False)


def coalesced_order(s: SparseTensor) -> tuple[Tensor, Tensor]:
    """The sorted distinct indices of COO ``s`` and, for each, the position of its first
    entry."""
    index = coo_index(s)
    sparse_shape = s._size[:index.shape[0]]
    lin = linear_index(index, sparse_shape)
    distinct, first = np.unique(lin, return_index=True)
    return _long(np.stack(np.unravel_index(distinct, sparse_shape)).reshape(len(sparse_shape),
                                                                            -1)), _long(first)


def coalesce(s: SparseTensor) -> SparseTensor:
    """``s`` with sorted, distinct indices; repeated entries summed (differentiable)."""
    if s._coalesced:
        return s
    index = coo_index(s)
    sparse_shape = s._size[:index.shape[0]]
    distinct, inverse = np.unique(linear_index(index, sparse_shape), return_inverse=True)
    values = s._vals
    summed = index_add(zeros(len(distinct), *values.shape[1:], dtype=values.dtype), 0,
                       _long(inverse.reshape(-1)), values)
    unique = np.stack(np.unravel_index(distinct, sparse_shape)).reshape(len(sparse_shape), -1)
    return SparseTensor(sparse_coo, s._size, (_long(unique),), summed, True)


def to_dense(s: SparseTensor) -> Tensor:
    """The dense tensor ``s`` stands for (repeated entries summed); differentiable."""
    index = coo_index(s)
    sparse_shape = s._size[:index.shape[0]]
    values = s._vals
    flat = zeros(int(np.prod(sparse_shape, dtype=np.int64)), *values.shape[1:],
                 dtype=values.dtype)
    flat = index_add(flat, 0, _long(linear_index(index, sparse_shape)), values)
    return flat.reshape(s._size)


def dense_to_coo(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """A coalesced COO tensor of ``x``'s nonzero elements (of its nonzero slices along the
    first ``sparse_dim`` dimensions, for a hybrid tensor)."""
    sparse_dim = x.ndim if sparse_dim is None else sparse_dim
    if not 0 <= sparse_dim <= x.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim {sparse_dim} must be in [0, {x.ndim}] for a "
                           f"tensor of shape {tuple(x.shape)}")
    sparse_shape = tuple(x.shape[:sparse_dim])
    slices = x.reshape(int(np.prod(sparse_shape, dtype=np.int64)), *x.shape[sparse_dim:])
    data = slices.detach().numpy()
    nonzero = data.reshape(data.shape[0], -1).any(axis=1) if data.ndim > 1 else data != 0
    lin = np.flatnonzero(nonzero)
    index = np.stack(np.unravel_index(lin, sparse_shape)).reshape(sparse_dim, -1) if \
        sparse_dim else np.zeros((0, len(lin)), dtype=np.int64)
    return SparseTensor(sparse_coo, tuple(x.shape), (_long(index),),
                        index_select(slices, 0, _long(lin)), True)


def to_coo(s: SparseTensor) -> SparseTensor:
    """``s`` in the COO layout (coalesced when it came from CSR/CSC)."""
    if s.layout is sparse_coo:
        return s
    compressed, plain = (t.numpy() for t in s._index)
    unsorted = SparseTensor(sparse_coo, s._size, (_long(coo_index(s)),), s._vals,
                            s.layout is sparse_csr and sorted_distinct(compressed, plain))
    return coalesce(unsorted)


def to_compressed(s: SparseTensor, target: layout) -> SparseTensor:
    """``s`` (2-D, no dense dimensions) in ``sparse_csr`` or ``sparse_csc``."""
    if s.layout is target:
        return s
    if s.ndim != 2 or s.dense_dim():
        raise RuntimeError(f"to_sparse: {target!r} needs a 2-D tensor with no dense "
                           f"dimensions, got shape {tuple(s.shape)} with dense_dim "
                           f"{s.dense_dim()}")
    coo = coalesce(to_coo(s))
    rows, cols = coo._index[0].numpy()
    if target is sparse_csc:
        order = np.lexsort((rows, cols))
        outer, plain, n = cols[order], rows[order], s._size[1]
        values = index_select(coo._vals, 0, _long(order))
    else:
        outer, plain, n, values = rows, cols, s._size[0], coo._vals
    compressed = np.concatenate([[0], np.cumsum(np.bincount(outer, minlength=n))])
    return SparseTensor(target, s._size, (_long(compressed), _long(plain)), values, True)


def empty_index(s: SparseTensor) -> tuple[Tensor, ...]:
    """Index tensors of ``s``'s layout and shape with no entries."""
    if s.layout is sparse_coo:
        return (zeros(s.sparse_dim(), 0, dtype=int64),)
    outer = s._size[0] if s.layout is sparse_csr else s._size[1]
    return zeros(outer + 1, dtype=int64), zeros(0, dtype=int64)


def convert(x: Any, target: layout, sparse_dim: int | None = None) -> Any:
    """``x`` (dense or sparse) in layout ``target``."""
    if target is strided:
        return x if isinstance(x, Tensor) else to_dense(x)
    if isinstance(x, Tensor):
        if target is sparse_coo:
            return dense_to_coo(x, sparse_dim)
        return to_compressed(dense_to_coo(x), target)
    if sparse_dim is not None and sparse_dim != x.sparse_dim():
        raise RuntimeError(f"to_sparse: sparse_dim {sparse_dim} differs from the tensor's "
                           f"({x.sparse_dim()}); convert it to dense first")
    return to_coo(x) if target is sparse_coo else to_compressed(x, target)
