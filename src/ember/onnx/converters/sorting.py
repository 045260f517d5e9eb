"""Sorting: ``argsort`` (which ``sort`` and ``msort`` trace into, the values gathered after
it) and ``topk``, both as ONNX's TopK, which returns equal entries in their original order
(Ember's ``stable=True``) and, in onnxruntime, orders NaN above every number as Ember does.
TopK is always sorted: ``kthvalue`` and ``median`` take the last of an unsorted ``topk``,
whose order onnxruntime does not keep; bools are ordered as int32 (TopK takes no bool).
``searchsorted`` is eager's binary search, unrolled; ``isin`` an Equal against every test
element."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from onnx import helper as onnx_helper

from ember.dtypes import bfloat16, bool_, float32, int32, int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter


def _indices(ctx: Context, eqn: Eqn, k: str, largest: bool) -> str:
    """The int64 indices of a sorted TopK along the equation's ``dim``."""
    src = eqn.inputs[0]
    x = ctx.cast(ctx.value(src), src.dtype, int32 if src.dtype is bool_ else src.dtype)
    _, indices = ctx.node("TopK", [x, k], outputs=2, axis=eqn.params["dim"],
                          largest=int(largest), sorted=1)
    return indices


@converter("argsort")
def argsort(ctx: Context, eqn: Eqn) -> str:
    """A TopK of every entry along ``dim`` (its size read at run time where it is dynamic)."""
    src, dim = eqn.inputs[0], eqn.params["dim"]
    if not src.shape:
        return ctx.constant(np.zeros((), dtype=np.int64), "argsort")
    count = ctx.dim(src, dim) if dim in ctx.dynamic_dims(src) else ctx.ints([src.shape[dim]])
    return _indices(ctx, eqn, count, eqn.params["descending"])


@converter("topk")
def topk(ctx: Context, eqn: Eqn) -> str:
    """Ember's ``topk`` primitive gives the indices; the values are gathered after it. (An
    unsorted one is exported sorted, one of the orders it may have.)"""
    p = eqn.params
    if not eqn.inputs[0].shape:  # (0-d: TopK takes none; its one index, 0)
        return ctx.constant(np.zeros(eqn.outputs[0].shape, dtype=np.int64), "topk")
    return _indices(ctx, eqn, ctx.ints([p["k"]]), p["largest"])


@converter("searchsorted")
def searchsorted(ctx: Context, eqn: Eqn) -> str | None:
    """Eager's binary search unrolled: ``n.bit_length()`` steps of Gather (GatherElements for
    rows of boundaries) and Where on the ``[start, end)`` of each value, so NaN and unsorted
    boundaries give what Ember gives. Boundaries of a dynamic length (an EmbeddingBag's
    offsets) take their length from the run-time shape and 31 steps (any length below
    2**31), reading a table padded by one entry (an empty one gives 0 as eager)."""
    seq, vals, *sorter = eqn.inputs
    n = seq.shape[-1]
    dynamic = len(seq.shape) - 1 in ctx.dynamic_dims(seq)
    if dynamic:
        steps = max(n.bit_length(), 31)
        length = ctx.node("Squeeze", [ctx.node("Shape", [ctx.value(seq)], start=-1)])
    else:
        steps, length = n.bit_length(), ctx.scalar(n, int64)
    rows = len(seq.shape) > 1

    def padded(x: str) -> str:  # (one more entry, read where the run-time length is 0)
        if not dynamic:
            return x
        pads = [0] * (2 * len(seq.shape))
        pads[-1] = 1
        return ctx.node("Pad", [x, ctx.ints(pads)])

    def read(table: str, at: str) -> str:
        return ctx.node("GatherElements", [table, at], axis=-1) if rows else \
            ctx.node("Gather", [table, at], axis=0)

    # (bfloat16 compared as float32, exact: onnxruntime's Greater takes no bfloat16)
    table, v = (ctx.cast(ctx.value(a), a.dtype, float32 if a.dtype is bfloat16 else a.dtype)
                for a in (seq, vals))
    table = padded(table)
    start = ctx.node("ConstantOfShape", [ctx.node("Shape", [v])],
                     value=onnx_helper.make_tensor("v", TensorProto.INT64, [1], [0]))
    end = ctx.node("Add", [start, length])
    stays = "Greater" if eqn.params["right"] else "GreaterOrEqual"
    one = ctx.scalar(1, int64)
    last = ctx.node("Max", [ctx.node("Sub", [length, one]), ctx.scalar(0, int64)])
    for _ in range(steps):
        mid = ctx.node("Add", [start, ctx.node("Div", [ctx.node("Sub", [end, start]),
                                                       ctx.scalar(2, int64)])])
        pos = ctx.node("Min", [mid, last])
        if sorter:
            pos = read(padded(ctx.value(sorter[0])), pos)
        stay = ctx.node(stays, [read(table, pos), v])
        active = ctx.node("Less", [start, end])
        start = ctx.node("Where", [ctx.node("And", [active, ctx.node("Not", [stay])]),
                                   ctx.node("Add", [mid, one]), start])
        end = ctx.node("Where", [ctx.node("And", [active, stay]), mid, end])
    return ctx.cast(start, int64, eqn.outputs[0].dtype)


@converter("isin")
def isin(ctx: Context, eqn: Eqn) -> str:
    """Whether each element equals any test element: Equal against the test elements on a
    new last axis, counted (an empty test set: none), in their dtype (one: eager promotes
    them first; int16 and bfloat16 on a wider one, which onnxruntime's Equal takes); NaN
    equals nothing."""
    a, b = eqn.inputs
    on = {"int16": int32, "bfloat16": float32}.get(a.dtype.name, a.dtype)
    x = ctx.node("Unsqueeze", [ctx.cast(ctx.value(a), a.dtype, on), ctx.ints([-1])])
    tests = ctx.node("Reshape", [ctx.cast(ctx.value(b), b.dtype, on), ctx.ints([-1])])
    hits = ctx.cast(ctx.node("Equal", [x, tests]), bool_, int32)
    found = ctx.node("Greater", [ctx.reduce("ReduceSum", hits, [len(a.shape)], 0),
                                 ctx.scalar(0, int32)])
    return ctx.node("Not", [found]) if eqn.params["invert"] else found
