"""Running scans that ONNX has no op for, as a Scan along the dimension (any length, so a
dynamic one too), one step of eager's recurrence per element: ``cummax``/``cummin``'s
indices and ``logcumsumexp`` (a running ``logaddexp`` in float64, as eagerly)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx import TensorProto, helper

from ember.dtypes import DType, float64, int32, int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context, onnx_type
from ember.onnx.converters.elementwise import near_zero
from ember.onnx.registry import converter

_NARROW = ("bool", "int8", "uint8", "int16")  # (compared as int32: Greater takes none)


def _scan(ctx: Context, x: str, types: tuple[int, int], states: list[tuple[str, int]],
          dim: int, reverse: bool, step: Callable[[list[str], str], list[str]]) -> list[str]:
    """A Scan of ``x`` along ``dim`` from ``states`` (initial value, ONNX element type);
    ``step(states, slice)`` builds (into the body) the new states and then the one scanned
    output; ``types``: the element types of ``x`` and of that output. Returns the final
    states and the scanned output."""
    names = [ctx.fresh("state") for _ in states] + [ctx.fresh("slice")]
    outer, ctx.nodes = ctx.nodes, []
    try:
        made = step(names[:-1], names[-1])
        made[-1] = ctx.node("Identity", [made[-1]])  # (a name of its own)
        body_nodes = ctx.nodes
    finally:
        ctx.nodes = outer
    kinds = [t for _, t in states]
    inputs = [helper.make_tensor_value_info(n, t, None)
              for n, t in zip(names, [*kinds, types[0]], strict=True)]
    outputs = [helper.make_tensor_value_info(n, t, None)
               for n, t in zip(made, [*kinds, types[1]], strict=True)]
    body = helper.make_graph(body_nodes, ctx.fresh("scan_body"), inputs, outputs)
    direction = [int(reverse)]
    return ctx.node("Scan", [init for init, _ in states] + [x], outputs=len(made), body=body,
                    num_scan_inputs=1, scan_input_axes=[dim], scan_output_axes=[dim],
                    scan_input_directions=direction, scan_output_directions=direction)


def _first(ctx: Context, x: str, dim: int) -> str:
    """``x``'s first slice along ``dim`` (the shape of a Scan's state)."""
    return ctx.node("Gather", [x, ctx.scalar(0, int64)], axis=dim)


def _filled(ctx: Context, like: str, value: float, dtype: DType) -> str:
    return ctx.node("ConstantOfShape", [ctx.node("Shape", [like])],
                    value=helper.make_tensor("value", onnx_type(dtype), [1],
                                             [np.asarray(value, dtype.np).item()]))


@converter("cummax", "cummin")
def cum_extremum_indices(ctx: Context, eqn: Eqn) -> str:
    """Eager's rule: the running extreme (NaN from the first NaN on) moves the index to
    every element equal to it, and to every NaN."""
    src, dim = eqn.inputs[0], eqn.params["dim"]
    dtype = int32 if src.dtype.name in _NARROW else src.dtype
    x = ctx.cast(ctx.value(src), src.dtype, dtype)
    floating = dtype.is_floating_point
    beats = "Greater" if eqn.prim.name == "cummax" else "Less"

    def step(states: list[str], a: str) -> list[str]:
        best, index, t = states
        take = ctx.node(beats, [a, best])
        if floating:
            take = ctx.node("Or", [take, ctx.node("IsNaN", [a])])
        best = ctx.node("Where", [take, a, best])
        moves = ctx.node("Equal", [a, best])
        if floating:
            moves = ctx.node("Or", [moves, ctx.node("IsNaN", [a])])
        index = ctx.node("Where", [moves, t, index])
        return [best, index, ctx.node("Add", [t, ctx.scalar(1, int64)]), index]

    first = _first(ctx, x, dim)
    states = [(first, onnx_type(dtype)), (_filled(ctx, first, 0, int64), TensorProto.INT64),
              (ctx.scalar(0, int64), TensorProto.INT64)]
    return _scan(ctx, x, (onnx_type(dtype), TensorProto.INT64), states, dim, False,
                 step)[-1]


@converter("logcumsumexp")
def logcumsumexp(ctx: Context, eqn: Eqn) -> str | None:
    """``s = max + log1p(exp(min - max))`` of the running value and each element, in float64
    (NumPy's ``logaddexp``: an infinite max is the answer); float inputs only."""
    src, p = eqn.inputs[0], eqn.params
    if not src.dtype.is_floating_point:
        return ctx.refuse(f"logcumsumexp of {src.dtype.name}: ONNX export takes real "
                          "floating inputs only")
    x = ctx.cast(ctx.value(src), src.dtype, float64)

    def step(states: list[str], a: str) -> list[str]:
        (s,) = states
        above = ctx.node("Greater", [a, s])
        top = ctx.node("Where", [above, a, s])
        low = ctx.node("Where", [above, s, a])
        tail = near_zero(ctx, ctx.node("Exp", [ctx.node("Sub", [low, top])]), float64,
                          "log1p")
        s = ctx.node("Where", [ctx.node("IsInf", [top]), top, ctx.node("Add", [top, tail])])
        return [s, s]

    start = _filled(ctx, _first(ctx, x, p["dim"]), -np.inf, float64)
    out = _scan(ctx, x, (TensorProto.DOUBLE, TensorProto.DOUBLE),
                [(start, TensorProto.DOUBLE)], p["dim"], p["reverse"], step)[-1]
    return ctx.cast(out, float64, src.dtype)
