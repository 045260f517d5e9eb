"""Batching rule of ``spmm``, the sparse product's primitive: a batch of dense right operands
is one wider dense matrix; batched indices or values run one product per sample."""

from __future__ import annotations

from typing import Any

from ember.func.batching import batched, move, prim, reshape, rule
from ember.ops.join import stack
from ember.ops.primitive import apply


@rule("spmm")
def _spmm(b: int, xs: tuple, bs: tuple, *, nrows: int) -> Any:
    rows, cols, values, dense = xs
    p = prim("spmm")
    if not any(bs[:3]):  # (B, k, n) -> (k, B*n): one product
        k, n = tuple(dense.shape)[1:]
        wide = reshape(move(dense, 0, 1), (k, b * n))
        out = apply(p, rows, cols, values, wide, nrows=nrows)
        return move(reshape(out, (nrows, b, n)), 1, 0)
    rows, cols, values, dense = (batched(x, b, is_b) for x, is_b in zip(xs, bs))
    return stack([apply(p, rows[i], cols[i], values[i], dense[i], nrows=nrows)
                  for i in range(b)])
