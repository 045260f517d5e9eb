"""Liveness: after which equation each variable is read for the last time."""

from __future__ import annotations

from ember.jit.ir import Graph, Var


def last_uses(graph: Graph) -> dict[int, list[Var]]:
    """Maps an equation's index to the variables that die there: made or read by it, not read
    later, and not one of the graph's ends (outputs, writes, grads). State and constants never
    die: the world holds them."""
    keep = graph.live_roots()
    seen: set[Var] = set()
    dies: dict[int, list[Var]] = {}
    for i in range(len(graph.eqns) - 1, -1, -1):
        eqn = graph.eqns[i]
        dead = []
        written = () if eqn.out is None else (eqn.out,)  # a buffer it reuses dies after it
        for v in (*eqn.inputs, *written, *eqn.outputs):
            if v in seen or v in keep or v.kind in ("state", "const"):
                continue
            seen.add(v)
            dead.append(v)
        if dead:
            dies[i] = dead
    return dies
