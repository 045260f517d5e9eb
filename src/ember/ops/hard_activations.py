"""hardsigmoid and hardswish of floating tensors as primitives, with their gradients.

Each forward is PyTorch's kernel, bit for bit, in one buffer: ``clip(x + 3, 0, 6) / 6``, and
for hardswish ``x · clip(x + 3, 0, 6) / 6`` (multiplied, then divided); float16/bfloat16 in
float32, rounded once (PyTorch's opmath). Each gradient is one op with PyTorch's formula:
hardsigmoid's ``v · (1/6)`` (the float32 sixth, in every dtype) on ``(-3, 3)`` and 0
elsewhere; hardswish's ``v · (x / 3 + 0.5)`` on ``(-3, 3)``, 0 at and below -3 and ``v``
at and above 3, in float32 for float16/bfloat16. Float32/float64 arrays
of over 16 384 elements in one dense layout take numba's one-pass loops
(:mod:`ember.ops.hard_numba`, the same values): hardswish's forward and backward of 8x128x256
float32, 1 thread, took 490 µs in NumPy's calls (780 as the composite), 113 µs in the loops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.creation import zeros_like
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.relu_kernel import flat_blocks
from ember.ops.select import where
from ember.ops.unary import Unary, in_float32

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.hard_numba")
_SMALL = 1 << 14  # elements: NumPy's calls are as fast, without numba's dispatch (~7 µs)
_SHARE = 1 << 21  # elements a piece takes at least


def _in_loop(xp: Any, name: str, *arrays: Any) -> Any:
    """Kernel ``name`` of :mod:`ember.ops.hard_numba` over ``arrays`` into a new array in the
    first's layout, or None where it does not apply (NumPy's calls then)."""
    a = arrays[0]
    if xp is not np or a.size <= _SMALL or a.dtype not in (np.float32, np.float64) or \
            any(b.dtype != a.dtype for b in arrays) or not compiled.numba_enabled():
        return None
    out = np.empty_like(a)
    flat = flat_blocks(*arrays, out)
    kernels = compiled.load(_KERNELS)  # (None where they fail to load: numba is off then)
    if flat is None or kernels is None:
        return None
    parallel.over_rows(getattr(kernels, name), flat, _SHARE)
    return out


SIXTH = np.float32(1) / np.float32(6)  # (PyTorch's hardsigmoid slope, in every dtype)


def _forward(xp: Any, a: Any, swish: bool) -> Any:
    """``clip(a + 3, 0, 6)``, times ``a`` if ``swish``, divided by 6, in one new buffer (a 0-d
    array stays an array); in float32 for float16/bfloat16 ``a``, rounded once at the end."""
    wide = np.float32 if a.itemsize == 2 else None  # (an attribute read: free for float32)
    t = xp.add(a, 3, out=xp.empty_like(a, wide) if a.ndim == 0 else None, dtype=wide)
    xp.maximum(t, 0.0, out=t)
    xp.minimum(t, 6.0, out=t)
    if swish:
        xp.multiply(a, t, out=t)
    xp.true_divide(t, 6, out=t)
    return t if wide is None else t.astype(a.dtype)


def _inside(x: Any) -> Any:
    """``-3 < x < 3``, where the slopes are not constant (False at NaN)."""
    return (x > -3) & (x < 3)


@primitive
class Hardsigmoid(Unary):
    name = "hardsigmoid"

    def forward(self, xp, a):
        out = _in_loop(xp, "hardsigmoid", a)
        return _forward(xp, a, False) if out is None else out

    def chain(self, v, x, y):
        return apply(HardsigmoidGrad, v, x)


@primitive
class Hardswish(Unary):
    name = "hardswish"

    def forward(self, xp, a):
        out = _in_loop(xp, "hardswish", a)
        return _forward(xp, a, True) if out is None else out

    def chain(self, v, x, y):
        return apply(HardswishGrad, v, x)


class _Grad(Primitive):
    """A gradient ``v · slope(x)``, linear in ``v``; elementwise, broadcasting (under vmap)."""

    def reads(self, ctx, i):
        return i == 1  # (only x's values are read)

    def infer(self, v, x):
        return broadcast_spec(v, x, op=self.name)


def _full(xp: Any, v: Any, x: Any) -> tuple[Any, Any]:
    return (v, x) if v.shape == x.shape else xp.broadcast_arrays(v, x)


@primitive
class HardsigmoidGrad(_Grad):
    """hardsigmoid's backward: ``v · (1/6)`` (the float32 sixth, as PyTorch's) where
    ``-3 < x < 3``, 0 elsewhere (NaN included)."""

    name = "hardsigmoid_grad"

    @in_float32
    def forward(self, xp, v, x):
        out = _in_loop(xp, "hardsigmoid_grad", v, x)
        if out is not None:
            return out
        v, x = _full(xp, v, x)
        out = xp.multiply(v, v.dtype.type(SIXTH), out=xp.empty_like(v) if v.ndim == 0 else None)
        xp.copyto(out, 0, where=~_inside(x))
        return out

    def vjp(self, ctx, g):
        v, x = ctx.inputs  # (its derivative in x is 0 wherever it exists: zeros, as PyTorch's)
        return sum_to(apply(HardsigmoidGrad, g, x), v.shape), \
            zeros_like(x) if x.requires_grad else None

    def jvp(self, ctx, dv, dx):
        return apply(HardsigmoidGrad, dv, ctx.inputs[1])


@primitive
class HardswishGrad(_Grad):
    """hardswish's backward: ``v · (x / 3 + 0.5)`` where ``-3 < x < 3``, 0 at and below -3,
    ``v`` at and above 3, as PyTorch's kernel; its derivative in ``x`` is ``v / 3`` on
    ``(-3, 3)``."""

    name = "hardswish_grad"

    def reads(self, ctx, i):
        return i == 1 or ctx.inputs[1].requires_grad  # (x's gradient is g · v / 3)

    @in_float32
    def forward(self, xp, v, x):
        out = _in_loop(xp, "hardswish_grad", v, x)
        if out is not None:
            return out
        v, x = _full(xp, v, x)
        out = xp.true_divide(x, 3, out=xp.empty_like(x) if x.ndim == 0 else None)
        xp.add(out, 0.5, out=out)
        xp.multiply(v, out, out=out)
        xp.copyto(out, v, where=x >= 3)  # (NaN stays NaN, as PyTorch's vectorised kernel)
        xp.copyto(out, 0, where=x <= -3)
        return out

    def vjp(self, ctx, g):
        v, x = ctx.inputs
        return (sum_to(apply(HardswishGrad, g, x), v.shape),
                sum_to(where(_inside(x), g * v / 3, 0), x.shape))

    def jvp(self, ctx, dv, dx):
        v, x = ctx.inputs
        return apply(HardswishGrad, dv, x) + where(_inside(x), v * dx / 3, 0)
