"""Losses with primitives of their own: binary cross entropy (on probabilities and on
logits) and smooth L1 / Huber, as eager computes them."""

from __future__ import annotations

import numpy as np

from ember.dtypes import float32
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.converters.elementwise import is_inf, near_zero
from ember.onnx.registry import converter


@converter("binary_cross_entropy")
def binary_cross_entropy(ctx: Context, eqn: Eqn) -> str:
    """``(t - 1)·max(log1p(-x), -100) - t·max(log(x), -100)``, as the primitive computes it."""
    x, t = (ctx.value(v) for v in eqn.inputs)
    dtype = eqn.outputs[0].dtype
    floor = ctx.scalar(-100, dtype)
    log_x = ctx.node("Max", [ctx.node("Log", [x]), floor])
    log_1mx = ctx.node("Max", [near_zero(ctx, ctx.node("Neg", [x]), dtype, "log1p"), floor])
    kept = ctx.node("Mul", [ctx.node("Sub", [t, ctx.scalar(1, dtype)]), log_1mx])
    return ctx.node("Sub", [kept, ctx.node("Mul", [t, log_x])])


@converter("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(ctx: Context, eqn: Eqn) -> str:
    """``(1 - t)·softplus(x) + p·t·softplus(-x)``, as the primitive computes it (float16 and
    bfloat16 in float32; softplus as ``log1p(exp(-|x|)) + max(±x, 0)``: ONNX's Softplus
    overflows, to inf from x = 89 in float32); at ``x = ±inf`` a weight of 0 makes its term
    0 (the limit, not ``0·inf``'s NaN)."""
    dtype = eqn.outputs[0].dtype
    work = float32 if dtype.name in ("float16", "bfloat16") else dtype
    x, t, *p = (ctx.cast(ctx.value(v), v.dtype, work) for v in eqn.inputs)
    zero = ctx.scalar(0, work)
    kept = ctx.node("Sub", [ctx.scalar(1, work), t])
    positive = ctx.node("Mul", [p[0], t]) if p else t
    small = ctx.node("Exp", [ctx.node("Neg", [ctx.node("Abs", [x])])])
    tail = near_zero(ctx, small, work, "log1p")
    terms = [ctx.node("Mul", [w, ctx.node("Add", [tail, ctx.node("Max", [v, zero])])])
             for w, v in ((kept, x), (positive, ctx.node("Neg", [x])))]
    weight = ctx.node("Where", [ctx.node("Greater", [x, zero]), kept, positive])
    limit = ctx.node("Where", [ctx.node("Equal", [weight, zero]), zero,
                               ctx.node("Mul", [ctx.node("Sign", [weight]),
                                                ctx.scalar(np.inf, work)])])
    out = ctx.node("Where", [is_inf(ctx, x, work), limit, ctx.node("Add", terms)])
    return ctx.cast(out, work, dtype)


@converter("smooth_l1_loss")
def smooth_l1_loss(ctx: Context, eqn: Eqn) -> str:
    """``m·(|d| - m/2)`` with ``m = min(|d|, beta)``, over ``beta`` unless huber, reduced; as
    the primitive computes it."""
    x, t = (ctx.value(v) for v in eqn.inputs)
    dtype, params = eqn.outputs[0].dtype, eqn.params
    beta = ctx.scalar(params["beta"], dtype)
    ad = ctx.node("Abs", [ctx.node("Sub", [x, t])])
    m = ctx.node("Min", [ad, beta])
    loss = ctx.node("Sub", [ad, ctx.node("Mul", [m, ctx.scalar(0.5, dtype)])])
    loss = ctx.node("Mul", [loss, m])
    if not params["huber"]:
        loss = ctx.node("Div", [loss, beta])
    if params["reduction"] == "none":
        return loss
    axes = list(range(len(eqn.inputs[0].shape)))  # (ReduceMean: the count may be dynamic)
    return ctx.reduce("ReduceSum" if params["reduction"] == "sum" else "ReduceMean", loss,
                      axes, 0)
