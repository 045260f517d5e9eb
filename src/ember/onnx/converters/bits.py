"""Sign bits and bit shifts: ``signbit``, ``copysign``, ``bitwise_left_shift`` and
``bitwise_right_shift``.

A float's sign bit is read as ``x < 0 or 1 / x < 0`` (so -0 and -inf count); a NaN's sign bit
can only be read by ``BitCast`` (opset 26): below that opset every NaN reads as positive
(``signbit`` False, ``copysign(a, nan)`` ``|a|``), where eager reads the bit. ONNX's BitShift
takes unsigned integers only: signed ones are shifted as their unsigned twins (a two's
complement cast), a right shift of a negative number as ``~((~a) >> s)``; a shift by a
negative amount or by the bit width or more gives 0 (-1 for a negative number shifted right),
as eagerly.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ember.dtypes import int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context, onnx_type
from ember.onnx.converters.special import computed_in
from ember.onnx.registry import converter

_UNSIGNED = {1: TensorProto.UINT8, 2: TensorProto.UINT16, 4: TensorProto.UINT32,
             8: TensorProto.UINT64}
_SIGNED = {2: TensorProto.INT16, 4: TensorProto.INT32, 8: TensorProto.INT64}
_SIGNED_NP = {2: np.int16, 4: np.int32, 8: np.int64}
_BITCAST = 26  # (the first opset with BitCast)


@converter("signbit")
def signbit(ctx: Context, eqn: Eqn) -> str:
    src = eqn.inputs[0]
    x, dtype = ctx.value(src), src.dtype
    if not dtype.is_floating_point:  # (bool and uint8: never)
        return ctx.node("Less", [ctx.cast(x, dtype, int64), ctx.scalar(0, int64)])
    if ctx.opset >= _BITCAST:
        bits = ctx.node("BitCast", [x], to=_SIGNED[dtype.itemsize])
        return ctx.node("Less", [bits, ctx.constant(np.zeros((), _SIGNED_NP[dtype.itemsize]))])
    work = computed_in(dtype)
    v = ctx.cast(x, dtype, work)
    zero = ctx.scalar(0, work)
    inverse = ctx.node("Div", [ctx.scalar(1, work), v])
    return ctx.node("Or", [ctx.node("Less", [v, zero]), ctx.node("Less", [inverse, zero])])


@converter("copysign")
def copysign(ctx: Context, eqn: Eqn) -> str:
    """``|a|`` with ``b``'s sign bit: the bits themselves from opset 26 (NaN's too), else
    ``-|a|`` where ``b < 0 or 1 / b < 0`` (in Where's second branch, as onnxruntime's first
    turns -0 into +0)."""
    (a, b), dtype = eqn.inputs, eqn.outputs[0].dtype
    x, y = ctx.cast(ctx.value(a), a.dtype, dtype), ctx.cast(ctx.value(b), b.dtype, dtype)
    if ctx.opset >= _BITCAST:
        kind, width = _SIGNED[dtype.itemsize], _SIGNED_NP[dtype.itemsize]
        top = np.iinfo(width).min
        magnitude = ctx.node("BitwiseAnd", [ctx.node("BitCast", [x], to=kind),
                                            ctx.constant(np.asarray(~top, width))])
        sign = ctx.node("BitwiseAnd", [ctx.node("BitCast", [y], to=kind),
                                       ctx.constant(np.asarray(top, width))])
        return ctx.node("BitCast", [ctx.node("BitwiseOr", [magnitude, sign])],
                        to=onnx_type(dtype))
    work = computed_in(dtype)
    size = ctx.node("Abs", [ctx.cast(x, dtype, work)])
    y, zero = ctx.cast(y, dtype, work), ctx.scalar(0, work)
    # (no Not before the Where: onnxruntime swaps the branches of Where(Not(c), ...))
    unsigned = ctx.node("And", [ctx.node("GreaterOrEqual", [y, zero]), ctx.node(
        "GreaterOrEqual", [ctx.node("Div", [ctx.scalar(1, work), y]), zero])])
    positive = ctx.node("Or", [unsigned, ctx.node("IsNaN", [y])])
    return ctx.cast(ctx.node("Where", [positive, size, ctx.node("Neg", [size])]), work, dtype)


@converter("bitwise_left_shift", "bitwise_right_shift")
def shift(ctx: Context, eqn: Eqn) -> str:
    (a, b), dtype = eqn.inputs, eqn.outputs[0].dtype
    bits = dtype.itemsize * 8
    x, s = ctx.value(a), ctx.cast(ctx.value(b), b.dtype, int64)
    inside = ctx.node("And", [ctx.node("Greater", [s, ctx.scalar(-1, int64)]),
                              ctx.node("Less", [s, ctx.scalar(bits, int64)])])
    s = ctx.node("Where", [inside, s, ctx.scalar(0, int64)])
    left, signed = eqn.prim.name == "bitwise_left_shift", dtype.name != "uint8"
    if left or not signed:  # (in the unsigned twin, wrapping as eagerly)
        unsigned = _UNSIGNED[dtype.itemsize]
        moved = ctx.node("BitShift", [ctx.node("Cast", [x], to=unsigned),
                                      ctx.node("Cast", [s], to=unsigned)],
                         direction="LEFT" if left else "RIGHT")
        out = ctx.node("Cast", [ctx.node("Cast", [moved], to=onnx_type(dtype))],
                       to=onnx_type(int64))
        beyond = ctx.scalar(0, int64)
    else:  # (a >> s of a negative a is ~(~a >> s); in int64, exact for every width)
        wide = ctx.cast(x, dtype, int64)
        negative = ctx.node("Less", [wide, ctx.scalar(0, int64)])
        flipped = ctx.node("Where", [negative, _invert(ctx, wide), wide])
        moved = ctx.node("BitShift", [ctx.node("Cast", [flipped], to=_UNSIGNED[8]),
                                      ctx.node("Cast", [s], to=_UNSIGNED[8])], direction="RIGHT")
        moved = ctx.node("Cast", [moved], to=onnx_type(int64))
        out = ctx.node("Where", [negative, _invert(ctx, moved), moved])
        beyond = ctx.node("Where", [negative, ctx.scalar(-1, int64), ctx.scalar(0, int64)])
    return ctx.cast(ctx.node("Where", [inside, out, beyond]), int64, dtype)


def _invert(ctx: Context, x: str) -> str:
    """``~x`` of int64 as ``-1 - x`` (no overflow either way; BitwiseNot needs opset 18)."""
    return ctx.node("Sub", [ctx.scalar(-1, int64), x])
