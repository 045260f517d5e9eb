"""The gradient of ``while_loop``: the loop run again in eager ops with every iteration on
the tape, then differentiated. Eager code does that directly; compiled code and transforms,
which keep no iteration's values, hold it as one :class:`WhileLoopGrad` equation (first
derivatives only)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ember.autograd.engine import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad
from ember.errors import GradError
from ember.jit.control.branch import call_graph, set_aside
from ember.jit.ir import Graph
from ember.ops.creation import zeros_like
from ember.ops.primitive import _FLOAT, Primitive, TensorSpec, apply
from ember.tensor import _wrap


def recorded_loop(cond_graph: Graph, body_graph: Graph, carried: list, captured: list) -> tuple:
    """The loop in eager ops, recorded by autograd (the first step copies, as the op does)."""
    state = [t.clone() for t in carried]
    while bool(call_graph(cond_graph, (*state, *captured))[0]):
        state = call_graph(body_graph, (*state, *captured))
    return tuple(state)


def is_float(t: Any) -> bool:
    return t.dtype.np in _FLOAT


@dataclass(frozen=True, eq=False)
class Loop:
    """What a loop's gradient equation needs of the loop (its param, named in generated code
    as one global): its graphs, how many of its inputs are carried, their device, and which
    of them need a gradient."""

    cond_graph: Graph
    body_graph: Graph
    carried: int
    device: Any
    wanted: tuple[bool, ...]  # (which inputs' gradients it returns)

    def __repr__(self) -> str:  # (in printed graphs: the loop, not its graphs' dataclass text)
        return f"<loop of {len(self.wanted)} inputs, {self.carried} carried>"


class WhileLoopGrad(Primitive):
    """``grads = while_loop_backward(*carried, *captured, *cotangents, loop=...)``: the
    gradients of the loop's inputs ``loop.wanted`` marks, given the cotangents of its float
    outputs. One instance per number of gradients."""

    name = "while_loop_backward"

    def __init__(self, nout: int) -> None:
        self.nout = nout

    def forward(self, xp: Any, *arrays: Any, loop: Loop) -> Any:
        n = len(loop.wanted)
        with set_aside(), enable_grad():
            xs = [_wrap(a, loop.device).detach().requires_grad_(w)
                  for a, w in zip(arrays[:n], loop.wanted)]
            outs = [o for o in recorded_loop(loop.cond_graph, loop.body_graph,
                                             xs[:loop.carried], xs[loop.carried:])
                    if is_float(o)]
            pairs = [(o, _wrap(g, loop.device)) for o, g in zip(outs, arrays[n:])
                     if o.requires_grad]
            targets = [x for x in xs if x.requires_grad]
            found = autograd_grad([o for o, _ in pairs], targets, [g for _, g in pairs],
                                  allow_unused=True) if pairs else [None] * len(targets)
        grads = [xp.zeros(x.shape, x._data.dtype) if g is None else _own(xp, g._data, arrays)
                 for x, g in zip(targets, found)]
        return grads[0] if self.nout == 1 else tuple(grads)

    def infer(self, *specs: TensorSpec, loop: Loop) -> Any:
        outs = tuple(TensorSpec(s.shape, s.dtype) for s, w in zip(specs, loop.wanted) if w)
        return outs[0] if self.nout == 1 else outs

    def vjp(self, ctx: Any, *grads: Any) -> tuple:
        raise GradError("while_loop: a second derivative of a loop in compiled code (ember.jit) "
                        "or under a transform is not supported. Hint: take it in eager code, "
                        "where each iteration is recorded")


def _own(xp: Any, array: Any, inputs: tuple) -> Any:
    """``array``, copied if it shares memory with an input (with no iteration, the gradient
    of a carried value is its cotangent itself): an equation's result is never an input."""
    return array.copy() if any(xp.may_share_memory(array, a) for a in inputs) else array


@cache
def loop_grad_primitive(nout: int) -> WhileLoopGrad:
    return WhileLoopGrad(nout)


def loop_vjp(ctx: Any, grads: tuple, carried: int) -> tuple:
    """``while_loop``'s vjp: one :class:`WhileLoopGrad` equation."""
    xs = ctx.inputs
    wanted = tuple(is_float(x) and need for x, need in zip(xs, ctx.needs_input_grad))
    if not any(wanted):
        return (None,) * len(xs)
    cotangents = [g if g is not None else zeros_like(xs[i])
                  for i, g in enumerate(grads) if is_float(xs[i])]
    loop = Loop(ctx.params["cond_graph"], ctx.params["body_graph"], carried, xs[0]._device,
                wanted)
    prim = loop_grad_primitive(sum(wanted))
    found = apply(prim, *xs, *cotangents, loop=loop)
    found = iter(found if prim.nout > 1 else (found,))
    return tuple(next(found) if w else None for w in wanted)
