"""Constant folding: equations whose inputs are all constants are computed once, at compile
time, unless the result is much larger than what it is made from (a broadcast of a scalar
stays a cheap equation instead of a big constant). Impure primitives (``prim.pure`` False:
sampling, collectives) and effects are never folded."""

from __future__ import annotations

import numpy as np

from ember.jit.ir import Graph

_SMALL = 1 << 20  # bytes: results up to this size are always worth keeping


def fold_constants(graph: Graph) -> Graph:
    """Evaluates constant equations now; their outputs become constants of the graph.

    Example:
        >>> g = fold_constants(g)   # ember.tensor(2.0) * 3 inside the function becomes 6.0
    """
    xp = np  # (constants are host arrays while the CPU is the only backend)
    kept = []
    for eqn in graph.eqns:
        if not eqn.prim.pure or not eqn.inputs or \
                not all(v.kind == "const" for v in eqn.inputs):
            kept.append(eqn)
            continue
        arrays = [graph.consts[v] for v in eqn.inputs]
        out = eqn.prim.forward(xp, *arrays, **eqn.params)
        outs = out if eqn.prim.nout > 1 else (out,)
        limit = max(_SMALL, sum(a.nbytes for a in arrays))
        if sum(xp.asarray(o).nbytes for o in outs) > limit:
            kept.append(eqn)
            continue
        for var, value in zip(eqn.outputs, outs):
            var.kind = "const"
            graph.consts[var] = xp.asarray(value)
    graph.eqns = kept
    return graph
