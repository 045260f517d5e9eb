"""PyTorch's older products of a sparse COO matrix and a dense one whose result is sparse, by
rows: ``hspmm`` (a hybrid tensor of the product's rows that can be nonzero), ``smm`` and
``sspaddmm``/``saddmm`` (those rows' elements as COO entries), and ``dsmm`` (dense).

Each is :func:`ember.sparse.mm` (the ``spmm`` primitive) and a gather of its rows, so each is
differentiable in the sparse values and the dense matrix (PyTorch 2.13 has no derivative for
``hspmm``, ``smm`` and ``sspaddmm``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentTypeError, ShapeError
from ember.layouts import sparse_coo
from ember.ops.gather import index_select
from ember.ops.join import cat
from ember.sparse.convert import coo_index, long_index
from ember.sparse.ops import mm
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

__all__ = ["dsmm", "hspmm", "saddmm", "smm", "sspaddmm"]


def _coo_matrix(op: str, s: Any) -> SparseTensor:
    if not isinstance(s, SparseTensor) or s.layout is not sparse_coo:
        got = s.layout if isinstance(s, SparseTensor) else "ember.strided"
        raise ArgumentTypeError(f"{op}: expected a sparse COO matrix, got layout {got} (as in "
                                "PyTorch). Hint: convert it with .to_sparse()")
    return s


def _rows(op: str, mat1: Any, mat2: Tensor) -> tuple[np.ndarray, Tensor]:
    """The sorted rows of COO ``mat1`` holding an entry, and those rows of ``mat1 @ mat2``."""
    s = _coo_matrix(op, mat1)
    if mat2.ndim != 2 or s.ndim != 2 or mat2.shape[0] != s.shape[1]:
        raise ShapeError(f"{op}: {tuple(s.shape)} @ {tuple(mat2.shape)}: expected a sparse "
                         f"matrix and a dense matrix with {s.shape[-1]} rows")
    rows = np.unique(coo_index(s)[0])
    return rows, index_select(mm(s, mat2), 0, long_index(rows))


def _row_elements(op: str, mat1: Any, mat2: Tensor) -> tuple[np.ndarray, Tensor]:
    """The (2, n) index and the values of every element of :func:`_rows`'s rows."""
    rows, values = _rows(op, mat1, mat2)
    n = mat2.shape[1]
    index = np.stack([np.repeat(rows, n), np.tile(np.arange(n), len(rows))])
    return index, values.reshape(-1)


def hspmm(mat1: SparseTensor, mat2: Tensor) -> SparseTensor:
    """``mat1 @ mat2`` as a hybrid COO tensor (one sparse dimension): the rows of the product
    where ``mat1`` has an entry.

    Example:
        >>> s = ember.sparse_coo_tensor([[1], [0]], [2.0], (3, 2))
        >>> ember.hspmm(s, ember.ones(2, 2))
        tensor(indices=tensor([[1]]),
               values=tensor([[2., 2.]]),
               size=(3, 2), nnz=1, layout=ember.sparse_coo)
    """
    rows, values = _rows("hspmm", mat1, mat2)
    return SparseTensor(sparse_coo, (mat1.shape[0], mat2.shape[1]),
                        (long_index(rows[None]),), values, False)


def sspaddmm(input: SparseTensor, mat1: SparseTensor, mat2: Tensor, *, beta: float = 1,
             alpha: float = 1) -> SparseTensor:
    """``beta * input + alpha * (mat1 @ mat2)``, sparse COO (uncoalesced): ``input``'s entries,
    then every element of the product's rows where ``mat1`` has an entry.

    Example:
        >>> s = ember.sparse_coo_tensor([[1], [0]], [2.0], (2, 2))
        >>> ember.sspaddmm(s, s, ember.ones(2, 2), beta=0.5)._values()
        tensor([1., 2., 2.])
    """
    index, values = _row_elements("sspaddmm", mat1, mat2)
    base = _coo_matrix("sspaddmm", input)
    shape = (mat1.shape[0], mat2.shape[1])
    if tuple(base.shape) != shape:
        raise ShapeError(f"sspaddmm: input of shape {tuple(base.shape)} does not match the "
                         f"product's {shape}")
    both = np.concatenate([coo_index(base), index], axis=1)
    scaled = [base._vals if beta == 1 else base._vals * beta,
              values if alpha == 1 else values * alpha]
    return SparseTensor(sparse_coo, shape, (long_index(both),), cat(scaled), False)


def saddmm(input: SparseTensor, mat1: SparseTensor, mat2: Tensor, *, beta: float = 1,
           alpha: float = 1) -> SparseTensor:
    """PyTorch's older name of :func:`sspaddmm`.

    Example:
        >>> s = ember.sparse_coo_tensor([[1], [0]], [2.0], (2, 2))
        >>> ember.saddmm(s, s, ember.ones(2, 2)).to_dense()
        tensor([[0., 0.],
                [4., 2.]])
    """
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha)


def smm(input: SparseTensor, mat: Tensor) -> SparseTensor:
    """``input @ mat`` as sparse COO: every element of the product's rows where ``input`` has
    an entry (uncoalesced, as PyTorch's).

    Example:
        >>> s = ember.sparse_coo_tensor([[1], [0]], [2.0], (2, 2))
        >>> ember.smm(s, ember.ones(2, 3))._values()
        tensor([2., 2., 2.])
    """
    index, values = _row_elements("smm", input, mat)
    return SparseTensor(sparse_coo, (input.shape[0], mat.shape[1]), (long_index(index),), values,
                        False)


def dsmm(input: SparseTensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a sparse matrix (any layout) and a dense one, dense.

    Example:
        >>> ember.dsmm(ember.eye(2).to_sparse(), ember.ones(2, 1))
        tensor([[1.],
                [1.]])
    """
    return mm(input, mat2)
