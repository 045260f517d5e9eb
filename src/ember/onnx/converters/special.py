"""Special functions without an ONNX op: ``erfinv``, as Giles' polynomials in float64."""

from __future__ import annotations

import numpy as np

from ember.dtypes import float64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter
from ember.ops.erfc_kernel import _ERFINV_CENTRAL, _ERFINV_TAIL


def _horner(ctx: Context, coefficients: tuple, t: str) -> str:
    """``sum c_k t^k`` (highest power first) in float64."""
    acc = ctx.scalar(coefficients[0], float64)
    for c in coefficients[1:]:
        acc = ctx.node("Add", [ctx.node("Mul", [acc, t]), ctx.scalar(c, float64)])
    return acc


@converter("erfinv")
def erfinv(ctx: Context, eqn: Eqn) -> str | None:
    """``y·P(w)`` with ``w = -log((1 - y)(1 + y))``, Giles' first guess, which eager refines
    by a Halley step on erf: to 1e-7 relative wherever ``w < 16``, which holds for every
    float32 (and narrower) input; ±inf at ±1, NaN beyond. float64 needs that step on
    erf/erfc, which onnxruntime has no float64 kernel for: refused."""
    src = eqn.inputs[0]
    if src.dtype.itemsize >= 8:
        return ctx.refuse(f"erfinv of {src.dtype.name}: exported as Giles' polynomial, good "
                          "to 1e-7 (float32's precision), and the refinement that float64 "
                          "needs is a step on erf, which onnxruntime has no float64 kernel "
                          "for. Hint: compute erfinv in float32")
    y = ctx.cast(ctx.value(src), src.dtype, float64)
    a = ctx.node("Abs", [y])
    one = ctx.scalar(1, float64)
    w = ctx.node("Neg", [ctx.node("Log", [ctx.node("Mul", [ctx.node("Sub", [one, a]),
                                                            ctx.node("Add", [one, a])])])])
    central = _horner(ctx, _ERFINV_CENTRAL, ctx.node("Sub", [w, ctx.scalar(2.5, float64)]))
    tail = _horner(ctx, _ERFINV_TAIL, ctx.node("Sub", [ctx.node("Sqrt", [w]),
                                                       ctx.scalar(3, float64)]))
    ratio = ctx.node("Where", [ctx.node("Less", [w, ctx.scalar(5, float64)]), central, tail])
    out = ctx.node("Where", [ctx.node("Equal", [a, one]),
                             ctx.node("Mul", [y, ctx.scalar(np.inf, float64)]),
                             ctx.node("Mul", [y, ratio])])
    return ctx.cast(out, float64, src.dtype)
