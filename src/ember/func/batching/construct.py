"""Batching rules of tensors built from others (ember/ops/construct.py, unfold.py).

Only ``unfold_view`` (``Tensor.unfold``, in unfold.py) is a primitive there; the rest are
composites whose primitives batch by their own rules. ``no_grad_from`` (ops/select.py) copies
a value into the sources' graph.
"""

from __future__ import annotations

from typing import Any

from ember.func.batching import batched, prim, reshape, rule
from ember.ops.primitive import apply

FULL = (None, None, None)  # ``:`` in a normalized basic index


@rule("unfold_view")
def _unfold_view(b: int, xs: tuple, bs: tuple, *, dimension: int, size: int, step: int) -> Any:
    (x,) = xs
    if x.ndim == 1:  # a logical 0-d input: its one entry, taken ``size`` (0 or 1) times
        return apply(prim("slice"), reshape(x, (b, 1)), index=(FULL, (0, size, 1)))
    return apply(prim("unfold_view"), x, dimension=dimension + 1, size=size, step=step)


@rule("no_grad_from")
def _no_grad_from(b: int, xs: tuple, bs: tuple) -> Any:
    return apply(prim("no_grad_from"), batched(xs[0], b, bs[0]), *xs[1:])
