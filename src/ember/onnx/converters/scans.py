"""Running scans that ONNX has no op for, as a Scan along the dimension (any length, so a
dynamic one too), one step of eager's recurrence per element: ``cummax``/``cummin``'s
indices and ``logcumsumexp`` (a running ``logaddexp`` in float64, as eagerly)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx import TensorProto, helper

from ember.dtypes import DType, extreme, float32, float64, int32, int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context, onnx_type
from ember.onnx.converters.elementwise import near_zero
from ember.onnx.registry import converter

_NARROW = ("bool", "int8", "uint8", "int16")  # (compared as int32: Greater takes none)


def scan(ctx: Context, x: str, types: tuple[int, int], states: list[tuple[str, int]],
          dim: int, reverse: bool, step: Callable[[list[str], str], list[str]]) -> str:
    """A Scan of ``x`` along ``dim`` from ``states`` (initial value, ONNX element type);
    ``step(states, slice)`` builds (into the body) the new states and then the one scanned
    output; ``types``: the element types of ``x`` and of that output. Returns the scanned
    output; an empty ``x`` gives zeros of its shape without a Scan (onnxruntime's Scan dies
    with SIGFPE on an empty input)."""
    names = [ctx.fresh("state") for _ in states] + [ctx.fresh("slice")]

    def body() -> str:
        made = step(names[:-1], names[-1])
        made[-1] = ctx.node("Identity", [made[-1]])  # (a name of its own)
        return made

    body_nodes, made = _captured(ctx, body)
    kinds = [t for _, t in states]
    inputs = [helper.make_tensor_value_info(n, t, None)
              for n, t in zip(names, [*kinds, types[0]], strict=True)]
    outputs = [helper.make_tensor_value_info(n, t, None)
               for n, t in zip(made, [*kinds, types[1]], strict=True)]
    graph = helper.make_graph(body_nodes, ctx.fresh("scan_body"), inputs, outputs)
    direction = [int(reverse)]
    scanned = _branch(ctx, "scan", types[1], lambda: ctx.node(
        "Scan", [init for init, _ in states] + [x], outputs=len(made), body=graph,
        num_scan_inputs=1, scan_input_axes=[dim], scan_output_axes=[dim],
        scan_input_directions=direction, scan_output_directions=direction)[-1])
    zero = helper.make_tensor("value", types[1], [1], [0])
    empty = _branch(ctx, "empty", types[1], lambda: ctx.node(
        "ConstantOfShape", [ctx.node("Shape", [x])], value=zero))
    size = ctx.node("Size", [x])
    return ctx.node("If", [ctx.node("Equal", [size, ctx.scalar(0, int64)])],
                    then_branch=empty, else_branch=scanned)


def _captured(ctx: Context, build: Callable[[], object]) -> tuple[list, object]:
    """The nodes ``build`` adds (kept out of the graph) and what it returns."""
    outer, ctx.nodes = ctx.nodes, []
    try:
        made = build()
        return ctx.nodes, made
    finally:
        ctx.nodes = outer


def _branch(ctx: Context, hint: str, kind: int, build: Callable[[], str]) -> object:
    """A subgraph of no inputs (an If's branch) whose one output ``build`` makes."""
    nodes, out = _captured(ctx, build)
    return helper.make_graph(nodes, ctx.fresh(hint), [],
                             [helper.make_tensor_value_info(out, kind, None)])


def filled(ctx: Context, x: str, dim: int, value: float, dtype: DType) -> str:
    """A Scan's state: ``value`` in the shape of ``x`` less ``dim`` (read off the shape, not
    off an element, so a length-0 scan has a state too)."""
    parts = [ctx.node("Shape", [x], end=dim)] if dim else []
    parts.append(ctx.node("Shape", [x], start=dim + 1))
    shape = parts[0] if len(parts) == 1 else ctx.node("Concat", parts, axis=0)
    return ctx.node("ConstantOfShape", [shape],
                    value=helper.make_tensor("value", onnx_type(dtype), [1],
                                             [np.asarray(value, dtype.np).item()]))


@converter("cummax", "cummin")
def cum_extremum_indices(ctx: Context, eqn: Eqn) -> str:
    """Eager's rule: the running extreme (NaN from the first NaN on) moves the index to
    every element equal to it, and to every NaN."""
    src = eqn.inputs[0]
    dim = eqn.params["dim"] % max(len(src.shape), 1)
    dtype = int32 if src.dtype.name in _NARROW else \
        float32 if src.dtype.name == "bfloat16" else src.dtype
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

    start = filled(ctx, x, dim, extreme(dtype, highest=eqn.prim.name == "cummin"), dtype)
    states = [(start, onnx_type(dtype)), (filled(ctx, x, dim, 0, int64), TensorProto.INT64),
              (ctx.scalar(0, int64), TensorProto.INT64)]
    return scan(ctx, x, (onnx_type(dtype), TensorProto.INT64), states, dim, False, step)


@converter("logcumsumexp")
def logcumsumexp(ctx: Context, eqn: Eqn) -> str | None:
    """``s = max + log1p(exp(min - max))`` of the running value and each element, in float64
    (NumPy's ``logaddexp``: an infinite max is the answer); float inputs only."""
    src, p = eqn.inputs[0], eqn.params
    if not src.dtype.is_floating_point:
        return ctx.refuse(f"logcumsumexp of {src.dtype.name}: ONNX export takes real "
                          "floating inputs only")
    x = ctx.cast(ctx.value(src), src.dtype, float64)
    dim = p["dim"] % max(len(src.shape), 1)

    def step(states: list[str], a: str) -> list[str]:
        (s,) = states
        above = ctx.node("Or", [ctx.node("Greater", [a, s]), ctx.node("IsNaN", [a])])
        top = ctx.node("Where", [above, a, s])
        low = ctx.node("Where", [above, s, a])
        tail = near_zero(ctx, ctx.node("Exp", [ctx.node("Sub", [low, top])]), float64,
                          "log1p")
        s = ctx.node("Where", [ctx.node("IsInf", [top]), top, ctx.node("Add", [top, tail])])
        return [s, s]

    start = filled(ctx, x, dim, -np.inf, float64)
    out = scan(ctx, x, (TensorProto.DOUBLE, TensorProto.DOUBLE),
                [(start, TensorProto.DOUBLE)], dim, p["reverse"], step)
    return ctx.cast(out, float64, src.dtype)
