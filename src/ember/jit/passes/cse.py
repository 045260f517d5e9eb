"""Common-subexpression elimination: one equation per distinct computation.

Two equations are the same computation when they apply the same primitive to the same
variables with equal params. Impure primitives (``prim.pure`` False: sampling draws new
numbers each call, collectives communicate) and effects are never merged, nor a value an
effect writes in place (or a view of). Nor is a
computation that makes more bytes than it reads (``unfold``, im2col of a convolution): eager
backward recomputes it from inputs that are kept anyway rather than keep it from forward to
backward, and merging would keep it, raising the peak.
"""

from __future__ import annotations

from typing import Any

from ember.jit.ir import Effect, Eqn, Graph, Var, sub_graphs


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """Replaces repeated computations by the first one's outputs (inside each sub-graph of a
    ``cond`` too, on its own: a branch runs only when taken, so nothing moves across).

    Example:
        >>> g = eliminate_common_subexpressions(g)   # x.t() computed twice becomes once
    """
    seen: dict[tuple, list[Var]] = {}
    rename: dict[Var, Var] = {}
    kept = []
    written = _effect_written(graph.eqns)
    for eqn in graph.eqns:
        eqn.inputs = [rename.get(v, v) for v in eqn.inputs]
        for sub in sub_graphs(eqn):
            eliminate_common_subexpressions(sub)
        if not eqn.prim.pure or _expands(eqn) or any(v in written for v in eqn.outputs):
            kept.append(eqn)
            continue
        key = (id(eqn.prim), tuple(v.id for v in eqn.inputs), _params_key(eqn.params))
        first = seen.get(key)
        if first is None:
            seen[key] = eqn.outputs
            kept.append(eqn)
        else:
            rename.update(zip(eqn.outputs, first))
    graph.eqns = kept
    rename_ends(graph, rename)
    return graph


def _effect_written(eqns: list[Eqn]) -> set[Var]:
    """The variables whose arrays an effect may write in place (its inputs: an optimizer
    step's gradients, zeroed by ``zero_grad(set_to_none=False)``), and those they view: one
    merged with an equal value (``w.grad.copy_(w)`` and ``s.copy_(w)``) would change too."""
    made = {v: e for e in eqns for v in e.outputs}
    todo = [v for e in eqns if isinstance(e.prim, Effect) for v in e.inputs]
    written: set[Var] = set()
    while todo:
        v = todo.pop()
        if v not in written:
            written.add(v)
            producer = made.get(v)
            if producer is not None and getattr(producer.prim, "view", False):
                todo.extend(producer.inputs)
    return written


def _expands(eqn: Eqn) -> bool:
    if eqn.prim.view:
        return False
    return sum(v.nbytes for v in eqn.outputs) > sum(v.nbytes for v in set(eqn.inputs))


def rename_ends(graph: Graph, rename: dict[Var, Var]) -> None:
    """Points the graph's outputs, writes and grads (its state's and its arguments') at
    renamed variables."""
    if not rename:
        return
    graph.outputs = [rename.get(v, v) if v is not None else None for v in graph.outputs]
    graph.writes = [(t, rename.get(v, v)) for t, v in graph.writes]
    graph.grads = [(t, rename.get(v, v) if v is not None else None) for t, v in graph.grads]
    graph.arg_writes = [(i, rename.get(v, v)) for i, v in graph.arg_writes]
    graph.arg_grads = [(i, rename.get(v, v) if v is not None else None)
                       for i, v in graph.arg_grads]


def _params_key(params: dict[str, Any]) -> tuple:
    return tuple((k, _value_key(v)) for k, v in params.items())


def _value_key(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return (type(value), tuple(_value_key(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    if isinstance(value, float) and value != value:  # NaN != NaN, yet the same param
        return ("nan",)
    return (type(value), value)
