"""``vmap`` of ``cond``: with one predicate for the whole batch the cond stays (its branches
batched); with a predicate per sample both branches run, batched, and ``where`` picks each
sample's result (as ``jax.lax.cond`` under ``vmap`` does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.func.batching import rule
from ember.func.vmap import vmap
from ember.jit.control.branch import call_graph
from ember.jit.control.cond import cond
from ember.jit.ir import Graph
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
        picks = pred.reshape(b) != 0
        out = tuple(where(picks.reshape((b,) + (1,) * (t.ndim - 1)), t, f)
                    for t, f in zip(true_fn(*operands), false_fn(*operands)))
    return out[0] if len(out) == 1 else tuple(out)
