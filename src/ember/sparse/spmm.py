"""``spmm``: a sparse matrix (row and column index per entry, and the entries' values) times a
dense matrix, the one primitive the sparse products are made of.

The forward multiplies each entry by its row of the dense matrix and sums the products of
each output row with one ``add.reduceat`` over entries sorted by row (COO coalesced and CSR
entries already are). Its vjp is another ``spmm`` (with rows and columns swapped) for the dense
matrix and a gather-multiply-sum for the values, so second derivatives come for free; for
complex numbers (a product is holomorphic) they are conjugated as PyTorch's convention wants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.ops.complex_parts import Holomorphic
from ember.ops.gather import index_select
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []

_KERNELS = compiled.register("ember.sparse.spmm_numba")
_SHARE = 1 << 18  # multiply-adds a piece takes at least


@primitive
class SpMM(Holomorphic, Primitive):
    name = "spmm"

    def forward(self, xp, rows, cols, values, dense, *, nrows):
        out = xp.zeros((nrows, dense.shape[1]), dtype=dense.dtype)
        if not rows.size:
            return out
        if rows.size > 1 and bool((rows[1:] < rows[:-1]).any()):
            order = xp.argsort(rows, kind="stable")
            rows, cols, values = rows[order], cols[order], values[order]
        starts = xp.flatnonzero(rows[1:] != rows[:-1]) + 1
        starts = xp.concatenate([xp.zeros(1, dtype=starts.dtype), starts])
        if _looped(xp, starts, rows, cols, values, dense, out):
            return out
        products = dense[cols]
        products *= values[:, None]
        out[rows[starts]] = xp.add.reduceat(products, starts, axis=0)
        return out

    def infer(self, rows, cols, values, dense, *, nrows):
        return TensorSpec((nrows, dense.shape[1]), dense.dtype)

    def vjp(self, ctx, g):
        rows, cols, values, dense = ctx.inputs
        d_values = d_dense = None
        if values.requires_grad:
            d_values = (index_select(g, 0, rows) * index_select(dense, 0, cols)).sum(-1)
        if dense.requires_grad:
            d_dense = apply(SpMM, cols, rows, values, g, nrows=dense.shape[0])
        return None, None, d_values, d_dense

    def jvp(self, ctx, d_rows, d_cols, d_values, d_dense):
        rows, cols, values, dense = ctx.inputs
        nrows = ctx.params["nrows"]
        return (apply(SpMM, rows, cols, d_values, dense, nrows=nrows)
                + apply(SpMM, rows, cols, values, d_dense, nrows=nrows))

    def flops(self, rows, cols, values, dense, *, nrows):
        return 2 * rows.shape[0] * dense.shape[1]


def _looped(xp: Any, starts: Any, rows: Any, cols: Any, values: Any, dense: Any,
            out: Any) -> bool:
    """Runs numba's loop (:mod:`ember.sparse.spmm_numba`) over the runs of entries of one
    row, shared among the cores; False (nothing written) where it does not apply."""
    if xp is not np or dense.dtype not in (np.float32, np.float64) or \
            values.dtype != dense.dtype or not compiled.numba_enabled():
        return False
    kernels = compiled.load(_KERNELS)
    if kernels is None:
        return False
    ends = np.append(starts, rows.size)
    args = [np.ascontiguousarray(a) for a in (ends, rows, cols, values, dense)]
    runs = len(starts)
    shares = parallel.share_count(rows.size * dense.shape[1], _SHARE)
    parallel.run([lambda lo=lo, hi=hi: kernels.spmm_rows(lo, hi, *args, out)
                  for lo, hi in parallel.blocks(runs, shares)])
    return True


def spmm(rows: Tensor, cols: Tensor, values: Tensor, dense: Tensor, nrows: int) -> Tensor:
    """The (nrows, n) product of the sparse matrix with entries ``values`` at (``rows``,
    ``cols``) and ``dense`` (k, n)."""
    return apply(SpMM, rows, cols, values, dense, nrows=nrows)
