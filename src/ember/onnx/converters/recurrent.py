"""The recurrent gate primitives (``lstm_gates``, ``gru_gates``) as the steps they fuse:
Add, Slice per gate, Sigmoid, Tanh, Mul, Add; the whole-sequence scans (``lstm_scan``,
``gru_scan``) unrolled over their (static) time steps into MatMul, Add and those gates, as
the step-by-step layers were exported (ONNX's own LSTM and GRU nodes take another gate order
and the unprojected input).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter


def _gates(ctx: Context, x: str, count: int, width: int) -> list[str]:
    """The ``count`` gates of ``x`` along its last dimension, each ``width`` wide."""
    return [ctx.node("Slice", [x, ctx.ints([k * width]), ctx.ints([(k + 1) * width]),
                               ctx.ints([-1])]) for k in range(count)]


def _lstm_step(ctx: Context, a: str, c: str, width: int) -> tuple[str, str, list[str]]:
    """``(h', c', activated gates)`` of the gate pre-activations ``a`` and the state ``c``."""
    i, f, g, o = _gates(ctx, a, 4, width)
    acts = [ctx.node("Sigmoid", [i]), ctx.node("Sigmoid", [f]), ctx.node("Tanh", [g]),
            ctx.node("Sigmoid", [o])]
    c2 = ctx.node("Add", [ctx.node("Mul", [acts[1], c]), ctx.node("Mul", [acts[0], acts[2]])])
    return ctx.node("Mul", [acts[3], ctx.node("Tanh", [c2])]), c2, acts


@converter("lstm_gates")
def lstm_gates(ctx: Context, eqn: Eqn) -> list[str]:
    """``c' = σ(f)·c + σ(i)·tanh(g)``, ``h' = σ(o)·tanh(c')`` of the gates of ``x + hp``."""
    x, hp, c = (ctx.value(v) for v in eqn.inputs)
    h2, c2, _ = _lstm_step(ctx, ctx.node("Add", [x, hp]), c, eqn.inputs[2].shape[-1])
    return [h2, c2]


def _unrolled(ctx: Context, eqn: Eqn, states: int, step: Callable) -> list[str] | None:
    """A scan's outputs: ``step(x_t, hp_t, states) -> (states, outputs)`` run over the time
    steps (``hp_t = h W_hhᵀ + b_hh``, ``h`` the first state), each output stacked in time
    order. A time axis that follows a dynamic axis is refused (the unrolled steps are as
    many as traced: a longer sequence would run only those)."""
    if 0 in ctx.dynamic_dims(eqn.inputs[0]):
        return ctx.refuse(f"{eqn.prim.name} (an LSTM or GRU layer) over a sequence of dynamic "
                          f"length ({eqn.inputs[0].shape[0]} steps traced): its exported form "
                          "unrolls the traced number of steps. Hint: make the sequence axis "
                          "static (a dynamic batch axis is fine)")
    px = ctx.value(eqn.inputs[0])
    state = [ctx.value(v) for v in eqn.inputs[1:1 + states]]
    w, *b = (ctx.value(v) for v in eqn.inputs[1 + states:])
    wt = ctx.node("Transpose", [w], perm=[1, 0])
    count = eqn.inputs[0].shape[0]
    outs = {}
    for t in (range(count - 1, -1, -1) if eqn.params["reverse"] else range(count)):
        x = ctx.node("Gather", [px, ctx.constant(np.asarray(t, np.int64))], axis=0)
        hp = ctx.node("MatMul", [state[0], wt])
        if b:
            hp = ctx.node("Add", [hp, b[0]])
        state, outs[t] = step(x, hp, state)
    return [ctx.node("Concat", [ctx.node("Unsqueeze", [outs[t][j], ctx.ints([0])])
                                for t in range(count)], axis=0)
            for j in range(len(outs[0]))]


@converter("lstm_scan")
def lstm_scan(ctx: Context, eqn: Eqn) -> list[str]:
    """The LSTM steps unrolled: ``(y, cs, activated gates)``."""
    width = eqn.inputs[1].shape[-1]

    def step(x: str, hp: str, state: list[str]) -> tuple:
        h, c, acts = _lstm_step(ctx, ctx.node("Add", [x, hp]), state[1], width)
        return [h, c], [h, c, ctx.node("Concat", acts, axis=-1)]
    return _unrolled(ctx, eqn, 2, step)


def _gru_step(ctx: Context, x: str, hp: str, h: str, width: int, dtype: Any) -> tuple:
    """``(h', [r, z, n, hp_n])`` of a GRU step."""
    xr, xz, xn = _gates(ctx, x, 3, width)
    hr, hz, hn = _gates(ctx, hp, 3, width)
    r = ctx.node("Sigmoid", [ctx.node("Add", [xr, hr])])
    z = ctx.node("Sigmoid", [ctx.node("Add", [xz, hz])])
    n = ctx.node("Tanh", [ctx.node("Add", [xn, ctx.node("Mul", [r, hn])])])
    keep = ctx.node("Sub", [ctx.scalar(1, dtype), z])
    return ctx.node("Add", [ctx.node("Mul", [keep, n]), ctx.node("Mul", [z, h])]), [r, z, n, hn]


@converter("gru_scan")
def gru_scan(ctx: Context, eqn: Eqn) -> list[str]:
    """The GRU steps unrolled: ``(y, [r, z, n, hp_n] per step)``."""
    width, dtype = eqn.inputs[1].shape[-1], eqn.outputs[0].dtype

    def step(x: str, hp: str, state: list[str]) -> tuple:
        h, work = _gru_step(ctx, x, hp, state[0], width, dtype)
        return [h], [h, ctx.node("Concat", work, axis=-1)]
    return _unrolled(ctx, eqn, 1, step)


@converter("gru_gates")
def gru_gates(ctx: Context, eqn: Eqn) -> str:
    """``(1 - z)·n + z·h`` with ``n = tanh(x_n + r·hp_n)``, ``r``, ``z`` the sigmoids of the
    first two gates of ``x + hp``."""
    x, hp, h = (ctx.value(v) for v in eqn.inputs)
    return _gru_step(ctx, x, hp, h, eqn.inputs[2].shape[-1], eqn.outputs[0].dtype)[0]
