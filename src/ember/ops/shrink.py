"""softshrink and hardshrink as primitives: one op of two or three NumPy passes each, where
their composites of ``where``, comparisons and arithmetic took four to seven Ember ops (float32,
10^5 elements, forward: softshrink 142 -> 31 µs, hardshrink 48 -> 36 µs, PyTorch 11 and 8;
with the backward, one op too, 326 -> 90 and 104 -> 97 µs, PyTorch 41 and 40). Their
functions are in :mod:`ember.ops.activations`."""

from __future__ import annotations

from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.select import select_array
from ember.ops.unary import Unary, in_float32

__all__: list[str] = []


class _Shrink(Unary):
    def chain(self, v, x, y, *, lambd):
        return apply(ShrinkGrad, v, x, lambd=lambd)


@primitive
class ShrinkGrad(Primitive):
    """Both shrinks' backward ``v`` where ``|x| > lambd`` (and at NaN), 0 within, as one op
    (``where(|x| <= lambd, 0, v)`` took three); linear in ``v``, flat in ``x``."""

    name = "shrink_grad"

    def forward(self, xp, v, x, *, lambd):
        return select_array(xp, xp.less_equal(xp.abs(x), lambd), xp.zeros((), v.dtype), v)

    def infer(self, v, x, **params):
        return broadcast_spec(v, x, op=self.name)

    def vjp(self, ctx, g):
        v, x = ctx.inputs
        return (sum_to(apply(ShrinkGrad, g, x, **ctx.params), v.shape) if v.requires_grad
                else None, None)

    def jvp(self, ctx, dv, dx):
        return apply(ShrinkGrad, dv, ctx.inputs[1], **ctx.params)


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
