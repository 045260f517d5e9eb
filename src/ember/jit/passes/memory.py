"""Memory planning: an equation that can write into a buffer it is given (a kernel, an
elementwise op, a matmul) writes into the buffer of a variable of the same shape and dtype
that dies with it (an elementwise operand, overwritten in place: the step's peak drops by one
buffer) or died shortly before it, instead of allocating (NumPy then neither frees nor faults
in fresh pages; the buffer is warm in cache). A primitive that copies its first input to
change some elements (``Primitive.writes_input``: ``index_put``, a write through a view's
``view_scatter``) changes them in that buffer instead where it dies there.

A buffer is given only when nothing can still see it: it was made fresh by such an equation
(never a state, input or constant), every variable that may alias it (views, and results of
primitives that may return their input) is dead, and none of them escapes (graph outputs,
writes, gradients, an effect's inputs). The dead variable's ``del`` moves after the equation
that reuses its buffer, and a buffer is only held that long where the step's memory stays
below its peak without reuse. Parameters are already updated in place by the optimizer's effect.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.kernels import into_kernel, makes_fresh, writes_into
from ember.jit.passes.liveness import last_uses

WINDOW = 16  # equations a dead buffer may wait for a taker


def plan_memory(graph: Graph) -> Graph:
    """Sets ``eqn.out`` (and a kernel that writes there) where a dead buffer fits.

    Example:
        >>> g = plan_memory(g)
        >>> print(g)      # ... v48: f32[32,256] = fused_mul_add(v43, v47, out=v40) ...
    """
    # (the hoisted equations run only when their cache is stale: their buffers are neither
    # given to the others nor given any)
    fresh = {id(e) for e in graph.eqns[graph.hoisted:] if writes_into(e)}
    holds = _holders(graph)
    death, pinned = _deaths(graph, holds)
    pinned.update(v for e in graph.eqns[:graph.hoisted] for v in e.outputs)
    freed: dict[int, list[Var]] = {}  # index after which a buffer is free -> its base vars
    for base, at in death.items():
        if base not in pinned:
            freed.setdefault(at, []).append(base)
    read_last = {v: i for i, eqn in enumerate(graph.eqns) for v in (*eqn.outputs, *eqn.inputs)}
    made = {v: eqn for eqn in graph.eqns for v in eqn.outputs}
    live = live_bytes(graph)
    peak = max(live, default=0)
    pool: dict[tuple, list[tuple[int, Var]]] = {}
    for i, eqn in enumerate(graph.eqns):
        for base in freed.get(i - 1, ()):
            pool.setdefault((base.shape, base.dtype), []).append((i - 1, base))
        if getattr(eqn.prim, "writes_input", False) and i >= graph.hoisted:
            base = eqn.inputs[0]
            if holds.get(base) == {base} and death.get(base) == i and base not in pinned:
                graph.eqns[i] = Eqn(eqn.prim, list(eqn.inputs),
                                    {**eqn.params, "in_place": True}, eqn.outputs, eqn.source)
                freed[i].remove(base)  # (it lives on as the result)
                live[i] -= base.nbytes
            continue
        if id(eqn) not in fresh or not eqn.outputs[0].shape:
            continue
        out = eqn.outputs[0]
        donor = _dying_operand(eqn, i, death, pinned, holds, made)
        if donor is not None:  # its buffer lives on as the result's: not free, not twice
            freed[i].remove(next(iter(holds[donor])))
            live[i] -= out.nbytes
        else:
            donor = _waiting_donor(pool.get((out.shape, out.dtype), []), read_last, live, i,
                                   peak, out.nbytes)
        if donor is not None:
            kernel = into_kernel(eqn)  # keeps ``eqn`` as what it computes (for save)
            graph.eqns[i] = Eqn(kernel, list(kernel.inputs), {}, eqn.outputs, eqn.source,
                                out=donor)
    return graph


def _dying_operand(eqn: Eqn, i: int, death: dict[Var, int], pinned: set[Var],
                   holds: dict[Var, set[Var]], made: dict[Var, Eqn]) -> Var | None:
    """An operand of an elementwise ``eqn`` of the output's shape and dtype whose buffer dies
    with it (its own, or one it sees whole through reshapes and permutes: a linear layer's
    matmul result) and that no other operand views: the result overwrites it in place (the
    kernel reads it no more once it writes ``out``, and checks that its layout is eager's;
    BLAS never does), so the step never holds both."""
    out = eqn.outputs[0]
    for v in eqn.inputs:
        base = _whole_view_of(v, holds, made)
        seen_elsewhere = any(base in holds.get(u, ()) for u in eqn.inputs if u is not v)
        if base is not None and death.get(base) == i and base not in pinned and \
                not seen_elsewhere and (v.shape, v.dtype) == (out.shape, out.dtype) and \
                into_kernel(eqn).overwrites_safely(v):
            return v
    return None


def _whole_view_of(v: Var, holds: dict[Var, set[Var]], made: dict[Var, Eqn]) -> Var | None:
    """The fresh buffer ``v`` is, or sees whole and writable through a chain of reshapes and
    permutes (an expand or a window view may be read-only); else None."""
    bases = holds.get(v, set())
    if len(bases) != 1:
        return None
    base = next(iter(bases))
    while v is not base:
        eqn = made.get(v)
        if eqn is None or eqn.prim.name not in ("reshape", "permute"):
            return None
        v = eqn.inputs[0]
    return base


def _waiting_donor(waiting: list[tuple[int, Var]], read_last: dict[Var, int], live: list[int],
                   i: int, peak: int, size: int) -> Var | None:
    """The most recently freed buffer that fits and may wait for equation ``i`` (within
    :data:`WINDOW` equations, without lifting the peak); taken from ``waiting``."""
    for k in range(len(waiting) - 1, -1, -1):  # the most recently freed first: warmest
        donor = waiting[k][1]
        at = read_last[donor]  # the donor's name stays bound from here to its taker
        if i - at > WINDOW or max(live[at + 1:i], default=0) + size > peak:
            continue
        del waiting[k]
        for j in range(at + 1, i):
            live[j] += size
        return donor
    return None


def live_bytes(graph: Graph) -> list[int]:
    """Bytes of equation results alive while each equation runs, before any reuse: a held
    dead buffer must not lift the step's peak above this one's."""
    n = len(graph.eqns)
    end = {v: i for i, dead in last_uses(graph).items() for v in dead}
    delta = [0] * (n + 1)
    for i, eqn in enumerate(graph.eqns):
        if isinstance(eqn.prim, Effect) or eqn.prim.view:
            continue
        for v in eqn.outputs:
            delta[i] += v.nbytes
            delta[end.get(v, n - 1) + 1] -= v.nbytes
    live, now = [], 0
    for d in delta[:n]:
        now += d
        live.append(now)
    return live


def _holders(graph: Graph) -> dict[Var, set[Var]]:
    """For each variable, the fresh buffers (named by the variable that made them) it may
    reference: its own if its equation surely allocates it (an allocating primitive's first
    output), else any its inputs reference."""
    holds: dict[Var, set[Var]] = {}
    for eqn in graph.eqns:
        if makes_fresh(eqn):
            first, *others = eqn.outputs
            holds[first] = {first}
            holds.update((v, set()) for v in others)  # (no input's view; never given on)
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

