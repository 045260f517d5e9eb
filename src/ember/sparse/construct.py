"""Making sparse tensors: ``sparse_coo_tensor``, ``sparse_csr_tensor``, ``sparse_csc_tensor``,
``sparse_bsr_tensor``, ``sparse_bsc_tensor`` and ``sparse_compressed_tensor``, as PyTorch's.

Indices are always checked against the size, and compressed indices for their shape
(PyTorch checks only with ``check_invariants=True``; an index out of bounds there corrupts
memory, here it is a clear error, and checking costs one pass over the indices). With
``check_invariants`` (or :class:`~ember.sparse.check_sparse_tensor_invariants`) the plain
indices of each compressed row must also be sorted and distinct. The errors quote
PyTorch's invariant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.dtypes import int64
from ember.errors import ArgumentError, DTypeError, IndexOutOfRange, OpError, ShapeError
from ember.layouts import layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from ember.ops.convert import cast
from ember.ops.creation import as_tensor
from ember.ops.primitive import plain
from ember.sparse.convert import linear_index, sorted_distinct
from ember.sparse.invariants import checking
from ember.sparse.tensor import BLOCKED, BY_ROWS, SparseTensor, check_numel
from ember.tensor import Tensor

__all__ = ["InvariantError", "sparse_bsc_tensor", "sparse_bsr_tensor", "sparse_coo_tensor",
           "sparse_compressed_tensor", "sparse_csc_tensor", "sparse_csr_tensor"]


def _values(op: str, values: Any, dtype: Any, requires_grad: bool) -> Tensor:
    values = as_tensor(values)
    if dtype is not None and values.dtype is not dtype:
        values = cast(values, dtype)
    if requires_grad:
        values = values.detach().requires_grad_(True)
    else:  # (an alias, so requires_grad_() of the sparse tensor leaves ``values`` and others
        # on it alone, as PyTorch's; a view when values require grad, so the sparse tensor is
        # a non-leaf whose gradient reaches them, or under a transform, which keeps a tangent
        # or batch)
        values = values.detach() if plain(values) and not values.requires_grad else \
            values.view_as(values)
    if values.ndim == 0:
        raise ShapeError(f"{op}: values must have at least one dimension (one entry per "
                         f"specified element), got a 0-d tensor")
    return values


def _index(op: str, name: str, index: Any) -> Tensor:
    index = as_tensor(index)
    if index.dtype.is_floating_point or index.dtype.name in ("bool", "complex64",
                                                             "complex128"):
        raise DTypeError(f"{op}: {name} must be an integer tensor, got {index.dtype.name}")
    return index if index.dtype is int64 else cast(index, int64)


class InvariantError(IndexOutOfRange, OpError):
    """A constructor's indices break a sparse tensor's invariants (a RuntimeError, as
    PyTorch's, and an IndexError where an index is out of bounds)."""


def _broken(op: str, invariant: str, detail: str) -> InvariantError:
    return InvariantError(f"{op}: `{invariant}` is not satisfied (as PyTorch checks): {detail}")


def _check_bounds(op: str, index: np.ndarray, size: tuple[int, ...]) -> None:
    for d, (row, n) in enumerate(zip(index, size)):
        if row.size and row.min() < 0:
            raise InvariantError(f"{op}: found negative index {row.min()} for dim {d} (as "
                                 f"PyTorch checks). Hint: indices must be in [0, size)")
        if row.size and row.max() >= n:
            raise InvariantError(f"{op}: size is inconsistent with indices: for dim {d}, size "
                                 f"is {n} but found index {row.max()} (index {row.max()} is out "
                                 f"of bounds for dimension {d} of size {n}; size "
                                 f"{tuple(size)}). Hint: indices must be in [0, size); leave "
                                 "size=None to infer it from the indices")


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A COO sparse tensor: element ``indices[:, k]`` holds ``values[k]`` (repeats add up).
    ``is_coalesced=True`` claims the indices sorted and distinct, checked with
    ``check_invariants``.

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
    check_numel(op, size)
    _check_bounds(op, a, size)
    if is_coalesced and checking(check_invariants) and \
            (np.diff(linear_index(a, size[:a.shape[0]])) <= 0).any():
        raise InvariantError(f"{op}: cannot set is_coalesced to true if indices correspond to "
                             "uncoalesced COO tensor (as PyTorch checks): the indices are not "
                             "sorted and distinct. Hint: leave is_coalesced unset and call "
                             ".coalesce()")
    coalesced = bool(is_coalesced) if is_coalesced is not None else values.shape[0] <= 1
    return SparseTensor(sparse_coo, size, (index,), values, coalesced)


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any,
                             size: Any = None, *, dtype: Any = None,
                             layout: layout | None = None, device: Any = None,
                             pin_memory: bool = False, requires_grad: bool = False,
                             check_invariants: bool | None = None) -> SparseTensor:
    """A CSR (``layout=ember.sparse_csr``), CSC (``sparse_csc``), BSR (``sparse_bsr``) or BSC
    (``sparse_bsc``) matrix: ``compressed_indices[i]:compressed_indices[i + 1]`` are the
    entries of row (column) ``i`` (of blocks, for BSR/BSC, whose ``values`` are (nnz, R, C)).

    Example:
        >>> ember.sparse_compressed_tensor([0, 1, 2], [1, 0], [5.0, 6.0], (2, 2),
        ...                                layout=ember.sparse_csr).to_dense()
        tensor([[0., 5.],
                [6., 0.]])
    """
    if layout not in (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc):
        raise ArgumentError(f"sparse_compressed_tensor: layout must be ember.sparse_csr, "
                            f"sparse_csc, sparse_bsr or sparse_bsc, got {layout!r}")
    op = f"{layout.name}_tensor"
    by_rows = layout in BY_ROWS
    names = ("crow_indices", "col_indices", "ncols") if by_rows else \
        ("ccol_indices", "row_indices", "nrows")
    compressed = _index(op, names[0], compressed_indices)
    plain = _index(op, names[1], plain_indices)
    values = _values(op, values, dtype, requires_grad)
    c, p = compressed.numpy(), plain.numpy()
    block = tuple(values.shape[1:]) if layout in BLOCKED else (1, 1)
    if c.ndim != 1 or not len(c) or p.ndim != 1 or len(p) != values.shape[0] or \
            values.ndim != (3 if layout in BLOCKED else 1):
        want = "(nnz, R, C)" if layout in BLOCKED else "(nnz,)"
        raise ShapeError(f"{op}: expected 1-D {names[0]} and {names[1]} of length nnz and "
                         f"values {want}; got shapes {tuple(compressed.shape)}, "
                         f"{tuple(plain.shape)}, {tuple(values.shape)} (batched and hybrid "
                         "compressed tensors are not supported)")
    n_outer, n_plain = len(c) - 1, int(p.max()) + 1 if len(p) else 0
    if size is None:
        size = (n_outer * block[0], n_plain * block[1]) if by_rows else \
            (n_plain * block[0], n_outer * block[1])
    size = tuple(int(n) for n in size)
    blocks = (size[0] // block[0], size[1] // block[1]) if len(size) == 2 else ()
    if len(size) != 2 or size != (blocks[0] * block[0], blocks[1] * block[1]) or \
            blocks[0 if by_rows else 1] != n_outer:
        raise ShapeError(f"{op}: size {size} does not fit {n_outer} compressed "
                         f"{'rows' if by_rows else 'columns'}"
                         + (f" of blocks {block}" if layout in BLOCKED else ""))
    check_numel(op, size)
    _check_compressed(op, names, c, p, blocks[1 if by_rows else 0], checking(check_invariants))
    return SparseTensor(layout, size, (compressed, plain), values, True)


def _check_compressed(op: str, names: tuple[str, str, str], c: np.ndarray, p: np.ndarray,
                      n_plain: int, sorted_rows: bool) -> None:
    """Raises the error of the first of PyTorch's invariants of compressed indices ``c`` and
    plain indices ``p`` that fails (the sorting one only when ``sorted_rows``)."""
    compressed, plain, dim = names
    if c[0] != 0:
        raise _broken(op, f"{compressed}[..., 0] == 0", f"it is {c[0]}")
    if c[-1] != len(p):
        raise _broken(op, f"{compressed}[..., -1] == nnz", f"it is {c[-1]}, nnz is {len(p)}")
    steps = np.diff(c)
    if steps.size and (steps.min() < 0 or steps.max() > n_plain):
        raise _broken(op, f"0 <= {compressed}[..., 1:] - {compressed}[..., :-1] <= {dim}",
                      f"{compressed} is {c.tolist()[:8]}, {dim} is {n_plain}")
    if len(p) and (p.min() < 0 or p.max() >= n_plain):
        bad = p.min() if p.min() < 0 else p.max()
        raise _broken(op, f"0 <= {plain} < {dim}", f"found {bad}, {dim} is {n_plain}")
    if sorted_rows and not sorted_distinct(c, p):
        outer = "nrows" if dim == "ncols" else "ncols"
        raise _broken(op, f"{plain}[..., {compressed}[..., i - 1]:{compressed}[..., i]] for "
                      f"all i = 1, ..., {outer} are sorted and distinct along the last "
                      "dimension values", f"{plain} {p.tolist()[:8]} under {compressed} "
                      f"{c.tolist()[:8]}")


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


def sparse_bsr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A BSR matrix: rows of (R, C) blocks, ``values``
    (nnz, R, C) (see :func:`sparse_compressed_tensor`).

    Example:
        >>> ember.sparse_bsr_tensor([0, 1, 1], [1], [[[1.0, 2.0]]], (2, 4)).to_dense()
        tensor([[0., 0., 1., 2.],
                [0., 0., 0., 0.]])
    """
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype,
                                    layout=sparse_bsr, requires_grad=requires_grad,
                                    check_invariants=check_invariants)


def sparse_bsc_tensor(ccol_indices: Any, row_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseTensor:
    """A BSC matrix: columns of (R, C) blocks, ``values``
    (nnz, R, C) (see :func:`sparse_compressed_tensor`).

    Example:
        >>> ember.sparse_bsc_tensor([0, 0, 1], [0], [[[1.0], [2.0]]], (2, 2)).to_dense()
        tensor([[0., 1.],
                [0., 2.]])
    """
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=sparse_bsc, requires_grad=requires_grad,
                                    check_invariants=check_invariants)
