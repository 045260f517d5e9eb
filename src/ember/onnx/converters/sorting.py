"""Sorting: ``argsort`` (which ``sort`` and ``msort`` trace into, the values gathered after
it) and ``topk``, both as ONNX's TopK, which returns equal entries in their original order
(Ember's ``stable=True``) and, in onnxruntime, orders NaN above every number as Ember does.
TopK is always sorted: ``kthvalue`` and ``median`` take the last of an unsorted ``topk``,
whose order onnxruntime does not keep; bools are ordered as int32 (TopK takes no bool)."""

from __future__ import annotations

import numpy as np

from ember.dtypes import bool_, int32
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
    return _indices(ctx, eqn, ctx.ints([p["k"]]), p["largest"])
