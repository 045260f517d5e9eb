"""``vmap`` of ``cond``: with one predicate for the whole batch the cond stays (its branches
batched); with a predicate per sample both branches run, batched, and ``where`` picks each
sample's result (as ``jax.lax.cond`` under ``vmap`` does). ``vmap`` of ``while_loop``: one
loop over the batch, running while any sample's condition holds; a sample whose condition
no longer holds keeps its values (``where``), as ``jax.lax.while_loop`` under ``vmap``. A
loop's gradient equation runs once per sample (each sample's loop has its own trip count)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.func.batching import batched, rule
from ember.func.vmap import vmap
from ember.jit.control.branch import call_graph
from ember.jit.control.cond import cond
from ember.jit.control.loop_grad import Loop, loop_grad_primitive
from ember.jit.control.while_loop import while_loop
from ember.jit.ir import Graph
from ember.ops.join import stack
from ember.ops.primitive import apply
from ember.ops.select import where


def _batched_branch(graph: Graph, dims: tuple) -> Callable:
    """The branch over physical operands (batch axis 0 where ``dims`` says 0)."""
    def branch(*operands: Any) -> tuple:
        return tuple(call_graph(graph, operands))
    if all(d is None for d in dims):
        return branch
    return vmap(branch, in_dims=dims)


@rule("cond")
def _cond(b: int, xs: tuple, bs: tuple, branches: tuple[Graph, Graph]) -> Any:
    pred, operands = xs[0], xs[1:]
    dims = tuple(0 if batched else None for batched in bs[1:])
    true_fn, false_fn = (_batched_branch(g, dims) for g in branches)
    if not bs[0]:
        out = cond(pred, lambda *a: tuple(true_fn(*a)), lambda *a: tuple(false_fn(*a)),
                   operands)
    else:
        picks = pred.reshape(b) != 0  # (branches of unbatched operands give one sample)
        out = tuple(_per_sample(b, picks, batched(t, b, any(bs[1:])), f)
                    for t, f in zip(true_fn(*operands), false_fn(*operands)))
    return out[0] if len(out) == 1 else tuple(out)


def _per_sample(b: int, mask: Any, new: Any, old: Any) -> Any:
    return where(mask.reshape((b,) + (1,) * (new.ndim - 1)), new, old)


@rule("while_loop")
def _while_loop(b: int, xs: tuple, bs: tuple, cond_graph: Graph, body_graph: Graph) -> Any:
    n = len(body_graph.outputs)
    carried = [batched(x, b, is_batched).clone() for x, is_batched in zip(xs[:n], bs[:n])]
    dims = (0,) * n + tuple(0 if is_batched else None for is_batched in bs[n:])
    captured = xs[n:]
    holds = _batched_branch(cond_graph, dims)
    step = _batched_branch(body_graph, dims)

    def cond_fn(*state: Any) -> Any:
        return holds(*state, *captured)[0].reshape(b).any()

    def body_fn(*state: Any) -> tuple:
        active = holds(*state, *captured)[0].reshape(b)
        return tuple(_per_sample(b, active, new, old)
                     for new, old in zip(step(*state, *captured), state))

    out = while_loop(cond_fn, body_fn, carried)
    return out[0] if n == 1 else out


@rule("while_loop_backward")
def _while_loop_backward(b: int, xs: tuple, bs: tuple, loop: Loop) -> Any:
    prim = loop_grad_primitive(sum(loop.wanted))
    found = [apply(prim, *(x[k] if is_batched else x for x, is_batched in zip(xs, bs)),
                   loop=loop) for k in range(b)]
    found = [f if prim.nout > 1 else (f,) for f in found]
    out = tuple(stack([f[i] for f in found]) for i in range(prim.nout))
    return out[0] if prim.nout == 1 else out
