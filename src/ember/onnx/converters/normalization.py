"""Normalization: ``layer_norm`` (LayerNormalization), ``group_norm`` (its decomposition:
ONNX's GroupNormalization scales per group before opset 21), ``standardize`` (what
instance norm traces into) and ``batch_norm`` (over the batch's own statistics)."""

from __future__ import annotations

from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter


@converter("layer_norm")
def layer_norm(ctx: Context, eqn: Eqn) -> list[str] | str | None:
    """Outputs: the normalized values, the mean and the reciprocal standard deviation (as
    ONNX's LayerNormalization outputs them)."""
    x, weight, bias = eqn.inputs
    dims = len(weight.shape)
    if weight.shape != x.shape[len(x.shape) - dims:] or bias.shape != weight.shape:
        return ctx.refuse(f"layer_norm with weight {weight.shape} and bias {bias.shape} over "
                          f"input {x.shape}: ONNX wants both shaped as the normalized dims")
    return ctx.node("LayerNormalization", [ctx.value(x), ctx.value(weight), ctx.value(bias)],
                    outputs=3, axis=-dims, epsilon=float(eqn.params["eps"]))


def _moments(ctx: Context, x: str, axes: list[int]) -> tuple[str, str, str]:
    """The mean over ``axes`` (kept), ``x`` centred and the (biased) variance."""
    mean = ctx.reduce("ReduceMean", x, axes, 1)
    centered = ctx.node("Sub", [x, mean])
    var = ctx.reduce("ReduceMean", ctx.node("Mul", [centered, centered]), axes, 1)
    return mean, centered, var


def _rstd(ctx: Context, var: str, eqn: Eqn) -> str:
    """``1 / sqrt(var + eps)``."""
    eps = ctx.scalar(eqn.params["eps"], eqn.outputs[0].dtype)
    return ctx.node("Reciprocal", [ctx.node("Sqrt", [ctx.node("Add", [var, eps])])])


@converter("group_norm")
def group_norm(ctx: Context, eqn: Eqn) -> list[str]:
    """Outputs: the normalized, scaled and shifted values, and the (N, groups) mean and
    reciprocal standard deviation; N and the spatial sizes are read at run time."""
    x, weight, bias = (ctx.value(v) for v in eqn.inputs)
    groups, ndim = eqn.params["groups"], len(eqn.inputs[0].shape)
    grouped = ctx.node("Reshape", [x, ctx.ints([0, groups, -1])])
    mean, centered, var = _moments(ctx, grouped, [2])
    rstd = _rstd(ctx, var, eqn)
    y = ctx.node("Reshape", [ctx.node("Mul", [centered, rstd]), ctx.node("Shape", [x])])
    per_channel = ctx.ints([-1] + [1] * (ndim - 2))
    out = ctx.node("Add", [ctx.node("Mul", [y, ctx.node("Reshape", [weight, per_channel])]),
                           ctx.node("Reshape", [bias, per_channel])])
    stat = ctx.ints([0, groups])
    return [out, ctx.node("Reshape", [mean, stat]), ctx.node("Reshape", [rstd, stat])]


@converter("standardize")
def standardize(ctx: Context, eqn: Eqn) -> list[str]:
    """``(x - mean) / sqrt(var + eps)`` over ``dims``; outputs the result, mean and (biased)
    variance."""
    mean, centered, var = _moments(ctx, ctx.value(eqn.inputs[0]), list(eqn.params["dims"]))
    return [ctx.node("Mul", [centered, _rstd(ctx, var, eqn)]), mean, var]


@converter("batch_norm")
def batch_norm(ctx: Context, eqn: Eqn) -> list[str]:
    """Batch norm over the batch's own statistics (``track_running_stats=False``, which
    normalizes with them in eval mode too): per channel (dimension 1) over every other
    dimension, scaled and shifted; outputs the result and the (C,) mean and biased
    variance."""
    x, weight, bias = (ctx.value(v) for v in eqn.inputs)
    ndim = len(eqn.inputs[0].shape)
    mean, centered, var = _moments(ctx, x, [0, *range(2, ndim)])
    per_channel = ctx.ints([-1] + [1] * (ndim - 2))
    scale = ctx.node("Mul", [_rstd(ctx, var, eqn), ctx.node("Reshape", [weight, per_channel])])
    out = ctx.node("Add", [ctx.node("Mul", [centered, scale]),
                           ctx.node("Reshape", [bias, per_channel])])
    flat = ctx.ints([-1])
    return [out, ctx.node("Reshape", [mean, flat]), ctx.node("Reshape", [var, flat])]
