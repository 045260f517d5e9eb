"""Joining sparse COO tensors, as PyTorch's ``torch.cat`` of sparse tensors: along a sparse
dimension the entries are put side by side (each tensor's index along it shifted past the
ones before), along a dense one each tensor's values fill their slice and zeros the rest. The
result is uncoalesced unless it has under two entries (as PyTorch's); the values go through
differentiable ops.

Example:
    >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    >>> ember.cat([s, s], 1).to_dense()
    tensor([[0., 1., 0., 1.],
            [2., 0., 2., 0.]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, ShapeError, type_name
from ember.layouts import sparse_coo
from ember.ops.creation import zeros
from ember.ops.dims import normalize_dim
from ember.ops.join import cat as dense_cat
from ember.sparse.convert import coo_index, long_index
from ember.sparse.select import unsqueeze
from ember.sparse.tensor import SparseTensor, not_supported

__all__ = ["cat", "stack"]


def _checked(tensors: Sequence[Any], dim: int) -> tuple[list[SparseTensor], int]:
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("cat: expected a non-empty list of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, SparseTensor):
            raise ArgumentTypeError(f"cat: concatenating sparse tensors, but a dense "
                                    f"{type_name(t)} was found at position {i} (as PyTorch "
                                    "refuses). Hint: convert it with .to_sparse(), or the "
                                    "sparse ones with .to_dense()")
        if t.layout is not sparse_coo:
            raise not_supported("cat (COO tensors only; convert with .to_sparse_coo())", t)
    first = tensors[0]
    dim = normalize_dim(dim, first.ndim, "cat")
    for i, t in enumerate(tensors[1:], 1):
        if (t.sparse_dim(), t.dense_dim()) != (first.sparse_dim(), first.dense_dim()):
            raise ShapeError(f"cat: all tensors must have the same sparse_dim and dense_dim: "
                             f"{first.sparse_dim()}, {first.dense_dim()}, but the tensor at "
                             f"position {i} has {t.sparse_dim()}, {t.dense_dim()}")
        if t.ndim != first.ndim or any(a != b for d, (a, b) in
                                       enumerate(zip(t.shape, first.shape)) if d != dim):
            raise ShapeError(f"cat: all tensors must have the same shape "
                             f"{tuple(first.shape)} except in dimension {dim}, but the tensor "
                             f"at position {i} has shape {tuple(t.shape)}")
    return tensors, dim


def cat(tensors: Sequence[SparseTensor], dim: int = 0, *, out: Any = None) -> SparseTensor:
    """The sparse COO ``tensors`` joined along ``dim`` (``ember.cat`` of sparse tensors).

    Example:
        >>> s = ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,))
        >>> ember.cat([s, s]).to_dense()
        tensor([1., 2., 1., 2.])
    """
    if out is not None:
        raise ArgumentError("cat: out= is not supported for sparse tensors")
    tensors, dim = _checked(tensors, dim)
    sd, total = tensors[0].sparse_dim(), sum(t.shape[dim] for t in tensors)
    shape = (*tensors[0].shape[:dim], total, *tensors[0].shape[dim + 1:])
    indices, values, offset = [], [], 0
    for t in tensors:
        index, vals = coo_index(t), t._vals
        if dim < sd:
            index = index.copy()
            index[dim] += offset
        else:  # (a dense dimension: the values padded with zeros outside their slice)
            axis, size = dim - sd + 1, t.shape[dim]
            pads = [zeros((*vals.shape[:axis], n, *vals.shape[axis + 1:]), dtype=vals.dtype)
                    for n in (offset, total - offset - size)]
            vals = dense_cat([pads[0], vals, pads[1]], axis)
        indices.append(index)
        values.append(vals)
        offset += t.shape[dim]
    return SparseTensor(sparse_coo, shape, (long_index(np.concatenate(indices, axis=1)),),
                        dense_cat(values, 0), sum(t._nnz() for t in tensors) < 2)


def stack(tensors: Sequence[SparseTensor], dim: int = 0, *, out: Any = None) -> SparseTensor:
    """The sparse COO ``tensors``, all of one shape, joined along a new sparse dimension
    ``dim`` (``ember.stack`` of sparse tensors: each unsqueezed, then concatenated).

    Example:
        >>> s = ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2,))
        >>> ember.stack([s, s * 2]).to_dense()
        tensor([[1., 2.],
                [2., 4.]])
    """
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("stack: expected a non-empty list of tensors")
    for i, t in enumerate(tensors[1:], 1):
        if tuple(getattr(t, "shape", ())) != tuple(tensors[0].shape):
            raise ShapeError(f"stack expects each tensor to be equal size, but got "
                             f"{tuple(tensors[0].shape)} at entry 0 and "
                             f"{tuple(getattr(t, 'shape', ()))} at entry {i}")
    dim = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    return cat([unsqueeze(t, dim) if isinstance(t, SparseTensor) else t for t in tensors], dim,
               out=out)
