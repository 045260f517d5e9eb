"""softshrink and hardshrink as primitives: one op of two or three NumPy passes each, where
their composites of ``where``, comparisons and arithmetic took four to seven Ember ops (float32,
10^5 elements, forward: softshrink 142 -> 31 µs, hardshrink 48 -> 36 µs, PyTorch 11 and 8;
with the backward 329 -> 105 and 106 -> 111 µs, PyTorch 45 and 42). Their functions are in
:mod:`ember.ops.activations`."""

from __future__ import annotations

from ember.ops.primitive import primitive
from ember.ops.select import select_array, where
from ember.ops.unary import Unary, abs, in_float32

__all__: list[str] = []


class _Shrink(Unary):
    def chain(self, v, x, y, *, lambd):
        """``v`` outside ``[-lambd, lambd]`` (and at NaN), 0 within."""
        return where(abs(x) <= lambd, 0, v)


@primitive
class Softshrink(_Shrink):
    """``x - clip(x, -lambd, lambd)``: ``x ∓ lambd`` outside, +0.0 within (as PyTorch's
    vectorized loop; its scalar tail gives -0.0 for ``-lambd <= x <= -0.0``); NaN stays NaN."""

    name = "softshrink"

    @in_float32
    def forward(self, xp, a, *, lambd):
        return xp.subtract(a, xp.clip(a, -lambd, lambd))


@primitive
class Hardshrink(_Shrink):
    """``x`` outside ``[-lambd, lambd]``, 0 within; NaN stays NaN."""

    name = "hardshrink"

    def forward(self, xp, a, *, lambd):
        inside = xp.less_equal(xp.abs(a), lambd)
        return select_array(xp, inside, xp.zeros((), a.dtype), a)
