"""Batching rules of elementwise primitives: align the operands' ranks, then broadcast.

A batched operand of logical rank ``k`` is ``(B, *shape)``; padding it with size-1 axes after
the batch axis up to the largest logical rank makes NumPy-style broadcasting against the
unbatched operands (right-aligned) give exactly the logical result, batched in front.
"""

from __future__ import annotations

from typing import Any

from ember.func.batching import pad_rank, prim, rule
from ember.ops.elementwise import ELEMENTWISE
from ember.ops.primitive import apply


def elementwise_rule(name: str) -> Any:
    p = prim(name)

    def batch_elementwise(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        if len(xs) == 1:
            return _apply(p, xs, params)
        rank = max(x.ndim - 1 if is_b else x.ndim for x, is_b in zip(xs, bs))
        xs = tuple(pad_rank(x, rank) if is_b else x for x, is_b in zip(xs, bs))
        return _apply(p, xs, params)

    return batch_elementwise


def _apply(p: Any, xs: tuple, params: dict) -> Any:
    return apply(p, *xs, **params)


for _name in ELEMENTWISE:
    rule(_name)(elementwise_rule(_name))
