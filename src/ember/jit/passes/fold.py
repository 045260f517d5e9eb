"""Constant folding: equations whose inputs are all constants are computed once, at compile
time, unless the result is much larger than what it is made from (a broadcast of a scalar
stays a cheap equation instead of a big constant). Impure primitives (``prim.pure`` False:
sampling, collectives) and effects are never folded. A ``cond`` whose predicate is a constant
becomes the equations of the branch it takes (which fold further); the branches of the others
are folded inside."""

from __future__ import annotations

import itertools

import numpy as np

from ember.jit.ir import Eqn, Graph, Var, sub_graphs

_SMALL = 1 << 20  # bytes: results up to this size are always worth keeping


def fold_constants(graph: Graph) -> Graph:
    """Evaluates constant equations now; their outputs become constants of the graph.

    Example:
        >>> g = fold_constants(g)   # ember.tensor(2.0) * 3 inside the function becomes 6.0
    """
    xp = np  # (constants are host arrays while the CPU is the only backend)
    kept = []
    pending = list(graph.eqns)
    ids = itertools.count(graph.unused_id())
    while pending:
        eqn = pending.pop(0)
        for sub in sub_graphs(eqn):
            fold_constants(sub)
        taken = _taken_branch(graph, eqn)
        if taken is not None:
            inlined = _inline(graph, eqn, taken, ids)
            if inlined is not None:
                pending[:0] = inlined
                continue
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


def _taken_branch(graph: Graph, eqn: Eqn) -> Graph | None:
    """The branch a ``cond`` with a constant predicate takes (else None)."""
    if eqn.prim.name != "cond" or eqn.inputs[0].kind != "const":
        return None
    true_graph, false_graph = eqn.params["branches"]
    return true_graph if bool(graph.consts[eqn.inputs[0]]) else false_graph


def _inline(graph: Graph, eqn: Eqn, branch: Graph, ids: itertools.count) -> list[Eqn] | None:
    """The branch's equations over the cond's operands, writing its outputs' variables; None
    when an output is not made by an equation of the branch nor a constant."""
    made = {v for e in branch.eqns for v in e.outputs}
    if not all(v in made or v in branch.consts for v in branch.outputs):
        return None
    rename: dict[Var, Var] = dict(zip(branch.inputs, eqn.inputs[1:]))
    for sub_var, var in zip(branch.outputs, eqn.outputs):
        if sub_var in branch.consts:
            var.kind = "const"
            graph.consts[var] = np.array(branch.consts[sub_var], copy=True)
        else:
            rename[sub_var] = var
    for sub_var, array in branch.consts.items():
        if sub_var not in rename:
            rename[sub_var] = Var(next(ids), sub_var.shape, sub_var.dtype, "const")
            graph.consts[rename[sub_var]] = array

    def outer(v: Var) -> Var:
        if v not in rename:
            rename[v] = Var(next(ids), v.shape, v.dtype, "eqn")
        return rename[v]

    return [Eqn(e.prim, [outer(v) for v in e.inputs], dict(e.params),
                [outer(v) for v in e.outputs], e.source) for e in branch.eqns]
