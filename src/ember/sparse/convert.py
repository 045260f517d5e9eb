"""Between layouts: coalescing, dense <-> COO, COO <-> CSR/CSC/BSR/BSC.

A block layout's entries are its blocks' elements, in block order and row-major within a
block (``coo_index`` and ``entry_values`` agree on that order), so every layout reaches COO
(and through it any other) the same way.

Index work runs on NumPy arrays (indices carry no gradient); values move with Ember ops
(``index_select``, ``index_add``), so every conversion is differentiable in the values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.dtypes import int64
from ember.errors import ArgumentError, ShapeError
from ember.layouts import layout, sparse_bsr, sparse_coo, sparse_csr, strided
from ember.ops.creation import from_numpy, zeros
from ember.ops.gather import index_add, index_select
from ember.ops.int_args import as_ints
from ember.sparse.tensor import BLOCKED, BY_ROWS, SparseTensor
from ember.tensor import Tensor, _wrap

__all__ = ["coalesce", "coalesced_order", "coo_index", "dense_to_coo", "element_keys",
           "empty_index", "empty_sparse", "entry_values", "linear_index", "long_index",
           "sorted_distinct", "to_compressed", "to_coo", "to_dense"]


def long_index(a: np.ndarray) -> Tensor:
    """An int64 index tensor of the NumPy array ``a``."""
    return from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def coo_index(s: SparseTensor) -> np.ndarray:
    """The (sparse_dim, n) coordinates of ``s``'s entries, in its own order, any layout (a
    block layout's entries are its blocks' elements: see :func:`entry_values`)."""
    if s.layout is sparse_coo:
        return s._index[0].numpy()
    compressed, plain = (t.numpy() for t in s._index)
    outer = np.repeat(np.arange(len(compressed) - 1), np.diff(compressed))
    rows, cols = (outer, plain) if s.layout in BY_ROWS else (plain, outer)
    if s.layout not in BLOCKED:
        return np.stack([rows, cols])
    r, c = s._vals.shape[1:3]
    rows = rows[:, None, None] * r + np.arange(r)[None, :, None]
    cols = cols[:, None, None] * c + np.arange(c)[None, None, :]
    return np.stack([a.reshape(-1) for a in np.broadcast_arrays(rows, cols)])


def entry_values(s: SparseTensor) -> Tensor:
    """The value of each entry of :func:`coo_index` (a block layout's blocks flattened)."""
    if s.layout not in BLOCKED:
        return s._vals
    return s._vals.reshape(-1, *s._vals.shape[3:])


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


def element_keys(s: SparseTensor) -> Any:
    """Each entry's row-major position among COO ``s``'s sparse elements, an array on the
    index's device (sorted and distinct when ``s`` is coalesced; an int64 that cannot wrap,
    as :func:`~ember.sparse.tensor.check_numel` refuses larger sizes)."""
    index = s._index[0]
    if index.shape[0] == 0:
        return index._device.xp.zeros(index.shape[1], dtype=index._data.dtype)
    keys = index._data[0].copy()  # (a copy: never the index itself)
    for row, size in zip(index._data[1:], s._size[1:index.shape[0]]):
        keys = keys * size + row
    return keys


def _runs(s: SparseTensor) -> tuple[Any, Any, Any]:
    """COO ``s``'s index array, the order sorting its entries by element (stable), and
    whether each sorted entry is its element's first; on the index's device (no host copy)."""
    index = s._index[0]
    xp, data, keys = index._device.xp, index._data, element_keys(s)
    order = xp.argsort(keys, kind="stable")
    ordered = keys[order]
    first = xp.ones(ordered.shape, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return data, order, first


def coalesced_order(s: SparseTensor) -> tuple[Tensor, Tensor]:
    """The sorted distinct indices of COO ``s`` and, for each, the position of its first
    entry."""
    data, order, first = _runs(s)
    heads = order[first]
    device = s._index[0]._device
    return _wrap(data[:, heads], device), _wrap(heads, device)


def coalesce(s: SparseTensor) -> SparseTensor:
    """``s`` with sorted, distinct indices; repeated entries summed (differentiable)."""
    if s._coalesced:
        return s
    data, order, first = _runs(s)
    heads, device, values = order[first], s._index[0]._device, s._vals
    if heads.shape[0] == order.shape[0]:  # (no repeats: the entries reordered)
        summed = index_select(values, 0, _wrap(order, device))
    else:
        xp = device.xp
        slot = xp.empty_like(order)
        slot[order] = xp.cumsum(first) - 1
        summed = index_add(zeros(heads.shape[0], *values.shape[1:], dtype=values.dtype,
                                 device=values.device), 0, _wrap(slot, device), values)
    return SparseTensor(sparse_coo, s._size, (_wrap(data[:, heads], device),), summed, True)


def to_dense(s: SparseTensor) -> Tensor:
    """The dense tensor ``s`` stands for (repeated entries summed); differentiable."""
    index = coo_index(s)
    sparse_shape = s._size[:index.shape[0]]
    values = entry_values(s)
    flat = zeros(int(np.prod(sparse_shape, dtype=np.int64)), *values.shape[1:],
                 dtype=values.dtype)
    flat = index_add(flat, 0, long_index(linear_index(index, sparse_shape)), values)
    return flat.reshape(s._size)


def dense_to_coo(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """A coalesced COO tensor of ``x``'s nonzero elements (of its nonzero slices along the
    first ``sparse_dim`` dimensions, for a hybrid tensor)."""
    sparse_dim = x.ndim if sparse_dim is None else sparse_dim
    if not 0 <= sparse_dim <= x.ndim:
        raise ArgumentError(f"to_sparse: sparse_dim {sparse_dim} must be in [0, {x.ndim}] for a "
                            f"tensor of shape {tuple(x.shape)}")
    sparse_shape = tuple(x.shape[:sparse_dim])
    slices = x.reshape(int(np.prod(sparse_shape, dtype=np.int64)), *x.shape[sparse_dim:])
    data = slices.detach().numpy()
    nonzero = data.reshape(len(data), int(np.prod(data.shape[1:]))).any(axis=1)
    lin = np.flatnonzero(nonzero)
    index = np.stack(np.unravel_index(lin, sparse_shape)).reshape(sparse_dim, -1) if \
        sparse_dim else np.zeros((0, len(lin)), dtype=np.int64)
    return SparseTensor(sparse_coo, tuple(x.shape), (long_index(index),),
                        index_select(slices, 0, long_index(lin)), True)


def to_coo(s: SparseTensor) -> SparseTensor:
    """``s`` in the COO layout, its entries in ``s``'s order, as PyTorch's: coalesced where
    that order is the row-major one (CSR, BSR of one-row blocks, a single entry or block, or
    a shape with a 0: no elements).
    PyTorch calls a CSR tensor's COO coalesced even when its rows are not sorted; Ember
    coalesces that one."""
    if s.layout is sparse_coo:
        return s
    coo = SparseTensor(sparse_coo, s._size, (long_index(coo_index(s)),), entry_values(s),
                       s._vals.shape[0] == 1 or 0 in s._size)
    if s.layout is sparse_csr or (s.layout is sparse_bsr and s._vals.shape[1] == 1):
        compressed, plain = (t.numpy() for t in s._index)
        coo._coalesced = sorted_distinct(compressed, plain)
        return coalesce(coo)
    return coo


def to_compressed(s: SparseTensor, target: layout,
                  blocksize: tuple[int, int] | None = None) -> SparseTensor:
    """``s`` (2-D, no dense dimensions) in a compressed layout: ``sparse_csr``,
    ``sparse_csc``, or ``sparse_bsr``/``sparse_bsc`` with (R, C) blocks ``blocksize`` (each
    block holding an entry of ``s`` is specified)."""
    op = f"to_{target.name}"
    if target in BLOCKED:
        blocksize = _blocksize(op, tuple(s.shape), blocksize)
    if s.layout is target and (blocksize is None or tuple(s._vals.shape[1:3]) == blocksize):
        return s
    if s.layout is target:
        raise ArgumentError(f"{op}: conversion from {target!r} to {target!r} with blocksize "
                            f"changed from {tuple(s._vals.shape[1:3])} to {blocksize} is not "
                            "supported (as in PyTorch). Hint: go through .to_sparse_coo()")
    if s.ndim != 2 or s.dense_dim():
        raise ShapeError(f"{op}: {target!r} needs a 2-D tensor with no dense "
                         f"dimensions, got shape {tuple(s.shape)} with dense_dim "
                         f"{s.dense_dim()} (Ember has no batched or hybrid compressed "
                         "tensors). Hint: convert each matrix, or use the COO layout")
    coo = coalesce(to_coo(s))
    rows, cols = coo._index[0].numpy()
    values = coo._vals
    r, c = blocksize or (1, 1)
    by_rows = target in BY_ROWS
    outer, plain = (rows // r, cols // c) if by_rows else (cols // c, rows // r)
    n_outer, n_plain = (s._size[0] // r, s._size[1] // c) if by_rows else \
        (s._size[1] // c, s._size[0] // r)
    blocks, slot = np.unique(outer * n_plain + plain, return_inverse=True)
    slot = slot.reshape(-1)
    if blocksize is not None:  # scatter each entry into its block
        where = slot * (r * c) + (rows % r) * c + cols % c
        values = index_add(zeros(len(blocks) * r * c, dtype=values.dtype), 0, long_index(where),
                           values).reshape(len(blocks), r, c)
    elif not by_rows:  # CSC: the entries in column order (COO's are in row order already)
        values = index_select(values, 0, long_index(np.argsort(slot)))
    outer, plain = np.divmod(blocks, max(n_plain, 1))
    compressed = np.concatenate([[0], np.cumsum(np.bincount(outer, minlength=n_outer))])
    return SparseTensor(target, s._size, (long_index(compressed), long_index(plain)), values, True)


def _blocksize(op: str, shape: tuple, blocksize: Any) -> tuple[int, int]:
    """``blocksize`` as an (R, C) pair that tiles a 2-D ``shape``."""
    if blocksize is None:
        raise ArgumentError(f"{op}: conversion to a block layout without a blocksize is not "
                            "supported (as in PyTorch). Hint: pass blocksize=(R, C)")
    blocksize = (int(blocksize),) * 2 if isinstance(blocksize, (int, np.integer)) else \
        as_ints(blocksize, op, "blocksize")
    if len(blocksize) != 2 or min(blocksize) < 1:
        raise ArgumentError(f"{op}: blocksize must be two positive ints (R, C), got {blocksize}")
    if len(shape) == 2 and (shape[0] % blocksize[0] or shape[1] % blocksize[1]):
        raise ShapeError(f"{op}: tensor sparse size {shape} must be divisible by given "
                         f"blocksize {blocksize} (as in PyTorch). Hint: pad the tensor to a "
                         "multiple of the blocksize")
    return blocksize


def empty_index(target: layout, size: tuple, inner: tuple = (),
                device: Any = None) -> tuple[Tensor, ...]:
    """Index tensors of a ``target`` tensor of ``size`` with no entries; ``inner``: the shape
    of one value (a COO tensor's dense dimensions, a block layout's (R, C))."""
    if target is sparse_coo:
        return (zeros(len(size) - len(inner), 0, dtype=int64, device=device),)
    outer = size[0] if target in BY_ROWS else size[1]
    if target in BLOCKED:
        outer //= inner[0 if target in BY_ROWS else 1]
    return zeros(outer + 1, dtype=int64, device=device), zeros(0, dtype=int64, device=device)


def empty_sparse(op: str, target: layout, size: tuple, dtype: Any, device: Any,
                 inner: tuple = ()) -> SparseTensor:
    """A ``target`` tensor of ``size`` with no specified elements, made without a dense
    tensor of ``size`` (``inner`` as :func:`empty_index`'s)."""
    if any(n < 0 for n in size):
        raise ShapeError(f"{op}: sizes must be non-negative, got {tuple(size)}")
    if target is not sparse_coo and len(size) != 2:
        raise ShapeError(f"{op}: a {target!r} tensor is 2-D (Ember has no batched compressed "
                         f"tensors), got size {tuple(size)}. Hint: use a COO tensor")
    if target in BLOCKED:
        _blocksize(op, tuple(size), inner)
    index = empty_index(target, size, inner, device)
    return SparseTensor(target, tuple(size), index,
                        zeros(0, *inner, dtype=dtype, device=device), True)


def convert(x: Any, target: layout, sparse_dim: int | None = None,
            blocksize: Any = None) -> Any:
    """``x`` (dense or sparse) in layout ``target`` (``blocksize`` for BSR and BSC)."""
    if target is strided:
        return x if isinstance(x, Tensor) else to_dense(x)
    if isinstance(x, Tensor):
        if target is sparse_coo:
            return dense_to_coo(x, sparse_dim)
        if target in BLOCKED:  # (before the nonzeros are found)
            _blocksize(f"to_{target.name}", tuple(x.shape), blocksize)
        x = dense_to_coo(x)
    elif sparse_dim is not None and sparse_dim != x.sparse_dim():
        raise ArgumentError(f"to_sparse: sparse_dim {sparse_dim} differs from the tensor's "
                            f"({x.sparse_dim()}); convert it to dense first")
    return to_coo(x) if target is sparse_coo else to_compressed(x, target, blocksize)
