"""Batching rules of the complex-number primitives: the batch axis stays in front.

``real``, ``imag``, ``conj``, ``angle`` and ``complex`` are elementwise (``elementwise.py``
lists them); ``view_as_real`` and ``view_as_complex`` act on the last dim only, so they apply
to a batched input as they are.
"""

from __future__ import annotations

from typing import Any

from ember.func.batching import prim, rule
from ember.ops.primitive import apply


def _as_is_rule(name: str) -> Any:
    p = prim(name)

    def batch_as_is(b: int, xs: tuple, bs: tuple) -> Any:
        return apply(p, xs[0])

    return batch_as_is


for _name in ("view_as_real", "view_as_complex"):
    rule(_name)(_as_is_rule(_name))
