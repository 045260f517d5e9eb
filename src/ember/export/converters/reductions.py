"""Reductions over dimensions, arg-reductions and cumulative sums."""

from __future__ import annotations

import numpy as np

from ember.dtypes import int32
from ember.export.context import Context
from ember.export.registry import converter
from ember.jit.ir import Eqn

_REDUCE = {"sum": "ReduceSum", "prod": "ReduceProd", "amax": "ReduceMax", "amin": "ReduceMin",
           "all": "ReduceMin", "any": "ReduceMax"}


@converter(*_REDUCE)
def reduce(ctx: Context, eqn: Eqn) -> str:
    src, out = eqn.inputs[0], eqn.outputs[0]
    x, dims = ctx.value(src), tuple(eqn.params["dims"])
    if not dims:  # (a reduction over no dimension is a copy; ONNX would reduce them all)
        return ctx.cast(ctx.node("Identity", [x]), src.dtype, out.dtype)
    boolean = eqn.prim.name in ("all", "any")
    if boolean:  # (ReduceMin/Max take bool from opset 20 only)
        x = ctx.cast(x, src.dtype, int32)
    else:  # (a sum of bools or small integers is int64)
        x = ctx.cast(x, src.dtype, out.dtype)
    y = ctx.node(_REDUCE[eqn.prim.name], [x, ctx.ints(dims)], keepdims=int(eqn.params["keepdim"]))
    return ctx.cast(y, int32, out.dtype) if boolean else y


def _arg(ctx: Context, eqn: Eqn, op: str, x: str) -> str:
    dim, keep = eqn.params["dim"], int(eqn.params["keepdim"])
    if dim is None:  # (over the flattened tensor)
        x = ctx.node("Reshape", [x, ctx.ints([-1])])
        dim = 0
    return ctx.node(op, [x], axis=dim, keepdims=keep)


@converter("argmax", "argmin")
def arg_reduce(ctx: Context, eqn: Eqn) -> str:
    op = "ArgMax" if eqn.prim.name == "argmax" else "ArgMin"
    return _arg(ctx, eqn, op, ctx.value(eqn.inputs[0]))


@converter("max_dim", "min_dim")
def extreme_along(ctx: Context, eqn: Eqn) -> list[str]:
    """Values and (first) indices of the extremes along ``dim``."""
    x, big = ctx.value(eqn.inputs[0]), eqn.prim.name == "max_dim"
    dim, keep = eqn.params["dim"], int(eqn.params["keepdim"])
    values = ctx.node("ReduceMax" if big else "ReduceMin", [x, ctx.ints([dim])], keepdims=keep)
    return [values, _arg(ctx, eqn, "ArgMax" if big else "ArgMin", x)]


@converter("cumsum")
def cumsum(ctx: Context, eqn: Eqn) -> str:
    axis = ctx.constant(np.asarray(eqn.params["dim"], dtype=np.int64), "axis")
    return ctx.node("CumSum", [ctx.value(eqn.inputs[0]), axis],
                    reverse=int(eqn.params["reverse"]))
