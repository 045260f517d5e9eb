"""``addcmul`` and ``addcdiv`` of float16/bfloat16 tensors as one primitive: PyTorch's values
and PyTorch's gradients bit for bit (:func:`ember.ops.fused_arithmetic._add_product` chooses
it; other dtypes stay its composite).

PyTorch's CPU kernels compute these in float32 ("opmath"): ``(value * tensor1) op tensor2``,
addcmul's multiply-add fused (one rounding: float64 holds the float32 product exactly, and
the sum is rounded back through float32), then rounded to the half dtype. Its gradients are
formulas computed in the half dtype, each step rounded there (``grad * (tensor2 * value)``);
differentiating the float32 composite instead rounds them differently (an ulp apart in a
third of the elements).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.layouts import in_operands_layout
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.convert import Cast
from ember.ops.creation import full_like, zeros_like
from ember.ops.primitive import Primitive, TensorSpec, primitive

__all__: list[str] = []


def half_addc(xp: Any, a: Any, b: Any, c: Any, value: float, divide: bool) -> Any:
    """``a + (value * b) op c`` of half (or float32) arrays as PyTorch's CPU kernels compute
    it for a half ``a``: in float32, ``value`` too, addcmul's multiply-add in float64 (the
    float32 product exact; the sum then rounded to float64, float32 and the half dtype, where
    PyTorch's fma rounds to float32 and the half dtype: equal but where the float64 sum
    lands on a float32 tie at a float16 tie, which no test has met); a float32 array of the
    result, for the caller to round (optimizers' ``addcmul_``/``addcdiv_`` share it).

    Example:
        >>> h = np.array([1.0, 2.0], np.float16)
        >>> half_addc(np, h, h, h, 0.5, False).astype(np.float16)  # h + 0.5 * h * h
        array([1.5, 4. ], dtype=float16)
    """
    f32 = np.float32
    b32 = b.astype(f32, copy=False)
    if value != 1:
        b32 = b32 * f32(value)
    if divide:
        return a.astype(f32) + b32 / c.astype(f32, copy=False)
    f64 = np.float64
    return (a.astype(f64) + b32.astype(f64) * c.astype(f64)).astype(f32)


@primitive
class AddcHalf(Primitive):
    """``input + value * tensor1 * tensor2`` (``divide`` False) or ``input + value * tensor1 /
    tensor2`` with a float16/bfloat16 result ``dtype`` (broadcast; the operands as given,
    each converted to ``dtype`` for the value); PyTorch's rules on the operands as given
    (an int64 ``tensor1`` scales in float32, a 0-d float64 one in float64), each step
    rounded in its dtype: ``g``, ``g * (tensor2 * value)``, ``g * (tensor1 * value)``
    (addcmul), and ``g * (full_like(tensor2, value) / tensor2)``, ``-g * ((value * tensor1)
    / (tensor2 * tensor2))`` (addcdiv); tangent ``ṫ_input + ṫ_1 op t_2 * value`` and
    ``ṫ_2 * t_1 * value`` or ``-(ṫ_2 * (t_1 / t_2) / t_2) * value``."""

    name = "addc_half"
    allocates = True
    jvp_takes_none = True

    def forward(self, xp, a, b, c, value=1.0, divide=False, dtype=None):
        a, b, c = (x if x.dtype == dtype.np else Cast.forward(xp, x, dtype=dtype)
                   for x in (a, b, c))
        out = half_addc(xp, a, b, c, value, divide).astype(a.dtype)
        return out if a.flags.c_contiguous and a.shape == out.shape else \
            in_operands_layout(xp, out, a, b, c)

    def infer(self, a, b, c, value=1.0, divide=False, dtype=None):
        return TensorSpec(broadcast_spec(a, b, c, op=self.name).shape, dtype)

    def vjp(self, ctx, g):
        a, b, c = ctx.inputs
        value, divide = ctx.params["value"], ctx.params["divide"]
        g_b = g_c = None
        if b.requires_grad:
            g_b = g * (full_like(c, value) / c if divide else c * value)
        if c.requires_grad:
            g_c = -g * ((value * b) / (c * c)) if divide else g * (b * value)
        return (sum_to(g, a.shape) if a.requires_grad else None,
                None if g_b is None else sum_to(g_b, b.shape),
                None if g_c is None else sum_to(g_c, c.shape))

    def jvp(self, ctx, da, db, dc):
        a, b, c = ctx.inputs
        value, divide = ctx.params["value"], ctx.params["divide"]
        out = da
        if db is not None:
            step = (db / c if divide else db * c) * value
            out = step if out is None else out + step
        if dc is not None:
            step = -(dc * (b / c) / c) * value if divide else b * dc * value
            out = step if out is None else out + step
        dtype = ctx.params["dtype"]
        return zeros_like(a, dtype=dtype) if out is None else out.to(dtype)
