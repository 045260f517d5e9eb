"""Activation functions and softmax."""

from __future__ import annotations

import math

from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter


@converter("leaky_relu")
def leaky_relu(ctx: Context, eqn: Eqn) -> str:
    return ctx.node("LeakyRelu", [ctx.value(eqn.inputs[0])],
                    alpha=float(eqn.params["negative_slope"]))


@converter("hardtanh")
def hardtanh(ctx: Context, eqn: Eqn) -> str:
    dtype = eqn.outputs[0].dtype
    return ctx.node("Clip", [ctx.value(eqn.inputs[0]), ctx.scalar(eqn.params["min_val"], dtype),
                             ctx.scalar(eqn.params["max_val"], dtype)])


@converter("elu", "elu_from_output")
def elu(ctx: Context, eqn: Eqn) -> str:
    """``scale * x`` above 0, ``scale * alpha * (exp(input_scale * x) - 1)`` below (ELU, SELU
    and CELU share the primitive)."""
    x, dtype, p = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype, eqn.params
    if p["input_scale"] == 1:
        y = ctx.node("Elu", [x], alpha=float(p["alpha"]))
        return y if p["scale"] == 1 else ctx.node("Mul", [y, ctx.scalar(p["scale"], dtype)])
    zero = ctx.scalar(0, dtype)
    inner = ctx.node("Mul", [ctx.node("Min", [x, zero]), ctx.scalar(p["input_scale"], dtype)])
    below = ctx.node("Mul", [ctx.node("Sub", [ctx.node("Exp", [inner]), ctx.scalar(1, dtype)]),
                             ctx.scalar(p["alpha"] * p["scale"], dtype)])
    above = ctx.node("Mul", [x, ctx.scalar(p["scale"], dtype)])
    return ctx.node("Where", [ctx.node("Greater", [x, zero]), above, below])


@converter("softplus")
def softplus(ctx: Context, eqn: Eqn) -> str:
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``."""
    x, dtype, p = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype, eqn.params
    scaled = ctx.node("Mul", [x, ctx.scalar(p["beta"], dtype)])
    soft = ctx.node("Div", [ctx.node("Softplus", [scaled]), ctx.scalar(p["beta"], dtype)])
    linear = ctx.node("Greater", [scaled, ctx.scalar(p["threshold"], dtype)])
    return ctx.node("Where", [linear, x, soft])


@converter("softshrink", "hardshrink")
def shrink(ctx: Context, eqn: Eqn) -> str:
    """ONNX's Shrink: ``x ∓ bias`` outside ``[-lambd, lambd]``, 0 within (bias 0: hardshrink)."""
    lambd = float(eqn.params["lambd"])
    return ctx.node("Shrink", [ctx.value(eqn.inputs[0])], lambd=lambd,
                    bias=lambd if eqn.prim.name == "softshrink" else 0.0)


@converter("silu")
def silu(ctx: Context, eqn: Eqn) -> str:
    x = ctx.value(eqn.inputs[0])
    return ctx.node("Mul", [x, ctx.node("Sigmoid", [x])])


@converter("hardsigmoid")
def hardsigmoid(ctx: Context, eqn: Eqn) -> str:
    """ONNX's HardSigmoid, ``clip(x / 6 + 0.5, 0, 1)``: within rounding of ``clip(x + 3, 0,
    6) / 6``."""
    return ctx.node("HardSigmoid", [ctx.value(eqn.inputs[0])], alpha=1 / 6, beta=0.5)


@converter("hardswish")
def hardswish(ctx: Context, eqn: Eqn) -> str:
    return ctx.node("HardSwish", [ctx.value(eqn.inputs[0])])


@converter("gelu")
def gelu(ctx: Context, eqn: Eqn) -> str:
    x, dtype, approximate = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype, \
        eqn.params["approximate"]
    if ctx.opset >= 20:
        return ctx.node("Gelu", [x], approximate=approximate)
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.node("Mul", [ctx.node("Pow", [x, ctx.scalar(3, dtype)]),
                                ctx.scalar(0.044715, dtype)])
        inner = ctx.node("Mul", [ctx.node("Add", [x, cube]),
                                 ctx.scalar(math.sqrt(2 / math.pi), dtype)])
        gate = ctx.node("Tanh", [inner])
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        gate = ctx.node("Erf", [ctx.node("Div", [x, ctx.scalar(math.sqrt(2), dtype)])])
    # (as one chain, (x (1 + gate)) / 2: with x / 2 on a branch of its own, onnxruntime
    # 1.32's GELU fusion takes another GELU's x / 2 when two read one tensor)
    scaled = ctx.node("Mul", [x, ctx.node("Add", [gate, ctx.scalar(1, dtype)])])
    return ctx.node("Mul", [scaled, ctx.scalar(0.5, dtype)])


@converter("softmax", "log_softmax")
def softmax(ctx: Context, eqn: Eqn) -> str:
    op = "Softmax" if eqn.prim.name == "softmax" else "LogSoftmax"
    return ctx.node(op, [ctx.value(eqn.inputs[0])], axis=eqn.params["dim"])


@converter("mish")
def mish(ctx: Context, eqn: Eqn) -> str:
    x = ctx.value(eqn.inputs[0])
    return ctx.node("Mul", [x, ctx.node("Tanh", [ctx.node("Softplus", [x])])])


@converter("glu")
def glu(ctx: Context, eqn: Eqn) -> str:
    """``a * sigmoid(b)`` of the input's halves along ``dim`` (an equal Split)."""
    halves = {"num_outputs": 2} if ctx.opset >= 18 else {}
    a, b = ctx.node("Split", [ctx.value(eqn.inputs[0])], outputs=2, axis=eqn.params["dim"],
                    **halves)
    return ctx.node("Mul", [a, ctx.node("Sigmoid", [b])])


@converter("prelu")
def prelu(ctx: Context, eqn: Eqn) -> str:
    """ONNX's PRelu: the slope, shaped by ``ember.prelu`` to broadcast, as it is."""
    return ctx.node("PRelu", [ctx.value(eqn.inputs[0]), ctx.value(eqn.inputs[1])])
