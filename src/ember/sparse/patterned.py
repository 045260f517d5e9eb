"""Ops whose output pattern is given rather than computed: ``sampled_addmm`` (a dense product
evaluated only at a CSR pattern) and ``spdiags`` (a matrix from diagonals)."""

from __future__ import annotations

import numpy as np

from ember.errors import ArgumentTypeError, ShapeError
from ember.layouts import layout, sparse_coo, sparse_csr
from ember.ops.creation import as_tensor, from_numpy
from ember.ops.gather import index_select
from ember.sparse.convert import coo_index, to_compressed
from ember.sparse.tensor import SparseTensor, check_numel
from ember.tensor import Tensor

__all__ = ["sampled_addmm", "spdiags"]


def sampled_addmm(input: SparseTensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0,
                  alpha: float = 1.0) -> SparseTensor:
    """``beta * input + alpha * (mat1 @ mat2)``, the product computed only at the specified
    elements of CSR ``input`` (its pattern is the result's); differentiable in all three.

    Example:
        >>> s = ember.eye(2).to_sparse_csr()
        >>> ember.sparse.sampled_addmm(s, ember.ones(2, 3), ember.ones(3, 2), beta=0.5,
        ...                            alpha=2.0).values()
        tensor([6.5000, 6.5000])
    """
    if not isinstance(input, SparseTensor) or input.layout is not sparse_csr:
        got = input.layout if isinstance(input, SparseTensor) else "ember.strided"
        raise ArgumentTypeError(f"sampled_addmm: expected input in layout ember.sparse_csr, got "
                                f"{got}. Hint: convert it with .to_sparse_csr()")
    m, n = input.shape
    if mat1.ndim != 2 or mat2.ndim != 2 or mat1.shape[0] != m or mat2.shape[1] != n or \
            mat1.shape[1] != mat2.shape[0]:
        raise ShapeError(f"sampled_addmm: input {tuple(input.shape)}, mat1 "
                         f"{tuple(mat1.shape)} and mat2 {tuple(mat2.shape)} do not fit: "
                         f"expected mat1 ({m}, k) and mat2 (k, {n})")
    rows, cols = (from_numpy(a) for a in coo_index(input))
    products = (index_select(mat1, 0, rows) * index_select(mat2.t(), 0, cols)).sum(-1)
    values = (input._vals if beta == 1 else input._vals * beta) + \
        (products if alpha == 1 else products * alpha)
    return SparseTensor(sparse_csr, input._size, input._index, values, True)


def spdiags(diagonals: Tensor, offsets: Tensor, shape: tuple[int, int],
            layout: layout | None = None) -> SparseTensor:
    """A sparse (m, n) matrix with row ``d`` of ``diagonals`` on diagonal ``offsets[d]``
    (0 the main one, positive above); element (i, j) of a diagonal is ``diagonals[d, j]``,
    as SciPy's ``spdiags``. COO unless ``layout`` says CSR or CSC.

    Example:
        >>> ember.sparse.spdiags(ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
        ...                      ember.tensor([0, -1]), (3, 3)).to_dense()
        tensor([[1., 0., 0.],
                [4., 2., 0.],
                [0., 5., 3.]])
    """
    diagonals, offsets = as_tensor(diagonals), as_tensor(offsets)
    if diagonals.ndim == 1:
        diagonals = diagonals.unsqueeze(0)
    where = offsets.reshape((-1,)).tolist()
    if diagonals.ndim != 2 or len(where) != diagonals.shape[0] or len(set(where)) != len(where):
        raise ShapeError(f"spdiags: expected diagonals (D, N) and D distinct offsets, got "
                         f"diagonals {tuple(diagonals.shape)} and offsets {where}")
    m, n = (int(s) for s in shape)
    check_numel("spdiags", (m, n))
    rows, cols, picks = [], [], []
    for d, k in enumerate(where):
        j = np.arange(max(0, k), min(m + k, n, diagonals.shape[1]))
        rows.append(j - k)
        cols.append(j)
        picks.append(d * diagonals.shape[1] + j)
    index = np.stack([np.concatenate(rows), np.concatenate(cols)]).astype(np.int64)
    values = index_select(diagonals.reshape((-1,)), 0,
                          from_numpy(np.concatenate(picks).astype(np.int64)))
    out = SparseTensor(sparse_coo, (m, n), (from_numpy(index),), values, index.shape[1] <= 1)
    return out if layout in (None, sparse_coo) else to_compressed(out, layout)
