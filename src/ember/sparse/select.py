"""Selecting and reordering the dimensions of a sparse COO tensor, as PyTorch's:
``permute``, ``index_select``, ``narrow_copy``, ``unsqueeze`` and ``select`` (``s[i]``,
``s[i, j]``, ``s[:, j]``; also of a CSR/CSC/BSR/BSC tensor, through COO). Along a sparse dimension
the entries are picked (and their index rewritten); along a dense one the values are, with the
dense op. The values go through differentiable ops, so gradients reach them.

Example:
    >>> s = ember.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0], (3, 2))
    >>> s.index_select(0, ember.tensor([2, 2])).to_dense()
    tensor([[2., 0.],
            [2., 0.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import (
    ArgumentError,
    DTypeError,
    IndexOutOfRange,
    ShapeError,
)
from ember.layouts import sparse_coo
from ember.ops.dims import normalize_dim
from ember.ops.forwarding import check_tensors
from ember.ops.gather import index_select as dense_index_select
from ember.ops.shape import _permutation, movedim_order, read_sizes
from ember.sparse.convert import coo_index, long_index, to_coo
from ember.sparse.tensor import SparseTensor, not_supported
from ember.tensor import Tensor, _wrap

__all__ = ["getitem", "index_select", "movedim", "narrow_copy", "permute", "select", "unsqueeze"]


def _coo(op: str, s: SparseTensor) -> SparseTensor:
    if s.layout is not sparse_coo:
        raise not_supported(f"{op} (COO tensors only; convert with .to_sparse_coo())", s)
    return s


def _picked(s: SparseTensor, dim: int, take: np.ndarray, new_dim_index: np.ndarray,
            size: int, coalesced: bool) -> SparseTensor:
    """The entries ``take`` of ``s``, their index along sparse ``dim`` now ``new_dim_index``."""
    index = coo_index(s)[:, take]
    index[dim] = new_dim_index
    shape = list(s.shape)
    shape[dim] = size
    values = dense_index_select(s._vals, 0, long_index(take))
    return SparseTensor(sparse_coo, tuple(shape), (long_index(index),), values, coalesced)


def movedim(input: SparseTensor, source: Any, destination: Any) -> SparseTensor:
    """``ember.movedim`` of a COO tensor: :func:`permute` with the order moving ``source``
    to ``destination``, as PyTorch's.

    Example:
        >>> ember.movedim(ember.sparse_coo_tensor([[0], [2]], [5.0], (2, 3)), 0, 1).shape
        ember.Size([3, 2])
    """
    return permute(input, movedim_order(input.ndim, source, destination))


def permute(input: SparseTensor, *dims: Any) -> SparseTensor:
    """The dimensions reordered (sparse ones among themselves, dense ones among themselves);
    coalesced if ``input`` is and its sparse dimensions keep their order, as PyTorch's.

    Example:
        >>> ember.sparse_coo_tensor([[0], [2]], [5.0], (2, 3)).permute(1, 0).coalesce().indices()
        tensor([[2],
                [0]])
    """
    s = _coo("permute", input)
    perm = list(_permutation(dims, tuple(s.shape), ArgumentError))
    sd = s.sparse_dim()
    if sorted(perm[:sd]) != list(range(sd)):
        raise ArgumentError("permute: transpositions between sparse and dense dimensions are "
                            f"not allowed (as in PyTorch): dims {tuple(read_sizes(dims))} "
                            f"with {sd} sparse dimensions")
    index = coo_index(s)[perm[:sd]]
    values = s._vals.permute(0, *[d - sd + 1 for d in perm[sd:]])
    coalesced = s._coalesced and perm[:sd] == list(range(sd))
    return SparseTensor(sparse_coo, tuple(s.shape[d] for d in perm), (long_index(index),),
                        values, coalesced)


def index_select(input: SparseTensor, dim: int, index: Tensor) -> SparseTensor:
    """The elements at positions ``index`` (a 1-D integer tensor) along ``dim``; along a
    sparse dimension each selected position repeats its entries (uncoalesced, as PyTorch's).

    Example:
        >>> s = ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,))
        >>> s.index_select(0, ember.tensor([1, 1, 0])).to_dense()
        tensor([2., 2., 1.])
    """
    s = _coo("index_select", input)
    dim = normalize_dim(dim, s.ndim, "index_select")
    check_tensors("index_select", index=index)
    if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype.name == "bool":
        raise DTypeError(f"index_select: index must be an integer tensor, got "
                         f"{index.dtype.name}")
    if index.ndim != 1:  # (a 0-d one too, as PyTorch's sparse index_select)
        raise ShapeError(f"index_select: index must be 1-D, got shape {tuple(index.shape)}")
    want = index.numpy().astype(np.int64).reshape(-1)
    size = s.shape[dim]
    if want.size and (want.min() < 0 or want.max() >= size):
        bad = want[(want < 0) | (want >= size)][0]
        raise IndexOutOfRange(f"index_select: index {bad} is out of range for dim {dim} of "
                              f"size {size} (shape {tuple(s.shape)})")
    sd = s.sparse_dim()
    if dim >= sd:
        values = dense_index_select(s._vals, dim - sd + 1, long_index(want))
        shape = s.shape[:dim] + (want.size,) + s.shape[dim + 1:]
        return SparseTensor(sparse_coo, tuple(shape), s._index, values, False)
    along = coo_index(s)[dim]
    order = np.argsort(along, kind="stable")
    starts = np.searchsorted(along[order], want, "left")
    counts = np.searchsorted(along[order], want, "right") - starts
    before = np.cumsum(counts) - counts
    position = np.arange(counts.sum()) - np.repeat(before - starts, counts)
    return _picked(s, dim, order[position], np.repeat(np.arange(want.size), counts),
                   want.size, False)


def narrow_copy(input: SparseTensor, dim: int, start: int, length: int) -> SparseTensor:
    """The elements ``start`` to ``start + length`` along ``dim``, a new sparse tensor.

    Example:
        >>> s = ember.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,))
        >>> s.narrow_copy(0, 1, 2).to_dense()
        tensor([0., 2.])
    """
    s = _coo("narrow_copy", input)
    dim = normalize_dim(dim, s.ndim, "narrow_copy")
    size = s.shape[dim]
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise IndexOutOfRange(f"narrow_copy: start {start} and length {length} are out of range "
                              f"for dim {dim} of size {size} (shape {tuple(s.shape)})")
    sd = s.sparse_dim()
    if dim >= sd:
        values = s._vals.narrow(dim - sd + 1, start, length).clone()
        shape = s.shape[:dim] + (length,) + s.shape[dim + 1:]
        return SparseTensor(sparse_coo, tuple(shape), s._index, values, s._coalesced)
    along = coo_index(s)[dim]
    take = np.flatnonzero((along >= start) & (along < start + length))
    return _picked(s, dim, take, along[take] - start, length, s._coalesced)


def unsqueeze(input: SparseTensor, dim: int) -> SparseTensor:
    """A dimension of size 1 inserted at ``dim``: a sparse one (index 0 for every entry)
    among the sparse dimensions, else a dense one; flagged coalesced only with at most one
    entry, as PyTorch's.

    Example:
        >>> ember.sparse_coo_tensor([[1]], [2.0], (3,)).unsqueeze(0).shape
        ember.Size([1, 3])
    """
    s = _coo("unsqueeze", input)
    dim = normalize_dim(dim, s.ndim + 1, "unsqueeze")
    shape = s.shape[:dim] + (1,) + s.shape[dim:]
    sd = s.sparse_dim()
    if dim > sd:
        return SparseTensor(sparse_coo, tuple(shape), s._index, s._vals.unsqueeze(dim - sd + 1),
                            s._nnz() <= 1)
    index = np.insert(coo_index(s), dim, 0, axis=0)
    return SparseTensor(sparse_coo, tuple(shape), (long_index(index),), s._vals.view(
        s._vals.shape), s._nnz() <= 1)


def select(input: SparseTensor, dim: int, index: int) -> Any:
    """The slice at position ``index`` along ``dim``, as PyTorch's: sparse COO (of any sparse
    layout), or dense once no sparse dimension is left (repeated entries summed).

    Example:
        >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
        >>> s.select(0, 1).to_dense()
        tensor([2., 0., 3.])
        >>> s.select(0, 1).select(0, 2)
        tensor(3.)
    """
    s = to_coo(input)
    dim = normalize_dim(dim, s.ndim, "select")
    size = s.shape[dim]
    if not -size <= index < size:
        raise IndexOutOfRange(f"select: index {index} is out of range for dim {dim} of size "
                              f"{size} (shape {tuple(s.shape)})")
    index %= size
    shape, sd = s.shape[:dim] + s.shape[dim + 1:], s.sparse_dim()
    if dim >= sd:
        values, entries = s._vals.select(dim - sd + 1, index), s._index
    else:
        held = s._index[0]  # (picked where it lives: no host copy)
        xp, device = held._device.xp, held._device
        take = xp.flatnonzero(held._data[dim] == index)
        values = dense_index_select(s._vals, 0, _wrap(take, device))
        if sd == 1:  # (no sparse dimension left: the elements' sum, dense)
            return values.sum(0, dtype=values.dtype)
        kept = [d for d in range(sd) if d != dim]
        entries = (_wrap(held._data[kept][:, take], device),)
    coalesced = input.layout is not sparse_coo or values.shape[0] <= 1
    return SparseTensor(sparse_coo, tuple(shape), entries, values, coalesced)


def getitem(s: SparseTensor, key: Any) -> Any:
    """``s[key]``: integers (or 0-d integer tensors) select, ``:`` and ``...`` keep a
    dimension and ``None`` inserts one (:func:`unsqueeze`; COO only), left to right, as
    PyTorch's sparse indexing (a COO result, dense once no sparse dimension is left); other
    keys are not supported."""
    keys = list(key) if isinstance(key, tuple) else [key]
    used = len(keys) - (Ellipsis in keys) - keys.count(None)  # (the dimensions keys index)
    if sum(k is Ellipsis for k in keys) > 1 or used > s.ndim:
        raise IndexOutOfRange(f"indexing: too many indices ({key!r}) for a tensor of "
                              f"{s.ndim} dimension(s)")
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        keys[at:at + 1] = [slice(None)] * (s.ndim - used)
    if all(k == slice(None) for k in keys):  # (a view of it all: PyTorch refuses too)
        raise not_supported(f"indexing with {key!r} (no integer: a view, as in PyTorch)", s)
    out, dim = s, 0
    for k in keys:
        if k is None:
            out = out.unsqueeze(dim)  # (a sparse or a dense dimension, as ``unsqueeze`` puts it)
            dim += 1
        elif isinstance(k, slice) and k == slice(None):
            dim += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) or (
                isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point and
                not k.dtype.is_complex and k.dtype.name != "bool"):
            out = out.select(dim, int(k))  # (dense once no sparse dimension is left)
        else:
            raise not_supported(f"indexing with {k!r} (integers, ':', '...' and None only, as "
                                "PyTorch's sparse indexing)", s)
    return out
