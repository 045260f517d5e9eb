"""Special functions without an ONNX op: ``erfinv`` (Giles' polynomials in float64),
``logaddexp``/``logaddexp2``, ``hypot``, ``xlogy``, ``logit``, ``sinc``, in eager's stable
forms; ``isclose`` rounded in its dtype, as eager; ``gcd``/``lcm`` by Euclid's steps."""

from __future__ import annotations

import math

import numpy as np

from ember import dtypes
from ember.dtypes import DType, bool_, float32, float64, int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.converters.elementwise import near_zero
from ember.onnx.registry import converter
from ember.ops.erfc_kernel import _ERFINV_CENTRAL, _ERFINV_TAIL


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
    central = ctx.horner(_ERFINV_CENTRAL, ctx.node("Sub", [w, ctx.scalar(2.5, float64)]))
    tail = ctx.horner(_ERFINV_TAIL, ctx.node("Sub", [ctx.node("Sqrt", [w]),
                                                       ctx.scalar(3, float64)]))
    ratio = ctx.node("Where", [ctx.node("Less", [w, ctx.scalar(5, float64)]), central, tail])
    out = ctx.node("Where", [ctx.node("Equal", [a, one]),
                             ctx.node("Mul", [y, ctx.scalar(np.inf, float64)]),
                             ctx.node("Mul", [y, ratio])])
    return ctx.cast(out, float64, src.dtype)


def computed_in(dtype: DType) -> DType:
    """The dtype eager computes ``dtype`` in: float16 and bfloat16 in float32."""
    return dtype if dtype.name in ("float32", "float64") else float32


@converter("logaddexp", "logaddexp2")
def logaddexp(ctx: Context, eqn: Eqn) -> str:
    """NumPy's stable form: ``max + log1p(base**-|a - b|)`` (over ln 2 for base 2), and
    ``a + log_base(2)`` where ``a == b`` (two equal infinities); NaN propagates. float32
    ``logaddexp`` in float64, rounded once, as eagerly (in float32 it loses every digit where
    ``exp(a) + exp(b)`` is about 1, the result near 0)."""
    dtype = eqn.outputs[0].dtype
    two = eqn.prim.name == "logaddexp2"
    work = float64 if dtype is float32 and not two else computed_in(dtype)
    a, b = (ctx.cast(ctx.value(v), v.dtype, work) for v in eqn.inputs)
    gap = ctx.node("Neg", [ctx.node("Abs", [ctx.node("Sub", [a, b])])])
    power = ctx.node("Pow", [ctx.scalar(2, work), gap]) if two else ctx.node("Exp", [gap])
    tail = near_zero(ctx, power, work, "log1p")
    if two:
        tail = ctx.node("Div", [tail, ctx.scalar(math.log(2), work)])
    out = ctx.node("Add", [ctx.node("Max", [a, b]), tail])
    equal = ctx.node("Add", [a, ctx.scalar(1 if two else math.log(2), work)])
    out = ctx.node("Where", [ctx.node("Equal", [a, b]), equal, out])
    return ctx.cast(out, work, dtype)


@converter("hypot")
def hypot(ctx: Context, eqn: Eqn) -> str:
    """``sqrt(a² + b²)`` in float64 for float32 and narrower (no overflow or underflow there;
    rounded through float32 as eagerly); float64 as ``m·sqrt(1 + (n/m)²)`` (``m``, ``n`` the
    larger and smaller magnitude, 0 where ``m`` is). An infinity wins over NaN, as in C."""
    dtype = eqn.outputs[0].dtype
    a, b = (ctx.node("Abs", [ctx.cast(ctx.value(v), v.dtype, float64)]) for v in eqn.inputs)
    if dtype is float64:
        big, small = ctx.node("Max", [a, b]), ctx.node("Min", [a, b])
        ratio = ctx.node("Div", [small, big])
        root = ctx.node("Sqrt", [ctx.node("Add", [ctx.scalar(1, float64),
                                                  ctx.node("Mul", [ratio, ratio])])])
        zero = ctx.scalar(0, float64)
        out = ctx.node("Where", [ctx.node("Equal", [big, zero]), zero,
                                 ctx.node("Mul", [big, root])])
    else:
        out = ctx.node("Sqrt", [ctx.node("Add", [ctx.node("Mul", [a, a]),
                                                 ctx.node("Mul", [b, b])])])
    inf = ctx.scalar(np.inf, float64)
    infinite = ctx.node("Or", [ctx.node("Equal", [a, inf]), ctx.node("Equal", [b, inf])])
    out = ctx.node("Where", [infinite, inf, out])
    if dtype is float64:
        return out
    return ctx.cast(ctx.cast(out, float64, float32), float32, dtype)


@converter("xlogy")
def xlogy(ctx: Context, eqn: Eqn) -> str:
    """``x·log(y)``, 0 where ``x == 0``, NaN where ``y`` is (the product stays in Where's
    second branch: onnxruntime's first turns -0 into +0)."""
    dtype = eqn.outputs[0].dtype
    work = computed_in(dtype)
    x, y = (ctx.cast(ctx.value(v), v.dtype, work) for v in eqn.inputs)
    zero = ctx.scalar(0, work)
    out = ctx.node("Where", [ctx.node("Equal", [x, zero]), zero,
                             ctx.node("Mul", [x, ctx.node("Log", [y])])])
    out = ctx.node("Where", [ctx.node("IsNaN", [y]), y, out])
    return ctx.cast(out, work, dtype)


@converter("logit")
def logit(ctx: Context, eqn: Eqn) -> str:
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` first when ``eps`` is given
    (by comparisons, so NaN stays NaN, and with the bounds in the dtype, as eagerly: float16's
    ``1 - 1e-6`` is 1)."""
    dtype = eqn.outputs[0].dtype
    work = computed_in(dtype)
    p = ctx.cast(ctx.value(eqn.inputs[0]), eqn.inputs[0].dtype, work)
    eps = eqn.params["eps"]
    if eps is not None:
        lo = dtype.np.type(eps)
        lo, hi = ctx.scalar(float(lo), work), ctx.scalar(float(dtype.np.type(1) - lo), work)
        p = ctx.node("Where", [ctx.node("Less", [p, lo]), lo,
                               ctx.node("Where", [ctx.node("Greater", [p, hi]), hi, p])])
    out = ctx.node("Log", [ctx.node("Div", [p, ctx.node("Sub", [ctx.scalar(1, work), p])])])
    return ctx.cast(out, work, dtype)


@converter("sinc")
def sinc(ctx: Context, eqn: Eqn) -> str:
    """``sin(pi x) / (pi x)``, 1 at 0, as eager: ``pi x`` rounded to the input's dtype
    (float16 and bfloat16 computed in float32)."""
    src = eqn.inputs[0]
    work = computed_in(src.dtype)
    a = ctx.cast(ctx.value(src), src.dtype, work)
    p = ctx.node("Mul", [a, ctx.scalar(math.pi, work)])
    ratio = ctx.node("Div", [ctx.node("Sin", [p]), p])
    out = ctx.node("Where", [ctx.node("Equal", [a, ctx.scalar(0, work)]), ctx.scalar(1, work),
                             ratio])
    return ctx.cast(out, work, src.dtype)


@converter("isclose")
def isclose(ctx: Context, eqn: Eqn) -> str | None:
    """``a == b``, or a finite ``|a - b| <= atol + |b * rtol|``, NaNs close to each other with
    ``equal_nan``; each step rounded to the dtype (float16 and bfloat16 computed in float32),
    integers and bools in the traced default dtype, as eager."""
    a, b = eqn.inputs
    if a.dtype.is_complex:
        return ctx.refuse(f"isclose of {a.dtype}: ONNX has no complex numbers")
    p = eqn.params
    exact = float64 if a.dtype.is_floating_point else bool_ if a.dtype is bool_ else int64
    x, y = (ctx.cast(ctx.value(v), v.dtype, exact) for v in (a, b))
    close = ctx.node("Equal", [x, y])
    if p["equal_nan"] and a.dtype.is_floating_point:
        close = ctx.node("Or", [close, ctx.node("And", [ctx.node("IsNaN", [x]),
                                                        ctx.node("IsNaN", [y])])])
    if p["rtol"] == p["atol"] == 0:
        return close
    dtype = a.dtype if a.dtype.is_floating_point else getattr(dtypes, p["whole_in"])
    wide = computed_in(dtype)

    def rounded(v: str) -> str:  # (to the dtype and back)
        return ctx.cast(ctx.cast(v, wide, dtype), dtype, wide)

    x, y = (ctx.cast(ctx.value(v), v.dtype, wide) for v in (a, b))
    scaled = rounded(ctx.node("Mul", [y, ctx.scalar(p["rtol"], wide)]))
    atol = np.asarray(p["atol"], dtype=dtype.np).astype(wide.np)  # (rounded to the dtype)
    bound = rounded(ctx.node("Add", [ctx.node("Abs", [scaled]), ctx.scalar(atol, wide)]))
    error = rounded(ctx.node("Abs", [ctx.node("Sub", [x, y])]))
    # (LessOrEqual is false at a NaN error; an infinite one passes only an infinite bound)
    within = ctx.node("And", [ctx.node("LessOrEqual", [error, bound]),
                              ctx.node("Not", [ctx.node("IsInf", [error])])])
    return ctx.node("Or", [close, within])


def _euclid_steps(dtype: DType) -> int:
    """The most steps Euclid's algorithm takes on ``dtype``'s values: consecutive Fibonacci
    numbers are its worst case."""
    largest, a, b, steps = np.iinfo(dtype.np).max, 1, 2, 1
    while b <= largest:
        a, b, steps = b, a + b, steps + 1
    return steps


@converter("gcd", "lcm")
def gcd(ctx: Context, eqn: Eqn) -> str:
    """``gcd(|a|, |b|)`` by Euclid's steps unrolled (as many as the dtype's worst case), on
    int64; ``lcm`` is ``|a / gcd · b|`` (0 where gcd is). Wrapping as eager's: the result is
    cast back to the dtype, and a gcd of INT64_MIN (2**63) is INT64_MIN."""
    dtype = eqn.outputs[0].dtype
    a, b = (ctx.node("Abs", [ctx.cast(ctx.value(v), v.dtype, int64)]) for v in eqn.inputs)
    zero, one = ctx.scalar(0, int64), ctx.scalar(1, int64)
    swap = ctx.node("Less", [b, zero])  # (|INT64_MIN| wraps: never the divisor, whose sign
    x, y = ctx.node("Where", [swap, b, a]), ctx.node("Where", [swap, a, b])  # Mod's takes)
    for _ in range(_euclid_steps(dtype) + 1):  # (+1: |min| is one past max)
        more = ctx.node("Not", [ctx.node("Equal", [y, zero])])
        rest = ctx.node("Mod", [x, ctx.node("Where", [more, y, one])])
        x, y = ctx.node("Where", [more, y, x]), ctx.node("Where", [more, rest, zero])
    if eqn.prim.name == "lcm":
        safe = ctx.node("Where", [ctx.node("Equal", [x, zero]), one, x])
        x = ctx.node("Abs", [ctx.node("Mul", [ctx.node("Div", [a, safe]), b])])
    return ctx.cast(x, int64, dtype)
