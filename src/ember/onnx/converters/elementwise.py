"""Elementwise primitives: arithmetic (``lerp`` too), comparisons, logic, unary math, casts,
``where``."""

from __future__ import annotations

import math

import numpy as np

from ember.dtypes import DType, bool_, float64, int32, int64
from ember.dtypes import float32 as _FLOAT32
from ember.jit.ir import Eqn, Var
from ember.onnx.context import Context, onnx_type
from ember.onnx.registry import converter

_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min", "fmod": "Mod"}
_COMPARE = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
            "ge": "GreaterOrEqual"}
_UNARY = {"abs": "Abs", "acos": "Acos", "acosh": "Acosh", "asin": "Asin", "asinh": "Asinh",
          "atan": "Atan", "atanh": "Atanh", "cos": "Cos", "cosh": "Cosh", "sin": "Sin",
          "sinh": "Sinh", "tan": "Tan", "tanh": "Tanh", "exp": "Exp", "log": "Log",
          "sqrt": "Sqrt", "reciprocal": "Reciprocal", "sigmoid": "Sigmoid", "erf": "Erf",
          "neg": "Neg", "floor": "Floor", "ceil": "Ceil", "relu": "Relu",
          "isnan": "IsNaN", "copy": "Identity", "no_grad_from": "Identity"}
_ON_BOOLS = {"add": "Or", "mul": "And", "maximum": "Or", "minimum": "And"}
_NARROW = ("bool", "int8", "uint8", "int16")  # (MatMul and Pow take none of them)
_NO_MAX = {"int16": int32, "bfloat16": _FLOAT32}  # (onnxruntime has no Max/Min of these)
_LOGIC = {"bitwise_and": ("And", "BitwiseAnd"), "bitwise_or": ("Or", "BitwiseOr"),
          "bitwise_xor": ("Xor", "BitwiseXor")}


def operands(ctx: Context, eqn: Eqn, dtype: DType | None = None) -> list[str]:
    """The equation's inputs, cast to ``dtype`` (default: the first output's dtype) where
    Ember's type promotion made them differ."""
    to = eqn.outputs[0].dtype if dtype is None else dtype
    return [ctx.cast(ctx.value(v), v.dtype, to) for v in eqn.inputs]


def widened(ctx: Context, op: str, inputs: list[str], dtype: DType) -> str:
    """``op`` on ``inputs`` of ``dtype``, computed on int32 and cast back for the narrow
    integers and bools that MatMul and Pow do not take (the cast back wraps, as Ember)."""
    if dtype.name not in _NARROW:
        return ctx.node(op, inputs)
    wide = ctx.node(op, [ctx.cast(x, dtype, int32) for x in inputs])
    return ctx.cast(wide, int32, dtype)


@converter(*_BINARY)
def binary(ctx: Context, eqn: Eqn) -> str:
    name, dtype = eqn.prim.name, eqn.outputs[0].dtype
    if dtype is bool_ and name in _ON_BOOLS:  # (arithmetic on bools is logic)
        return ctx.node(_ON_BOOLS[name], operands(ctx, eqn))
    if name == "pow":
        if dtype.is_floating_point or dtype is bool_:
            return widened(ctx, "Pow", operands(ctx, eqn), dtype)
        return integer_power(ctx, *operands(ctx, eqn), dtype)
    if name in ("maximum", "minimum") and dtype.name in _NO_MAX:  # (exact there)
        wide = [ctx.cast(x, dtype, _NO_MAX[dtype.name]) for x in operands(ctx, eqn)]
        return ctx.cast(ctx.node(_BINARY[name], wide), _NO_MAX[dtype.name], dtype)
    if name == "div" and ctx.changes(eqn.inputs[1]):
        count = _counted(ctx, eqn)
        if count is not None:
            return ctx.node("Div", [ctx.cast(ctx.value(eqn.inputs[0]), eqn.inputs[0].dtype,
                                             dtype), count])
    # (torch.fmod keeps the dividend's sign: C's fmod, for integers too)
    return ctx.node(_BINARY[name], operands(ctx, eqn), fmod=1 if name == "fmod" else None)


def _counted(ctx: Context, eqn: Eqn) -> str | None:
    """For ``sum(x, dims) / n`` where ``n`` counts the entries summed (less a fixed
    correction): a mean or variance over a dynamic axis. ``n`` read from ``x``'s shape at run
    time (None for any other divisor that changes with a dynamic axis)."""
    total, n = eqn.inputs
    made = ctx.producers.get(total)
    if made is None or made.prim.name != "sum" or not made.params["dims"]:
        return None
    x, dims = made.inputs[0], tuple(made.params["dims"])
    first, second = (np.asarray(c) for c in (ctx.graph.consts[n], ctx.twin_consts[ctx.twin_of(n)]))
    if first.size != 1 or second.size != 1:
        return None
    counts = [math.prod(shape[d] for d in dims) for shape in (x.shape, ctx.twin_shape(x))]
    offset = counts[0] - first.item()
    if counts[0] == counts[1] or counts[1] - second.item() != offset:
        return None
    sizes = ctx.node("Gather", [ctx.node("Shape", [ctx.value(x)]), ctx.ints(dims)], axis=0)
    count = ctx.cast(ctx.reduce("ReduceProd", sizes, [0], 0), int64, n.dtype)
    if offset:
        count = ctx.node("Sub", [count, ctx.scalar(offset, n.dtype)])
    return ctx.node("Reshape", [count, ctx.ints(first.shape)]) if first.ndim else count


@converter("remainder")
def remainder(ctx: Context, eqn: Eqn) -> str:
    """Python's ``%`` (the divisor's sign). Floats as NumPy computes it: the exact ``fmod``,
    plus the divisor where the two signs differ (``a - floor(a / b) * b`` rounds the
    quotient: ``1 % 0.1`` would be 0.1 too small)."""
    (a, b), dtype = operands(ctx, eqn), eqn.outputs[0].dtype
    if not dtype.is_floating_point:
        return ctx.node("Mod", [a, b], fmod=0)
    r = ctx.node("Mod", [a, b], fmod=1)
    zero = ctx.scalar(0, dtype)
    signs = ctx.node("Xor", [ctx.node("Less", [r, zero]), ctx.node("Less", [b, zero])])
    off = ctx.node("And", [ctx.node("Not", [ctx.node("Equal", [r, zero])]), signs])
    return ctx.node("Where", [off, ctx.node("Add", [r, b]), r])


@converter("floor_divide", "div_trunc")
def rounded_divide(ctx: Context, eqn: Eqn) -> str:
    """Division rounded down (``//``) or toward zero (``rounding_mode="trunc"``). ``//`` is
    NumPy's (and PyTorch's): the truncated quotient (ONNX's Div of integers; for floats
    ``(a - fmod(a, b)) / b``, rounded, which is exact where ``floor(a / b)`` rounds up, and
    NaN for an infinite dividend), one less where the remainder's sign differs from the
    divisor's; a float divided by zero is ``a / b``."""
    (a, b), dtype = operands(ctx, eqn), eqn.outputs[0].dtype
    q = ctx.node("Div", [a, b])
    if eqn.prim.name == "div_trunc":
        return _trunc(ctx, q) if dtype.is_floating_point else q
    if dtype.name == "uint8":
        return q
    zero = ctx.scalar(0, dtype)
    if dtype.is_floating_point:
        r = ctx.node("Mod", [a, b], fmod=1)
        whole = ctx.node("Round", [ctx.node("Div", [ctx.node("Sub", [a, r]), b])])
    else:
        whole = q
        r = ctx.node("Sub", [a, ctx.node("Mul", [q, b])])
    inexact = ctx.node("Not", [ctx.node("Equal", [r, zero])])
    signs = ctx.node("Xor", [ctx.node("Less", [r, zero]), ctx.node("Less", [b, zero])])
    below = ctx.cast(ctx.node("And", [inexact, signs]), bool_, dtype)
    floor = ctx.node("Sub", [whole, below])
    if not dtype.is_floating_point:
        return floor
    return ctx.node("Where", [ctx.node("Equal", [b, zero]), q, floor])


def _trunc(ctx: Context, x: str) -> str:
    """``sign(x + 1/x)·floor(|x|)``: ``x + 1/x`` has ``x``'s sign at ``±0`` and ``±inf`` too,
    so ``trunc(-0.0)`` is -0.0 (``sign(x)`` is 0 there; onnxruntime's Where drops a selected
    -0.0, so no ``Where(x < 0, ceil, floor)``)."""
    side = ctx.node("Sign", [ctx.node("Add", [x, ctx.node("Reciprocal", [x])])])
    return ctx.node("Mul", [side, ctx.node("Floor", [ctx.node("Abs", [x])])])


def integer_power(ctx: Context, base: str, exponent: str | int, dtype: DType) -> str:
    """``base ** exponent`` of integers as eager: by squaring, each product wrapping
    (onnxruntime's Pow of integers goes through double: 3**39 came out 11 off, an overflow
    saturated), on int32 for the narrow ones. A tensor exponent takes one step per bit of
    its dtype; where it is negative the result is 1 for 1, ±1 for -1, else 0."""
    on = int32 if dtype.name in _NARROW else dtype
    b = ctx.cast(base, dtype, on)
    if isinstance(exponent, int):  # (a number: its bits, unrolled; a 1 made for x**0 only)
        result = None
        while exponent:
            if exponent & 1:
                result = b if result is None else ctx.node("Mul", [result, b])
            exponent >>= 1
            if exponent:
                b = ctx.node("Mul", [b, b])
        if result is None:
            result = ctx.node("Expand", [ctx.scalar(1, on), ctx.node("Shape", [base])])
        return ctx.cast(result, on, dtype)
    one = ctx.scalar(1, on)
    given = ctx.cast(exponent, dtype, on)
    zero, two = ctx.scalar(0, on), ctx.scalar(2, on)
    negative = ctx.node("Less", [given, zero])
    e, result = ctx.node("Where", [negative, zero, given]), one
    for _ in range(8 * dtype.itemsize - (dtype.name != "uint8")):  # (the exponent's bits)
        odd = ctx.node("Equal", [ctx.node("Mod", [e, two]), one])
        result = ctx.node("Where", [odd, ctx.node("Mul", [result, b]), result])
        b, e = ctx.node("Mul", [b, b]), ctx.node("Div", [e, two])
    if dtype.name == "uint8":
        return ctx.cast(result, on, dtype)
    base = ctx.cast(base, dtype, on)
    minus_one = ctx.scalar(-1, on)
    odd = ctx.node("Not", [ctx.node("Equal", [ctx.node("Mod", [given, two], fmod=1), zero])])
    unit = ctx.node("Where", [ctx.node("Equal", [base, minus_one]),
                              ctx.node("Where", [odd, minus_one, one]), zero])
    unit = ctx.node("Where", [ctx.node("Equal", [base, one]), one, unit])
    return ctx.cast(ctx.node("Where", [negative, unit, result]), on, dtype)


@converter("pow_scalar")
def pow_scalar(ctx: Context, eqn: Eqn) -> str:
    (x,), out = operands(ctx, eqn), eqn.outputs[0]
    exponent = eqn.params["exponent"]
    if not out.dtype.is_floating_point and out.dtype is not bool_ and \
            isinstance(exponent, int) and exponent >= 0:
        return integer_power(ctx, x, exponent, out.dtype)
    return widened(ctx, "Pow", [x, ctx.scalar(exponent, out.dtype)], out.dtype)


@converter(*_COMPARE, "ne")
def compare(ctx: Context, eqn: Eqn) -> str:
    """Comparisons on the operands' common dtype; orderings of bools on int32 (ONNX's Less
    and kin take no bool), bfloat16 on float32 (onnxruntime has no bfloat16 Equal)."""
    a, b = eqn.inputs
    common = a.dtype if np.promote_types(a.dtype.np, b.dtype.np) == a.dtype.np else b.dtype
    name = eqn.prim.name
    if common is bool_ and name not in ("eq", "ne"):
        common = int32
    if common.name == "bfloat16":
        common = _FLOAT32
    args = operands(ctx, eqn, common)
    if name == "ne":
        return ctx.node("Not", [ctx.node("Equal", args)])
    return ctx.node(_COMPARE[name], args)


@converter(*_LOGIC, "bitwise_not")
def logic(ctx: Context, eqn: Eqn) -> str | None:
    boolean = eqn.outputs[0].dtype.name == "bool"
    if not boolean and ctx.opset < 18:
        return ctx.refuse(f"bitwise ops on integers need opset 18 (ONNX's BitwiseAnd and "
                          f"kin); this export asked for opset {ctx.opset}")
    if eqn.prim.name == "bitwise_not":
        return ctx.node("Not" if boolean else "BitwiseNot", operands(ctx, eqn))
    return ctx.node(_LOGIC[eqn.prim.name][0 if boolean else 1], operands(ctx, eqn))


@converter(*_UNARY)
def unary(ctx: Context, eqn: Eqn) -> str:
    src, name = eqn.inputs[0], eqn.prim.name
    x = ctx.value(src)
    if src.dtype.name == "uint8" and name in ("neg", "relu"):  # (neither takes uint8)
        return ctx.node("Sub", [ctx.scalar(0, src.dtype), x]) if name == "neg" else \
            ctx.node("Identity", [x])
    if name == "relu" and not src.dtype.is_floating_point:  # (onnxruntime's integer Relu
        on = _NO_MAX.get(src.dtype.name, src.dtype)  # runs at opset 18 only: as Max)
        y = ctx.node("Max", [ctx.cast(x, src.dtype, on), ctx.scalar(0, on)])
        return ctx.cast(y, on, src.dtype)
    if name == "isnan":  # (onnxruntime has no bfloat16 IsNaN)
        x = ctx.cast(x, src.dtype, _FLOAT32 if src.dtype.name == "bfloat16" else src.dtype)
    if name == "sigmoid":
        return sigmoid(ctx, x, src.dtype)
    return ctx.node(_UNARY[name], [x])


def sigmoid(ctx: Context, x: str, dtype: DType) -> str:
    """Sigmoid; float64 as eager's ``1 / (1 + exp(-x))`` (onnxruntime's float64 Sigmoid is
    0 below x = -37, 5.5e-26 at -58, and 1e-8 relative off elsewhere)."""
    if dtype is not float64:
        return ctx.node("Sigmoid", [x])
    return ctx.node("Reciprocal", [ctx.node("Add", [ctx.node("Exp", [ctx.node("Neg", [x])]),
                                                    ctx.scalar(1, dtype)])])


@converter("log2", "log10", "log1p", "expm1", "exp2", "rsqrt", "trunc", "frac", "round")
def composite_unary(ctx: Context, eqn: Eqn) -> str | None:
    x, dtype, name = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype, eqn.prim.name
    if name in ("log2", "log10"):
        base = ctx.scalar(math.log(2.0 if name == "log2" else 10.0), dtype)
        return ctx.node("Div", [ctx.node("Log", [x]), base])
    if name in ("log1p", "expm1"):
        return near_zero(ctx, x, dtype, name)
    if name == "exp2":
        return ctx.node("Pow", [ctx.scalar(2, dtype), x])
    if name == "rsqrt":
        return ctx.node("Reciprocal", [ctx.node("Sqrt", [x])])
    if name == "trunc":
        return _trunc(ctx, x)
    if name == "frac":
        return ctx.node("Sub", [x, _trunc(ctx, x)])
    decimals = eqn.params.get("decimals", 0)
    if not decimals:
        return ctx.node("Round", [x])  # (half to even, as Ember and PyTorch)
    scale = ctx.scalar(10.0 ** abs(decimals), dtype)  # (x scaled, rounded, scaled back)
    up, down = ("Mul", "Div") if decimals > 0 else ("Div", "Mul")
    return ctx.node(down, [ctx.node("Round", [ctx.node(up, [x, scale])]), scale])


def near_zero(ctx: Context, x: str, dtype: DType, name: str) -> str:
    """``log1p`` and ``expm1`` accurate near 0, where ``log(1 + x)`` and ``exp(x) - 1`` lose
    every digit (Kahan's corrections: with ``u = 1 + x``, ``log(u) * x / (u - 1)``; with
    ``u = exp(x)``, ``(u - 1) * x / log(u)``), the ends where they are 0/0 or inf/inf
    written out (``x`` itself near 0 from Where's second branch: onnxruntime makes a -0
    chosen from the first +0)."""
    one = ctx.scalar(1, dtype)
    u = ctx.node("Add" if name == "log1p" else "Exp", [x, one] if name == "log1p" else [x])
    d = ctx.node("Sub", [u, one])
    true = ctx.scalar(True, bool_)
    if name == "log1p":
        y = ctx.node("Mul", [ctx.node("Log", [u]), ctx.node("Div", [x, d])])
        apart = ctx.node("Xor", [ctx.node("Equal", [d, ctx.scalar(0, dtype)]), true])
        y = ctx.node("Where", [apart, y, x])
        return ctx.node("Where", [ctx.node("Equal", [x, ctx.scalar(np.inf, dtype)]), x, y])
    y = ctx.node("Mul", [d, ctx.node("Div", [x, ctx.node("Log", [u])])])
    y = ctx.node("Where", [ctx.node("Xor", [ctx.node("Equal", [u, one]), true]), y, x])
    y = ctx.node("Where", [ctx.node("Equal", [d, ctx.scalar(-1, dtype)]), d, y])
    return ctx.node("Where", [ctx.node("Equal", [u, ctx.scalar(np.inf, dtype)]), u, y])


@converter("sign")
def sign(ctx: Context, eqn: Eqn) -> str:
    """Sign, 0 at NaN as in PyTorch (ONNX's Sign keeps NaN)."""
    src = eqn.inputs[0]
    x = ctx.value(src)
    if src.dtype is bool_:
        return ctx.node("Identity", [x])
    if not src.dtype.is_floating_point:
        return ctx.node("Sign", [x])
    return ctx.node("Where", [ctx.node("IsNaN", [x]), ctx.scalar(0, src.dtype),
                              ctx.node("Sign", [x])])


def is_inf(ctx: Context, x: str, dtype: DType) -> str:
    """IsInf, which takes float16 and bfloat16 from opset 20 only: ``|x| == inf`` before."""
    if ctx.opset >= 20 or dtype.name in ("float32", "float64"):
        return ctx.node("IsInf", [x])
    return ctx.node("Equal", [ctx.node("Abs", [x]), ctx.scalar(np.inf, dtype)])


@converter("isinf")
def isinf(ctx: Context, eqn: Eqn) -> str:
    return is_inf(ctx, ctx.value(eqn.inputs[0]), eqn.inputs[0].dtype)


@converter("isfinite")
def isfinite(ctx: Context, eqn: Eqn) -> str:
    x, dtype = ctx.value(eqn.inputs[0]), eqn.inputs[0].dtype
    if dtype.name == "bfloat16":  # (onnxruntime has no bfloat16 IsNaN)
        x, dtype = ctx.cast(x, dtype, _FLOAT32), _FLOAT32
    return ctx.node("Not", [ctx.node("Or", [ctx.node("IsNaN", [x]), is_inf(ctx, x, dtype)])])


@converter("cast")
def cast(ctx: Context, eqn: Eqn) -> str:
    return ctx.node("Cast", [ctx.value(eqn.inputs[0])], to=onnx_type(eqn.outputs[0].dtype))


@converter("where")
def where(ctx: Context, eqn: Eqn) -> str:
    """Where, choosing bools and int16 as int32, bfloat16 as float32 (onnxruntime's Where
    takes none of them).

    Floats work around two onnxruntime faults: a -0 chosen from Where's first branch comes
    out +0, and ``Where(Not(c), a, b)`` is rewritten as ``Where(c, b, a)``. A Not on the
    condition is undone here (branches swapped), and where the first branch may hold -0
    (anything but a constant without one, a cast of a non-float, or the result of abs, exp,
    sigmoid or softmax) the result is ``Where(c', 1, a) * Where(c, 1, b)``
    (``c'``: Xor(c, True), which nothing rewrites): each value reaches the product through a
    second branch, times an exact 1."""
    cond, *values = eqn.inputs
    out = eqn.outputs[0].dtype
    on = {"bool": int32, "int16": int32, "bfloat16": _FLOAT32}.get(out.name, out)
    c = ctx.cast(ctx.value(cond), cond.dtype, bool_)
    a, b = (ctx.cast(ctx.value(v), v.dtype, on) for v in values)
    if not out.is_floating_point:
        return ctx.cast(ctx.node("Where", [c, a, b]), on, out)
    first = values[0]
    while (negated := _producer(ctx, c, "Not")) is not None:
        c, a, b = negated.input[0], b, a
        first = values[1] if first is values[0] else values[0]
    if not _may_be_minus_zero(ctx, first):
        return ctx.cast(ctx.node("Where", [c, a, b]), on, out)
    return ctx.cast(_chosen(ctx, c, a, b, on), on, out)


@converter("addc_half")
def addc_half(ctx: Context, eqn: Eqn) -> str:
    """float16/bfloat16 addcmul/addcdiv as eager computes them: ``(value·t1) op t2`` in
    float32, addcmul's multiply-add in float64 (the float32 product exact: one rounding, as
    PyTorch's fused one), rounded back through float32."""
    out, value = eqn.outputs[0].dtype, eqn.params["value"]
    a, b, c = (ctx.cast(ctx.cast(ctx.value(v), v.dtype, out), out, _FLOAT32)  # (as given: to
               for v in eqn.inputs)  # the half dtype first)
    if value != 1:
        b = ctx.node("Mul", [b, ctx.scalar(float(np.float32(value)), _FLOAT32)])
    if eqn.params["divide"]:
        return ctx.cast(ctx.node("Add", [a, ctx.node("Div", [b, c])]), _FLOAT32, out)
    a, b, c = (ctx.cast(x, _FLOAT32, float64) for x in (a, b, c))
    total = ctx.node("Add", [a, ctx.node("Mul", [b, c])])
    return ctx.cast(ctx.cast(total, float64, _FLOAT32), _FLOAT32, out)


@converter("add_scaled_half", "sub_scaled_half")
def scaled_half(ctx: Context, eqn: Eqn) -> str:
    """float16/bfloat16 ``a + factor·b`` (add/sub with ``alpha``) as eager computes it:
    ``factor`` rounded to the half dtype, the product exact in float64 and the sum rounded
    back through float32 (one rounding, as PyTorch's fused multiply-add in its vector steps;
    the tails and strided runs eager rounds ``factor·b`` first in are not told apart)."""
    out = eqn.outputs[0].dtype
    factor = float(np.asarray(float(eqn.params["factor"]), dtype=out.np))
    a, b = (ctx.cast(ctx.cast(ctx.value(v), v.dtype, _FLOAT32), _FLOAT32, float64)
            for v in eqn.inputs)
    total = ctx.node("Add", [a, ctx.node("Mul", [b, ctx.scalar(factor, float64)])])
    return ctx.cast(ctx.cast(total, float64, _FLOAT32), _FLOAT32, out)


def _chosen(ctx: Context, c: str, a: str, b: str, on: DType) -> str:
    """``Where(c, a, b)`` of floats of type ``on`` that keeps a -0 of ``a``:
    ``Where(c', 1, a) * Where(c, 1, b)`` (see :func:`where`)."""
    one = ctx.scalar(1, on)
    flipped = ctx.node("Xor", [c, ctx.scalar(True, bool_)])
    return ctx.node("Mul", [ctx.node("Where", [flipped, one, a]), ctx.node("Where", [c, one, b])])


@converter("lerp")
def lerp(ctx: Context, eqn: Eqn) -> str:
    """lerp (float32, float16 or bfloat16: computed in float32, as PyTorch's; float64 in
    float64, a number weight as given): ``input + w·diff`` where ``|w| < 0.5``, else ``end +
    (w - 1)·diff``, ``diff = end - input``; each step rounded (Ember's eager lerp rounds the
    sum once: an ulp apart at times)."""
    out = eqn.outputs[0].dtype
    work = float64 if out is float64 else _FLOAT32
    a, b, *w = (ctx.cast(ctx.value(v), v.dtype, work) for v in eqn.inputs)
    diff = ctx.node("Sub", [b, a])
    if not w:
        weight = work.np.type(eqn.params["weight"])
        small = bool(abs(weight) < 0.5)
        coeff = ctx.scalar(float(weight if small else weight - work.np.type(1)), work)
        return ctx.cast(ctx.node("Add", [a if small else b, ctx.node("Mul", [coeff, diff])]),
                        work, out)
    small = ctx.node("Less", [ctx.node("Abs", [w[0]]), ctx.scalar(0.5, work)])
    low = ctx.node("Add", [a, ctx.node("Mul", [w[0], diff])])
    coeff = ctx.node("Sub", [w[0], ctx.scalar(1, work)])
    high = ctx.node("Add", [b, ctx.node("Mul", [coeff, diff])])
    return ctx.cast(_chosen(ctx, small, low, high, work), work, out)


def _producer(ctx: Context, name: str, op: str) -> object | None:
    """The node of type ``op`` written so far whose output is ``name``, if any."""
    node = ctx.made.get(name)
    return node if node is not None and node.op_type == op else None


# (primitives whose float results are never -0 eagerly: |x|, e^x, 1 / (1 + e^-x); not relu,
# which keeps -0 in float16)
_NO_MINUS_ZERO = frozenset({"abs", "exp", "sigmoid", "softmax"})


def _may_be_minus_zero(ctx: Context, var: Var) -> bool:
    """Whether ``var`` may hold -0: a float that is neither a constant (of every trace) free
    of it nor made by a primitive that never gives one (or a cast of a non-float or of
    such a result)."""
    if not var.dtype.is_floating_point:
        return False
    made = ctx.producers.get(var)
    if made is not None:
        if made.prim.name == "cast":
            return _may_be_minus_zero(ctx, made.inputs[0])
        return made.prim.name not in _NO_MINUS_ZERO
    if var not in ctx.graph.consts or ctx.changes(var):
        return True
    array = np.asarray(ctx.graph.consts[var])
    return bool(np.any((array == 0) & np.signbit(array)))


@converter("clamp")
def clamp(ctx: Context, eqn: Eqn) -> str:
    """Clip; a float's missing bound is infinite (Clip's default, the largest finite float,
    would turn infinities finite), an integer's is Clip's default, the dtype's extreme."""
    x, out = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype
    dtype = int32 if out.name == "int16" else out  # (onnxruntime has no int16 Clip)
    x = ctx.cast(x, out, dtype)

    def bound(value: float | None, default: float) -> str:
        if value is None and not dtype.is_floating_point:
            return ""
        return ctx.scalar(default if value is None else value, dtype)

    return ctx.cast(ctx.node("Clip", [x, bound(eqn.params["min"], -np.inf),
                                      bound(eqn.params["max"], np.inf)]), dtype, out)


@converter("clamp_tensor")
def clamp_tensor(ctx: Context, eqn: Eqn) -> str:
    """Max with ``min``, then Min with ``max`` (broadcasting; NaN propagates; int16 and
    bfloat16 on a wider dtype, exact)."""
    out = eqn.outputs[0].dtype
    on = _NO_MAX.get(out.name, out)
    x, *bounds = (ctx.cast(v, out, on) for v in operands(ctx, eqn))
    given = eqn.params["bounds_given"]
    ops = {"both": ("Max", "Min"), "min": ("Max",), "max": ("Min",)}[given]
    for op, bound in zip(ops, bounds):
        x = ctx.node(op, [x, bound])
    return ctx.cast(x, on, out)


@converter("nan_to_num")
def nan_to_num(ctx: Context, eqn: Eqn) -> str:
    """Where IsNaN, then where ``x == ±inf``, the replacement (a scalar of the dtype, so a
    posinf beyond its range rounds as Ember's assignment does)."""
    x, dtype, p = ctx.value(eqn.inputs[0]), eqn.inputs[0].dtype, eqn.params
    out = ctx.node("Where", [ctx.node("IsNaN", [x]), ctx.scalar(p["nan"], dtype), x])
    for inf, key in ((np.inf, "posinf"), (-np.inf, "neginf")):
        hit = ctx.node("Equal", [x, ctx.scalar(inf, dtype)])
        out = ctx.node("Where", [hit, ctx.scalar(p[key], dtype), out])
    return out


@converter("atan2")
def atan2(ctx: Context, eqn: Eqn) -> str:
    """ONNX has no atan2: ``atan(y / x)``, moved by π (-π where y's sign bit is set) where
    x's is (a sign bit read as ``v < 0 or 1 / v < 0``: -0 included); written out where
    ``y / x`` would be NaN but atan2 is not: two zeros (x made ±1) and two infinities (±π/4,
    ±3π/4). A value that may be a
    signed zero never goes through Where's first branch (onnxruntime's makes -0 +0). float16
    and bfloat16 are computed in float32, as eagerly."""
    dtype = eqn.outputs[0].dtype
    work = dtype if dtype.name in ("float32", "float64") else _FLOAT32
    y, x = (ctx.cast(ctx.value(v), v.dtype, work) for v in eqn.inputs)

    def negative(v: str) -> str:  # (the sign bit: -0 too, never NaN)
        return ctx.node("Or", [ctx.node("Less", [v, zero]), ctx.node("Less", [
            ctx.node("Div", [ctx.scalar(1, work), v]), zero])])

    def signed(v: float) -> str:  # (+v, or -v where y's sign bit is set)
        return ctx.node("Where", [y_neg, ctx.scalar(-v, work), ctx.scalar(v, work)])

    zero = ctx.scalar(0, work)
    x_neg, y_neg = negative(x), negative(y)
    both_zero = ctx.node("And", [ctx.node("Equal", [x, zero]), ctx.node("Equal", [y, zero])])
    x = ctx.node("Where", [both_zero, ctx.node("Where", [x_neg, ctx.scalar(-1, work),
                                                         ctx.scalar(1, work)]), x])
    base = ctx.node("Atan", [ctx.node("Div", [y, x])])  # (y / ±1 at two zeros: ±0)
    out = ctx.node("Where", [x_neg, ctx.node("Add", [base, signed(math.pi)]), base])
    both_inf = ctx.node("And", [is_inf(ctx, x, work), is_inf(ctx, y, work)])
    out = ctx.node("Where", [both_inf, ctx.node("Where", [x_neg, signed(3 * math.pi / 4),
                                                          signed(math.pi / 4)]), out])
    return ctx.cast(out, work, dtype)


@converter("fmax", "fmin")
def nan_ignoring(ctx: Context, eqn: Eqn) -> str:
    """``fmax``/``fmin``: a NaN loses to a number (NaN only where both are). Floats: NaN made
    -inf (+inf for fmin) on each side, Max (Min), NaN put back where both were; every operand
    in Where's second branch, which keeps -0 (onnxruntime's first makes it +0). Bools as
    Or/And; int16 and bfloat16 on int32 and float32 (exact), which Max and Min take."""
    dtype, big = eqn.outputs[0].dtype, eqn.prim.name == "fmax"
    if dtype is bool_:
        return ctx.node("Or" if big else "And", operands(ctx, eqn))
    work = _NO_MAX.get(dtype.name, dtype)
    a, b = (ctx.cast(x, dtype, work) for x in operands(ctx, eqn))
    if not dtype.is_floating_point:
        return ctx.cast(ctx.node("Max" if big else "Min", [a, b]), work, dtype)
    loser = ctx.scalar(-np.inf if big else np.inf, work)
    nans = [ctx.node("IsNaN", [v]) for v in (a, b)]
    a, b = (ctx.node("Where", [nan, loser, v]) for nan, v in zip(nans, (a, b)))
    out = ctx.node("Where", [ctx.node("And", nans), ctx.scalar(np.nan, work),
                             ctx.node("Max" if big else "Min", [a, b])])
    return ctx.cast(out, work, dtype)


@converter("heaviside")
def heaviside(ctx: Context, eqn: Eqn) -> str:
    """``values`` where ``x == 0``, else ``x > 0`` (0 at NaN); ``values`` in Where's second
    branch (its first turns -0 into +0). Narrow integers and bools on int32, float16 and
    bfloat16 on float32 (exact: it only selects)."""
    dtype = eqn.outputs[0].dtype
    work = int32 if dtype.name in _NARROW else \
        _FLOAT32 if dtype.name in ("float16", "bfloat16") else dtype
    x, values = (ctx.cast(v, dtype, work) for v in operands(ctx, eqn))
    step = ctx.cast(ctx.node("Greater", [x, ctx.scalar(0, work)]), bool_, work)
    zero = ctx.scalar(0, work)  # (no Not: onnxruntime swaps Where(Not(c), a, b)'s branches)
    nonzero = ctx.node("Or", [ctx.node("Less", [x, zero]), ctx.node("Greater", [x, zero])])
    if work.is_floating_point:
        nonzero = ctx.node("Or", [nonzero, ctx.node("IsNaN", [x])])
    return ctx.cast(ctx.node("Where", [nonzero, step, values]), work, dtype)
