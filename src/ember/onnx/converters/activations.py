"""Activation functions and softmax."""

from __future__ import annotations

import math

import numpy as np

from ember.dtypes import DType, float32, float64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.converters.elementwise import near_zero, sigmoid
from ember.onnx.converters.special import computed_in
from ember.onnx.registry import converter


@converter("leaky_relu")
def leaky_relu(ctx: Context, eqn: Eqn) -> str:
    """LeakyRelu; float64 as ``x > 0 ? x : x·slope`` (LeakyRelu's slope is a float32
    attribute: 1.5e-8 relative off)."""
    x, dtype, slope = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype, \
        float(eqn.params["negative_slope"])
    if dtype is not float64:
        return ctx.node("LeakyRelu", [x], alpha=slope)
    return ctx.node("Where", [ctx.node("Greater", [x, ctx.scalar(0, dtype)]), x,
                              ctx.node("Mul", [x, ctx.scalar(slope, dtype)])])


@converter("hardtanh")
def hardtanh(ctx: Context, eqn: Eqn) -> str:
    dtype = eqn.outputs[0].dtype
    return ctx.node("Clip", [ctx.value(eqn.inputs[0]), ctx.scalar(eqn.params["min_val"], dtype),
                             ctx.scalar(eqn.params["max_val"], dtype)])


@converter("elu", "elu_from_output")
def elu(ctx: Context, eqn: Eqn) -> str:
    """``scale * x`` above 0, ``scale * alpha * expm1(input_scale * x)`` below (ELU, SELU and
    CELU share the primitive), as eager to a few ulps: float16 and bfloat16 in float32, -0 and
    NaN kept. ``scale * relu(x) + below(-relu(-x))``, expm1 of the non-positive side as
    ``2t / (1 - t)``, ``t = tanh(x / 2)``: no cancellation, -1 at -inf, and no Where (slow in
    onnxruntime: 12 ms a million); Kahan's expm1 for a negative ``input_scale``. ONNX's Elu
    is ``exp(x) - 1``: 0.14% off at x = -1e-5 in float32, 0 for -1e-30; its alpha a float32
    attribute."""
    dtype, p = eqn.outputs[0].dtype, eqn.params
    work = computed_in(dtype)
    x = ctx.cast(ctx.value(eqn.inputs[0]), dtype, work)
    # (Relu keeps -0, Min(x, 0) makes it +0: -relu(-x) is -0 at -0 and +0 at +0)
    minus = ctx.node("Relu", [ctx.node("Neg", [x])])
    if p["input_scale"] >= 0:
        t = ctx.node("Tanh", [ctx.node("Mul", [minus, ctx.scalar(-p["input_scale"] / 2, work)])])
        below = ctx.node("Div", [ctx.node("Mul", [t, ctx.scalar(2 * p["alpha"] * p["scale"],
                                                                 work)]),
                                 ctx.node("Sub", [ctx.scalar(1, work), t])])
    else:  # (CELU's negative alpha: expm1 of a positive number, where 1 - t would cancel)
        y = ctx.node("Mul", [minus, ctx.scalar(-p["input_scale"], work)])
        below = ctx.node("Mul", [near_zero(ctx, y, work, "expm1"),
                                 ctx.scalar(p["alpha"] * p["scale"], work)])
    above = ctx.node("Relu", [x])
    if p["scale"] != 1:
        above = ctx.node("Mul", [above, ctx.scalar(p["scale"], work)])
    return ctx.cast(ctx.node("Add", [above, below]), work, dtype)


def log1p_exp(ctx: Context, s: str, dtype: DType) -> str:
    """``log(1 + exp(s))`` as eager to a few ulps, in ``dtype``: ``max(s, 0) + log1p(e)``,
    ``e = exp(-|s|)`` (no overflow), log1p by ``log(u) - (u - 1 - e) / u``, ``u = 1 + e``
    (the rounding of ``1 + e`` taken back: ``e`` itself where it is below the ulp of 1).
    ONNX's Softplus overflows from ``s`` = 89 in float32 and has no float64 kernel in
    onnxruntime but at opset 18."""
    one = ctx.scalar(1, dtype)
    e = ctx.node("Exp", [ctx.node("Neg", [ctx.node("Abs", [s])])])
    u = ctx.node("Add", [e, one])
    lost = ctx.node("Sub", [ctx.node("Sub", [u, one]), e])
    log1p = ctx.node("Sub", [ctx.node("Log", [u]), ctx.node("Div", [lost, u])])
    return ctx.node("Add", [ctx.node("Max", [s, ctx.scalar(0, dtype)]), log1p])


@converter("softplus")
def softplus(ctx: Context, eqn: Eqn) -> str:
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold`` (logsigmoid is
    ``beta = -1`` with no threshold); float16 and bfloat16 in float32, as eager."""
    dtype, p = eqn.outputs[0].dtype, eqn.params
    work = computed_in(dtype)
    x = ctx.cast(ctx.value(eqn.inputs[0]), dtype, work)
    scaled = x if p["beta"] == 1 else ctx.node("Mul", [x, ctx.scalar(p["beta"], work)])
    soft = log1p_exp(ctx, scaled, work)
    if p["beta"] != 1:
        soft = ctx.node("Div", [soft, ctx.scalar(p["beta"], work)])
    threshold = p["threshold"]  # (a no-op where log1p(exp(-threshold)) is below half an ulp)
    if threshold != math.inf and (p["beta"] != 1 or threshold < 0 or math.exp(-threshold)
                                  >= np.spacing(work.np.type(threshold)) / 2):
        linear = ctx.node("Greater", [scaled, ctx.scalar(threshold, work)])
        soft = ctx.node("Where", [linear, x, soft])
    return ctx.cast(soft, work, dtype)


@converter("softshrink", "hardshrink")
def shrink(ctx: Context, eqn: Eqn) -> str:
    """softshrink ``x - clip(x, -lambd, lambd)`` (float16 and bfloat16 in float32),
    hardshrink ``x`` where ``|x| > lambd``, 0 within, as eager: NaN stays NaN (ONNX's Shrink
    gives 0) and float64's ``lambd`` is exact (Shrink's is a float32 attribute)."""
    dtype, lambd = eqn.outputs[0].dtype, eqn.params["lambd"]
    work = computed_in(dtype)  # (onnxruntime has no bfloat16 Abs)
    x = ctx.cast(ctx.value(eqn.inputs[0]), dtype, work)
    if eqn.prim.name == "hardshrink":
        inside = ctx.node("LessOrEqual", [ctx.node("Abs", [x]), ctx.scalar(lambd, work)])
        out = ctx.node("Where", [inside, ctx.scalar(0, work), x])
    else:
        clipped = ctx.node("Clip", [x, ctx.scalar(-lambd, work), ctx.scalar(lambd, work)])
        out = ctx.node("Sub", [x, clipped])
    return ctx.cast(out, work, dtype)


@converter("silu")
def silu(ctx: Context, eqn: Eqn) -> str:
    x = ctx.value(eqn.inputs[0])
    return ctx.node("Mul", [x, sigmoid(ctx, x, eqn.outputs[0].dtype)])


@converter("hardsigmoid", "hardswish")
def hard_activations(ctx: Context, eqn: Eqn) -> str:
    """``clip(x + 3, 0, 6) / 6`` (``x * clip(...) / 6`` for hardswish), half types in float32,
    as PyTorch: ONNX's HardSigmoid, ``x / 6 + 0.5``, cancels near -3 (0.12% off at -2.9999 in
    float32) and its 1/6 is a float32 attribute (8e-9 relative off in float64). float32 keeps
    ONNX's ops, one node: 6e-8 (HardSigmoid) and 5e-7 (HardSwish, 2 ulps at 2.9) absolute off
    at most, though up to 25% relative just above -3, where the value is near 0."""
    dtype, name = eqn.outputs[0].dtype, eqn.prim.name
    work = computed_in(dtype)
    x = ctx.cast(ctx.value(eqn.inputs[0]), dtype, work)
    if dtype is float32:
        return ctx.node("HardSwish", [x]) if name == "hardswish" else \
            ctx.node("HardSigmoid", [x], alpha=1 / 6, beta=0.5)
    y = ctx.node("Clip", [ctx.node("Add", [x, ctx.scalar(3, work)]),
                          ctx.scalar(0, work), ctx.scalar(6, work)])
    if name == "hardswish":  # x * clip / 6 in that order, as eager and PyTorch
        y = ctx.node("Mul", [x, y])
    return ctx.cast(ctx.node("Div", [y, ctx.scalar(6, work)]), work, dtype)


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
    """Softmax and LogSoftmax; float64 log_softmax as ``x - m - log(sum(exp(x - m)))``
    (onnxruntime's float64 LogSoftmax drops a NaN of the slice: 46.05 where eager and PyTorch
    give NaN); a 0-d input (the ops take none: ONNX's checker refused it) as ``x - x``."""
    x, dim, dtype = ctx.value(eqn.inputs[0]), eqn.params["dim"], eqn.outputs[0].dtype
    if not eqn.inputs[0].shape:  # (0-d, which the ops refuse: x - x, 0 but NaN at NaN and
        shifted = ctx.node("Sub", [x, x])  # ±inf, as eager; its exp for softmax)
        return ctx.node("Exp", [shifted]) if eqn.prim.name == "softmax" else shifted
    if eqn.prim.name == "softmax":
        return ctx.node("Softmax", [x], axis=dim)
    if dtype is not float64:
        return ctx.node("LogSoftmax", [x], axis=dim)
    shifted = ctx.node("Sub", [x, ctx.reduce("ReduceMax", x, [dim], 1)])
    total = ctx.reduce("ReduceSum", ctx.node("Exp", [shifted]), [dim], 1)
    return ctx.node("Sub", [shifted, ctx.node("Log", [total])])


@converter("mish")
def mish(ctx: Context, eqn: Eqn) -> str:
    """``x * tanh(softplus(x))``, softplus by :func:`log1p_exp`; float16 and bfloat16 in
    float32, as eager."""
    dtype = eqn.outputs[0].dtype
    work = computed_in(dtype)
    x = ctx.cast(ctx.value(eqn.inputs[0]), dtype, work)
    y = ctx.node("Mul", [x, ctx.node("Tanh", [log1p_exp(ctx, x, work)])])
    return ctx.cast(y, work, dtype)


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
