"""Memory planning: an equation that can write into a buffer it is given (a kernel, an
elementwise op, a matmul) writes into the buffer of a variable that died shortly before it,
of the same shape and dtype, instead of allocating (NumPy then neither frees nor faults in
fresh pages; the buffer is warm in cache).

A buffer is given only when nothing can still see it: it was made fresh by such an equation
(never a state, input or constant), every variable that may alias it (views, and results of
primitives that may return their input) is dead, and none of them escapes (graph outputs,
writes, gradients, an effect's inputs). The dead variable's ``del`` moves after the equation
that reuses its buffer. Parameters are already updated in place by the optimizer's effect.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Graph, Var
from ember.jit.kernels import into_kernel, writes_into

WINDOW = 8  # equations a dead buffer waits for a taker: held longer, it could raise the peak


def plan_memory(graph: Graph) -> Graph:
    """Sets ``eqn.out`` (and a kernel that writes there) where a dead buffer fits.

    Example:
        >>> g = plan_memory(g)
        >>> print(g)      # ... v48: f32[32,256] = fused_mul_add(v43, v47, out=v40) ...
    """
    fresh = {id(e) for e in graph.eqns if writes_into(e)}
    holds = _holders(graph, fresh)
    death, pinned = _deaths(graph, holds)
    freed: dict[int, list[Var]] = {}  # index after which a buffer is free -> its base vars
    for base, at in death.items():
        if base not in pinned:
            freed.setdefault(at, []).append(base)
    pool: dict[tuple, list[tuple[int, Var]]] = {}
    for i, eqn in enumerate(graph.eqns):
        for base in freed.get(i - 1, ()):
            pool.setdefault((base.shape, base.dtype), []).append((i - 1, base))
        if id(eqn) not in fresh or not eqn.outputs[0].shape:
            continue
        out = eqn.outputs[0]
        waiting = pool.get((out.shape, out.dtype))
        while waiting and i - waiting[-1][0] > WINDOW:
            waiting.pop()
        if waiting:
            _, donor = waiting.pop()  # the most recently freed: warmest in cache
            eqn.prim, eqn.params, eqn.out = into_kernel(eqn), {}, donor
            eqn.inputs = list(eqn.prim.inputs)
    return graph


def _holders(graph: Graph, fresh: set[int]) -> dict[Var, set[Var]]:
    """For each variable, the fresh buffers (named by the variable that made them) it may
    reference: its own if its equation surely allocates, else any its inputs reference."""
    holds: dict[Var, set[Var]] = {}
    for eqn in graph.eqns:
        if id(eqn) in fresh:
            holds[eqn.outputs[0]] = {eqn.outputs[0]}
            continue
        inherited = set().union(*(holds.get(v, set()) for v in eqn.inputs))
        for v in eqn.outputs:
            holds[v] = inherited
    return holds


def _deaths(graph: Graph, holds: dict[Var, set[Var]]) -> tuple[dict[Var, int], set[Var]]:
    """After which equation each fresh buffer is last read (through any holder), and the
    buffers the world or an effect sees."""
    death: dict[Var, int] = {}
    seen = set(graph.live_roots())
    for i, eqn in enumerate(graph.eqns):
        if isinstance(eqn.prim, Effect):
            seen.update(eqn.inputs)
        for v in (*eqn.inputs, *eqn.outputs):
            for base in holds.get(v, ()):
                death[base] = i
    pinned = set().union(*(holds.get(v, set()) for v in seen))
    return death, pinned

