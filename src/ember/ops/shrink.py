"""softshrink and hardshrink as primitives: one op of two or three NumPy passes each, where
their composites of ``where``, comparisons and arithmetic took four to seven Ember ops (float32,
10^5 elements, forward: softshrink 142 -> 31 µs, hardshrink 48 -> 36 µs, PyTorch 11 and 8;
with the backward, one op too, 326 -> 90 and 104 -> 97 µs, PyTorch 41 and 40). Float32 and
float64 arrays of over 4096 elements in one dense layout, with a plain number ``lambd``, take
numba's one pass instead (:mod:`ember.ops.slope_grads_numba`, the same values): forward at
10^6 float32 elements, hardshrink 366 -> 119 µs, softshrink 333 -> 115 µs; with the backward
1063 -> 702 and 1236 -> 815 µs (PyTorch 114, 140, 850, 758; host load 8.6 on 2 cores). Their
functions are in :mod:`ember.ops.activations`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.int_args import wide_int_as_float
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.relu_kernel import slope_grad
from ember.ops.select import select_array
from ember.ops.unary import Unary, in_float32

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.slope_grads_numba")
_SMALL = 1 << 12  # elements: below, NumPy's calls cost no more than numba's dispatch


def _one_pass(xp: Any, name: str, v: Any, x: Any, lambd: Any) -> Any:
    """Kernel ``name`` of :mod:`ember.ops.slope_grads_numba` over ``v`` and ``x`` with
    ``lambd``, or None where NumPy's calls run: a ``lambd`` other than a plain non-NaN number
    (NumPy's compare would promote a NumPy float64 with a float32 array), or one of
    :func:`~ember.ops.relu_kernel.slope_grad`'s cases (small, another dtype or layout)."""
    if xp is not np or x.size <= _SMALL or type(lambd) not in (float, int) or \
            lambd != lambd or 0 in x.strides:
        return None
    return slope_grad(xp, _KERNELS, name, (v, x), (lambd, 0.0), _SMALL)


def _inside(xp: Any, x: Any, lambd: Any) -> Any:
    """``|x| <= lambd`` (for bfloat16 and float8, an int ``lambd`` past int64 as a float)."""
    if x.dtype.isbuiltin != 1:
        lambd = wide_int_as_float(lambd)
    return xp.less_equal(xp.abs(x), lambd)


class _Shrink(Unary):
    def chain(self, v, x, y, *, lambd):
        return apply(ShrinkGrad, v, x, lambd=lambd)


@primitive
class ShrinkGrad(Primitive):
    """Both shrinks' backward ``v`` where ``|x| > lambd`` (and at NaN), 0 within, as one op
    (``where(|x| <= lambd, 0, v)`` took three); linear in ``v``, flat in ``x``."""

    name = "shrink_grad"

    def forward(self, xp, v, x, *, lambd):
        out = _one_pass(xp, self.name, v, x, lambd)
        if out is not None:
            return out
        return select_array(xp, _inside(xp, x, lambd), xp.zeros((), v.dtype), v)

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
        out = _one_pass(xp, self.name, a, a, lambd)
        return xp.subtract(a, xp.clip(a, -lambd, lambd)) if out is None else out


@primitive
class Hardshrink(_Shrink):
    """``x`` outside ``[-lambd, lambd]``, 0 within; NaN stays NaN."""

    name = "hardshrink"

    def forward(self, xp, a, *, lambd):
        out = _one_pass(xp, ShrinkGrad.name, a, a, lambd)  # (v where |x| > lambd, at v = x)
        if out is not None:
            return out
        return select_array(xp, _inside(xp, a, lambd), xp.zeros((), a.dtype), a)
