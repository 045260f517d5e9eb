"""``ember.while_loop``: PyTorch's ``torch._higher_order_ops.while_loop``, a loop whose trip
count depends on tensor values, kept whole by ``ember.jit``.

``cond_fn`` and ``body_fn`` are traced into sub-graphs (:mod:`ember.jit.control.branch`) held
by one ``while_loop`` equation: a ``while`` statement in the generated code. In eager code
where a gradient is needed the body runs as plain ops, so autograd records every iteration;
the equation's backward runs the loop that way again (:mod:`ember.jit.control.loop_grad`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from ember.autograd.grad_mode import GRAD
from ember.errors import GradError, OpError
from ember.jit.control.branch import join_captures, run_graph, trace_branch
from ember.jit.control.loop_grad import loop_vjp, recorded_loop
from ember.jit.ir import Graph
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply
from ember.tensor import Tensor


class WhileLoop(Primitive):
    """``carried = while_loop(*carried, *captured, cond_graph=..., body_graph=...)``."""

    name = "while_loop"

    def __init__(self, nout: int, pure: bool) -> None:
        self.nout, self.pure = nout, pure

    def forward(self, xp: Any, *arrays: Any, cond_graph: Graph, body_graph: Graph) -> Any:
        n = self.nout
        carried, captured = [xp.array(a, copy=True) for a in arrays[:n]], arrays[n:]
        while bool(run_graph(cond_graph, xp, (*carried, *captured))[0]):
            carried = run_graph(body_graph, xp, (*carried, *captured))
        return carried[0] if n == 1 else tuple(carried)

    def infer(self, *specs: TensorSpec, cond_graph: Graph, body_graph: Graph) -> Any:
        outs = specs[:self.nout]
        return outs[0] if self.nout == 1 else tuple(outs)

    def vjp(self, ctx: Any, *grads: Any) -> tuple:
        if not self.pure:
            raise GradError("while_loop: the gradient of a loop that draws random numbers "
                            "cannot be taken in compiled code (ember.jit) or under a "
                            "transform: its backward reruns the loop and would draw other "
                            "numbers than the forward did. Hint: differentiate it in eager "
                            "code, or draw the random values before the loop and pass them in")
        return loop_vjp(ctx, grads, self.nout)

    def jvp(self, ctx: Any, *tangents: Any) -> Any:
        raise GradError("while_loop: forward-mode derivatives are not supported. Hint: "
                        "differentiate it in eager code with reverse mode")

    def emit(self, eqn: Any, function: Callable[[Graph, str], str]) -> list[str]:
        """Generated code: the carried values copied, then ``while cond(...): body(...)``."""
        n = self.nout
        carried = [v.name for v in eqn.outputs]
        rest = ", ".join(carried + [v.name for v in eqn.inputs[n:]])
        outs = ", ".join(carried) + ("," if n == 1 else "")
        copies = ", ".join(f"xp.array({v.name}, copy=True)" for v in eqn.inputs[:n])
        return [f"{outs} = {copies}{',' if n == 1 else ''}",
                f"while {function(eqn.params['cond_graph'], 'cond')}({rest})[0]:",
                f"    {outs} = {function(eqn.params['body_graph'], 'body')}({rest})"]


@cache
def while_loop_primitive(nout: int, pure: bool) -> WhileLoop:
    return WhileLoop(nout, pure)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> tuple:
    """Runs ``carried = body_fn(*carried)`` while ``cond_fn(*carried)``, as PyTorch's
    ``torch._higher_order_ops.while_loop``; returns the final carried values (new tensors).

    ``cond_fn`` returns a bool tensor with one element; ``body_fn`` returns a tuple of as
    many tensors as ``carried_inputs``, with their shapes and dtypes, none of them an input.
    Compiled (``ember.jit``), the loop is one equation; its backward runs the loop again.

    Example:
        >>> i, x = ember.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
        ...                         (ember.tensor(0), ember.tensor([1.0, 2.0])))
        >>> i, x
        (tensor(3), tensor([ 8., 16.]))
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise OpError("while_loop: expected cond_fn and body_fn to be callable")
    if not isinstance(carried_inputs, tuple | list) or not all(
            isinstance(t, Tensor) for t in carried_inputs):
        raise OpError("while_loop: expected carried_inputs to be a tuple or list of tensors, "
                      f"but got {type(carried_inputs).__name__}")
    carried = list(carried_inputs)
    cond_branch = trace_branch("while_loop", "cond_fn", cond_fn, carried)
    body = trace_branch("while_loop", "body_fn", _returning_tuple(body_fn), carried, body_fn)
    _check(cond_branch.graph, body.graph, carried)
    captured = join_captures([cond_branch, body])
    graphs = (cond_branch.graph, body.graph)
    if DISPATCH.only_observers() and GRAD.enabled and any(
            t.requires_grad for t in (*carried, *captured)):
        return recorded_loop(*graphs, carried, captured)  # (eager: each iteration on the tape)
    pure = all(e.prim.pure for g in graphs for e in g.eqns)
    prim = while_loop_primitive(len(carried), pure)
    out = apply(prim, *carried, *captured, cond_graph=graphs[0], body_graph=graphs[1])
    return tuple(out) if prim.nout > 1 else (out,)


def _returning_tuple(body_fn: Callable) -> Callable:
    def body(*carried: Tensor) -> tuple:
        out = body_fn(*carried)
        if not isinstance(out, tuple | list):
            raise OpError(f"while_loop: body_fn must return a tuple of tensors, one per carried "
                          f"input, but returned a {type(out).__name__}")
        return tuple(out)
    return body


def _check(cond_graph: Graph, body_graph: Graph, carried: list) -> None:
    pred = cond_graph.outputs
    if len(pred) != 1 or pred[0].shape not in ((), (1,)) or pred[0].dtype.name != "bool":
        got = ", ".join(v.type_str for v in pred)
        raise OpError(f"while_loop: cond_fn must return a boolean scalar tensor, but returned "
                      f"{got}. Hint: compare (i < n) and reduce (.all(), .any())")
    outs = body_graph.outputs
    if len(outs) != len(carried):
        raise OpError(f"while_loop: body_fn returned {len(outs)} values for "
                      f"{len(carried)} carried inputs; it must return one per carried input")
    for i, (v, t) in enumerate(zip(outs, carried)):
        if v.shape != tuple(t.shape) or v.dtype is not t.dtype:
            raise OpError(f"while_loop: body_fn's output {i} is {v.type_str}, its carried "
                          f"input {i} is {t.dtype.name}{list(t.shape)}: the body must keep "
                          "each carried value's shape and dtype")
