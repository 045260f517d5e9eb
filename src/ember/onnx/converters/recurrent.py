"""The recurrent gate primitives (``lstm_gates``, ``gru_gates``) as the steps they fuse:
Add, Slice per gate, Sigmoid, Tanh, Mul, Add (ONNX's own LSTM and GRU nodes run a whole
sequence, and the traced layers run one step per time step)."""

from __future__ import annotations

from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter


def _gates(ctx: Context, x: str, count: int, width: int) -> list[str]:
    """The ``count`` gates of ``x`` along its last dimension, each ``width`` wide."""
    return [ctx.node("Slice", [x, ctx.ints([k * width]), ctx.ints([(k + 1) * width]),
                               ctx.ints([-1])]) for k in range(count)]


@converter("lstm_gates")
def lstm_gates(ctx: Context, eqn: Eqn) -> list[str]:
    """``c' = σ(f)·c + σ(i)·tanh(g)``, ``h' = σ(o)·tanh(c')`` of the gates of ``x + hp``."""
    x, hp, c = (ctx.value(v) for v in eqn.inputs)
    i, f, g, o = _gates(ctx, ctx.node("Add", [x, hp]), 4, eqn.inputs[2].shape[-1])
    c2 = ctx.node("Add", [ctx.node("Mul", [ctx.node("Sigmoid", [f]), c]),
                          ctx.node("Mul", [ctx.node("Sigmoid", [i]), ctx.node("Tanh", [g])])])
    return [ctx.node("Mul", [ctx.node("Sigmoid", [o]), ctx.node("Tanh", [c2])]), c2]


@converter("gru_gates")
def gru_gates(ctx: Context, eqn: Eqn) -> str:
    """``(1 - z)·n + z·h`` with ``n = tanh(x_n + r·hp_n)``, ``r``, ``z`` the sigmoids of the
    first two gates of ``x + hp``."""
    x, hp, h = (ctx.value(v) for v in eqn.inputs)
    width = eqn.inputs[2].shape[-1]
    xr, xz, xn = _gates(ctx, x, 3, width)
    hr, hz, hn = _gates(ctx, hp, 3, width)
    r = ctx.node("Sigmoid", [ctx.node("Add", [xr, hr])])
    z = ctx.node("Sigmoid", [ctx.node("Add", [xz, hz])])
    n = ctx.node("Tanh", [ctx.node("Add", [xn, ctx.node("Mul", [r, hn])])])
    keep = ctx.node("Sub", [ctx.scalar(1, eqn.outputs[0].dtype), z])
    return ctx.node("Add", [ctx.node("Mul", [keep, n]), ctx.node("Mul", [z, h])])
