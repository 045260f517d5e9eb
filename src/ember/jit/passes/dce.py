"""Dead-code elimination: drop equations whose outputs nothing reads, except impure ones
(effects, sampling — dropping a draw would shift the generator's stream — and collectives,
which every rank must run)."""

from __future__ import annotations

from ember.jit.ir import Graph, sub_graphs


def eliminate_dead_code(graph: Graph) -> Graph:
    """Keeps an equation only if an output is read later, or it is an effect; the sub-graphs
    of a kept ``cond`` (its branches) are swept the same way.

    Example:
        >>> g = eliminate_dead_code(g)       # the forward value of an unused branch goes
    """
    live = graph.live_roots()
    kept = []
    for eqn in reversed(graph.eqns):
        if not eqn.prim.pure or any(v in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(eqn.inputs)
            for sub in sub_graphs(eqn):
                eliminate_dead_code(sub)
    kept.reverse()
    graph.eqns = kept
    graph.consts = {v: a for v, a in graph.consts.items() if v in live}
    return graph
