"""Batching rules of the gamma-family primitives (elementwise: the shared rule) and of
``scatter_reduce``, whose index tensors cover every dimension of the data: an ``arange(B)``
index in front batches it, as ``index_put``'s rule does."""

from __future__ import annotations

from typing import Any

import ember.ops.gamma  # noqa: F401 - registers the primitives named below
import ember.ops.scatter_reduce  # noqa: F401
from ember.func.batching import batched, pad_rank, prim, rule
from ember.func.batching.elementwise import elementwise_rule
from ember.func.batching.indexing import _batched_indices
from ember.ops.broadcast import broadcast_shapes
from ember.ops.primitive import apply

for _name in ("lgamma", "polygamma", "i0", "i1"):
    rule(_name)(elementwise_rule(_name))


@rule("scatter_reduce")
def _scatter_reduce(b: int, xs: tuple, bs: tuple, *, reduce: str, include_self: bool,
                    wide: bool = True) -> Any:
    a, v, *idx = xs
    a = batched(a, b, bs[0])
    block = broadcast_shapes(*(tuple(i.shape)[ib:] for i, ib in zip(idx, bs[2:])))
    v = pad_rank(batched(v, b, bs[1]), len(block))
    v = apply(prim("expand"), v, shape=(b,) + tuple(block))
    idx, _ = _batched_indices(b, tuple(idx), bs[2:], a.device)
    return apply(prim("scatter_reduce"), a, v, *idx, reduce=reduce, include_self=include_self,
                 wide=wide)
