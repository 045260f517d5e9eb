"""Normalization: ``layer_norm`` (LayerNormalization) and ``standardize`` (what group and
instance norm trace into)."""

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


@converter("standardize")
def standardize(ctx: Context, eqn: Eqn) -> list[str]:
    """``(x - mean) / sqrt(var + eps)`` over ``dims``; outputs the result, mean and (biased)
    variance."""
    x, dtype = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype
    axes = eqn.params["dims"]
    mean = ctx.reduce("ReduceMean", x, axes, 1)
    centered = ctx.node("Sub", [x, mean])
    var = ctx.reduce("ReduceMean", ctx.node("Mul", [centered, centered]), axes, 1)
    scale = ctx.node("Reciprocal", [ctx.node("Sqrt", [
        ctx.node("Add", [var, ctx.scalar(eqn.params["eps"], dtype)])])])
    return [ctx.node("Mul", [centered, scale]), mean, var]
