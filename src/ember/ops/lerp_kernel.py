"""``lerp`` of float32, float16, bfloat16 and float64 tensors as one primitive: PyTorch's
values bit for bit, but for float64, and PyTorch's gradients at infinities
(:func:`ember.ops.fused_arithmetic.lerp` chooses it; complex lerp stays its composite).

PyTorch's CPU kernel rounds ``end - input`` to float32, then makes one fused multiply-add:
``input + w·diff`` where ``|w| < 0.5``, else ``end + (w - 1)·diff`` (a number weight rounded to
float32 first; float16 and bfloat16 run in float32). The composite rounded each step: 1 ulp
off in a quarter of the entries. Here float64 holds ``w·diff`` exactly and the sum is rounded
once: in numba's one-pass loop (:mod:`ember.ops.lerp_numba`), faster than the composite's
NumPy passes, or in NumPy's float64 passes where numba is off (3-4× slower than those).
float64 takes PyTorch's two forms with NumPy's two roundings (PyTorch's fused multiply-add
rounds once: 1 ulp apart on some entries).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.layouts import in_operands_layout
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.creation import zeros_like
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.relu_kernel import flat_blocks
from ember.ops.unary import in_float32

__all__ = ["lerp_into"]

_KERNELS = compiled.register("ember.ops.lerp_numba")
_SHARE = 1 << 21  # elements a piece takes at least


def _in_loop(xp: Any, a: Any, b: Any, w: tuple, weight: float | None) -> Any:
    """The lerp of float32 arrays in numba's loop, in ``a``'s layout where the operands share
    it (broadcast ones copied first), or None where numba is off."""
    if xp is not np or not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)  # (None where they fail to load: numba is off then)
    if kernels is None:
        return None
    operands = (a, b, *w)
    if any(x.shape != a.shape for x in operands):  # (broadcast ones copied)
        shape = np.broadcast_shapes(*(x.shape for x in operands))
        operands = tuple(x if x.shape == shape else
                         np.ascontiguousarray(np.broadcast_to(x, shape)) for x in operands)
    out = np.empty_like(operands[0])
    flat = flat_blocks(*operands, out)
    if flat is None:  # (layouts that differ: C order)
        out = np.empty(out.shape, np.float32)
        flat = [np.ascontiguousarray(x).reshape(-1) for x in (*operands, out)]
    if weight is None:
        parallel.over_rows(kernels.lerp_tensor, flat, _SHARE)
    else:
        parallel.over_rows(kernels.lerp_number, flat, _SHARE, np.float32(weight))
    return out


def _in_float64(xp: Any, a: Any, b: Any, w: tuple, weight: float | None) -> Any:
    """The lerp of float32 arrays by NumPy's calls: the same values, each sum in float64."""
    diff = (b - a).astype(np.float64)
    if weight is not None:
        w32 = np.float32(weight)
        small = bool(abs(w32) < 0.5)
        coeff = np.float64(w32 if small else w32 - np.float32(1))
        base = (a if small else b).astype(np.float64)
    else:
        small = xp.abs(w[0]) < 0.5  # (False at NaN: NaN · diff)
        coeff = xp.where(small, w[0], w[0] - np.float32(1)).astype(np.float64)
        base = xp.where(small, a, b).astype(np.float64)
    product = coeff * diff  # (exact: float32 times float32)
    total = base + product
    out = total.astype(np.float32)
    # (the float64 sum on a float32 tie, the second rounding's only error: its low 28 bits
    # are 0; there the sum's exact error picks the side)
    maybe = np.flatnonzero((total.view(np.int64) & 0xFFFFFFF) == 0)
    if maybe.size:
        base, product = np.broadcast_arrays(base, product)
        s, p = total.reshape(-1)[maybe], product.reshape(-1)[maybe]
        kept = s - base.reshape(-1)[maybe]
        err = (base.reshape(-1)[maybe] - (s - kept)) + (p - kept)
        near = out.reshape(-1)[maybe].astype(np.float64)
        other = s + (s - near)
        tie = (s != near) & (other.astype(np.float32) == other) & (np.abs(other) < np.inf)
        side = tie & ((err > 0) & (other > near) | (err < 0) & (other < near))
        out.reshape(-1)[maybe[side]] = other[side]
    return out


def _in_float64_forms(xp: Any, a: Any, b: Any, w: tuple, weight: float | None) -> Any:
    """The lerp of float64 arrays: ``a + w·diff`` where ``|w| < 0.5``, else ``b + (w - 1)·diff``
    (PyTorch's form: ``b - diff·(1 - w)`` gave +0 where it gives -0)."""
    diff = b - a
    if weight is not None:
        return a + weight * diff if abs(weight) < 0.5 else b + (weight - 1) * diff
    return xp.where(xp.abs(w[0]) < 0.5, a + w[0] * diff, b + (w[0] - 1) * diff)


@primitive
class Lerp(Primitive):
    """``lerp(input, end, weight)`` of real float32/float16/bfloat16/float64 tensors of one dtype
    (broadcast), the weight a third tensor or the number ``weight``; PyTorch's rules:
    ``g·(1 - w)``, ``g·w`` and ``g·(end - input)``, tangent ``lerp(ṫ_input, ṫ_end, w) +
    ẇ·(end - input)``."""

    name = "lerp"
    allocates = True
    jvp_takes_none = True

    @in_float32
    def forward(self, xp, a, b, *w, weight=None):
        if a.dtype == np.float64:
            out = _in_float64_forms(xp, a, b, w, weight)
        else:
            out = _in_loop(xp, a, b, w, weight)
            if out is None:
                out = _in_float64(xp, a, b, w, weight)
        # (a broadcast first operand leaves the others to decide, as in PyTorch)
        return out if a.flags.c_contiguous and a.shape == out.shape else \
            in_operands_layout(xp, out, a, b, *w)

    def infer(self, a, b, *w, weight=None):
        return broadcast_spec(a, b, *w, op=self.name)

    def reads(self, ctx, i):
        if len(ctx.inputs) == 2:
            return False  # (a number weight: the rules read no values)
        return any(t.requires_grad for t in ctx.inputs[:2]) if i == 2 else \
            ctx.inputs[2].requires_grad

    def vjp(self, ctx, g):
        a, b, *w = ctx.inputs
        weight = ctx.params["weight"] if not w else w[0]
        grads = (sum_to(g * (1 - weight), a.shape) if a.requires_grad else None,
                 sum_to(g * weight, b.shape) if b.requires_grad else None)
        if w and w[0].requires_grad:
            grads += (sum_to(g * (b - a), w[0].shape),)
        elif w:
            grads += (None,)
        return grads

    def jvp(self, ctx, da, db, *dw):
        a, b, *w = ctx.inputs  # (None: no tangent; a constant weight adds no 0·(inf - inf))
        out = None
        if da is not None or db is not None:
            da = zeros_like(a) if da is None else da
            db = zeros_like(b) if db is None else db
            out = apply(Lerp, da, db, *w, **ctx.params)
        if not dw or dw[0] is None:
            return out
        spread = dw[0] * (b - a)
        return spread if out is None else out + spread


def lerp_into(xp: Any, a: Any, b: Any, weight: float) -> Any:
    """``a.lerp_(b, weight)`` of backend arrays of one real float dtype, in place: :class:`Lerp`'s
    values without a tensor op's dispatch (optimizer states: ~2 us a call, where ``lerp_`` on
    a tensor takes ~8). Returns ``a``.

    Example:
        >>> a = np.zeros(2, np.float32); lerp_into(np, a, np.ones(2, np.float32), 0.25)
        array([0.25, 0.25], dtype=float32)
    """
    kernels = compiled.load(_KERNELS) if xp is np and compiled.numba_enabled() else None
    if kernels is not None and a.dtype == np.float32 and b.dtype == np.float32 and \
            a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
        # (into a buffer, then copied: with ``out`` aliasing ``a`` LLVM's alias check sends the
        # loop to its scalar version, 20x slower)
        flat, out = a.reshape(-1), np.empty(a.size, np.float32)
        parallel.over_rows(kernels.lerp_number, (flat, b.reshape(-1), out), _SHARE,
                           np.float32(weight))
        flat[...] = out
    else:
        a[...] = Lerp.forward(xp, a, b, weight=weight)
    return a
