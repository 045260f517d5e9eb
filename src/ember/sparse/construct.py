"""Making sparse tensors: ``sparse_coo_tensor``, ``sparse_csr_tensor``, ``sparse_csc_tensor``
and ``sparse_compressed_tensor``, as PyTorch's.

Indices are always checked against the size (PyTorch checks only with
``check_invariants=True``; an index out of bounds there corrupts memory, here it is a clear
error, and checking costs one pass over the indices).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.dtypes import int64
from ember.errors import IndexOutOfRange, ShapeError
from ember.layouts import layout, sparse_coo, sparse_csc, sparse_csr
from ember.ops.convert import cast
from ember.ops.creation import as_tensor
from ember.sparse.convert import sorted_distinct
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

__all__ = ["sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csc_tensor",
           "sparse_csr_tensor"]


def _values(op: str, values: Any, dtype: Any, requires_grad: bool) -> Tensor:
    values = as_tensor(values)
    if dtype is not None and values.dtype is not dtype:
        values = cast(values, dtype)
    if requires_grad:
        values = values.detach().requires_grad_(True)
    if values.ndim == 0:
        raise ShapeError(f"{op}: values must have at least one dimension (one entry per "
                         f"specified element), got a 0-d tensor")
    return values


def _index(op: str, name: str, index: Any) -> Tensor:
    index = as_tensor(index)
    if index.dtype.is_floating_point or index.dtype.name in ("bool", "complex64",
                                                             "complex128"):
        raise TypeError(f"{op}: {name} must be an integer tensor, got {index.dtype.name}")
    return index if index.dtype is int64 else cast(index, int64)


def _check_bounds(op: str, index: np.ndarray, size: tuple[int, ...]) -> None:
    for d, (row, n) in enumerate(zip(index, size)):
        if row.size and (row.min() < 0 or row.max() >= n):
            bad = row.max() if row.max() >= n else row.min()
            raise IndexOutOfRange(f"{op}: index {bad} is out of bounds for dimension {d} of "
                                  f"size {n} (size {tuple(size)}). Hint: indices must be in "
                                  f"[0, size); leave size=None to infer it from the indices")


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A COO sparse tensor: element ``indices[:, k]`` holds ``values[k]`` (repeats add up).

    ``indices`` is (sparse_dim, nnz); ``values`` is (nnz, *dense_shape) (a hybrid tensor when
    dense_shape is not empty); ``size`` defaults to the smallest that holds the indices.

    Example:
        >>> ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
        tensor(indices=tensor([[0, 1, 1],
                               [2, 0, 2]]),
               values=tensor([3., 4., 5.]),
               size=(2, 3), nnz=3, layout=ember.sparse_coo)
    """
    op = "sparse_coo_tensor"
    index = _index(op, "indices", indices)
    values = _values(op, values, dtype, requires_grad)
    if index.ndim != 2 or index.shape[1] != values.shape[0]:
        raise ShapeError(f"{op}: indices must be (sparse_dim, nnz) with nnz = values.shape[0] "
                         f"({values.shape[0]}), got indices of shape {tuple(index.shape)}")
    a = index.numpy()
    if size is None:
        sparse_shape = tuple(int(r.max()) + 1 if r.size else 0 for r in a)
        size = sparse_shape + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != a.shape[0] + values.ndim - 1 or size[a.shape[0]:] != \
            tuple(values.shape[1:]):
        raise ShapeError(f"{op}: size {size} does not fit {a.shape[0]} sparse dimensions and "
                         f"values of shape {tuple(values.shape)} (size must be the sparse "
                         f"shape followed by values.shape[1:])")
    _check_bounds(op, a, size)
    coalesced = bool(is_coalesced) if is_coalesced is not None else values.shape[0] <= 1
    return SparseTensor(sparse_coo, size, (index,), values, coalesced)


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any,
                             size: Any = None, *, dtype: Any = None,
                             layout: layout | None = None, device: Any = None,
                             pin_memory: bool = False, requires_grad: bool = False,
                             check_invariants: bool | None = None) -> SparseTensor:
    """A CSR (``layout=ember.sparse_csr``) or CSC (``ember.sparse_csc``) matrix:
    ``compressed_indices[i]:compressed_indices[i + 1]`` are the entries of row (column) ``i``.

    Example:
        >>> ember.sparse_compressed_tensor([0, 1, 2], [1, 0], [5.0, 6.0], (2, 2),
        ...                                layout=ember.sparse_csr).to_dense()
        tensor([[0., 5.],
                [6., 0.]])
    """
    if layout not in (sparse_csr, sparse_csc):
        raise ValueError(f"sparse_compressed_tensor: layout must be ember.sparse_csr or "
                         f"ember.sparse_csc, got {layout!r}")
    op = f"sparse_{layout.name.removeprefix('sparse_')}_tensor"
    compressed = _index(op, "compressed indices", compressed_indices)
    plain = _index(op, "plain indices", plain_indices)
    values = _values(op, values, dtype, requires_grad)
    c, p = compressed.numpy(), plain.numpy()
    if c.ndim != 1 or p.ndim != 1 or values.ndim != 1 or len(p) != values.shape[0] or \
            not len(c) or c[0] != 0 or c[-1] != len(p) or np.any(np.diff(c) < 0):
        raise ShapeError(f"{op}: expected 1-D compressed indices starting at 0, "
                         f"non-decreasing, ending at nnz, and 1-D plain indices and values of "
                         f"length nnz; got shapes {tuple(compressed.shape)}, "
                         f"{tuple(plain.shape)}, {tuple(values.shape)} and compressed "
                         f"indices {c.tolist()[:8]}")
    outer, inner = len(c) - 1, int(p.max()) + 1 if len(p) else 0
    if size is None:
        size = (outer, inner) if layout is sparse_csr else (inner, outer)
    size = tuple(int(n) for n in size)
    if len(size) != 2 or size[0 if layout is sparse_csr else 1] != outer:
        raise ShapeError(f"{op}: size {size} does not fit {outer} compressed "
                         f"{'rows' if layout is sparse_csr else 'columns'}")
    _check_bounds(op, p[None], (size[1 if layout is sparse_csr else 0],))
    if check_invariants and not sorted_distinct(c, p):
        raise RuntimeError(f"{op}: the plain indices of each compressed row (column) must be "
                           f"sorted and distinct (check_invariants=True, as PyTorch's); got "
                           f"{p.tolist()[:8]} under compressed indices {c.tolist()[:8]}")
    return SparseTensor(layout, size, (compressed, plain), values, True)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A CSR matrix (see :func:`sparse_compressed_tensor`).

    Example:
        >>> ember.sparse_csr_tensor([0, 2, 2], [0, 1], [1.0, 2.0], (2, 2)).col_indices()
        tensor([0, 1])
    """
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype,
                                    layout=sparse_csr, requires_grad=requires_grad,
                                    check_invariants=check_invariants)


def sparse_csc_tensor(ccol_indices: Any, row_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A CSC matrix (see :func:`sparse_compressed_tensor`).

    Example:
        >>> ember.sparse_csc_tensor([0, 1, 2], [1, 0], [1.0, 2.0]).to_dense()
        tensor([[0., 2.],
                [1., 0.]])
    """
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=sparse_csc, requires_grad=requires_grad,
                                    check_invariants=check_invariants)
