"""Early updates: an elementwise optimizer's step, traced as one effect over every parameter
and its gradient after the whole backward pass, is split so that a parameter whose gradient
is made before the step's memory peaks is updated as soon as that gradient is made and its
old value read for the last time. The gradient then dies there, before the peak (resnet18's
compiled step: the last layers' weight gradients, 32 MiB, were alive at its peak). The other
parameters step together where the whole step stood: an update in the middle of the
backward pass costs time (the optimizer's state streamed through the caches between the
backward's products), and theirs would lower no peak. Each part updates its parameters
exactly as the whole step would. Small gradients (biases, norms' weights) step with the next
part that frees much memory, rather than in parts of their own.

What a part writes is its parameters' arrays and their optimizer state's; it runs after every
read of a variable that may share that memory (found by the arrays themselves, at trace time:
a tied weight's transpose, an optimizer's buffer the step reads), and only within the last
backward pass: after every other equation and effect before the step, so that an error in
the forward pass (an index out of range) leaves every parameter as it was, as eager's does.
The first part checks that every parameter can be updated before any moves.

The step stays whole when a parameter's input is not its state (an in-place op before the
step made a new value), when parameters share memory (eager steps them in its order), when a
gradient may share memory a part writes, or when something after the step reads such
memory. Arguments change from call to call: a call whose arguments share memory a part
writes runs the plain function (``Graph.split_writes``).
"""

from __future__ import annotations

from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.kernels import may_share
from ember.jit.passes.memory import live_bytes

SMALL = 64 << 10  # bytes of gradients worth a part of their own (a part: ~15 µs of Python)


def update_early(graph: Graph) -> Graph:
    """Splits each splittable step effect into parts placed where their inputs are final.

    Example:
        >>> g = update_early(g)
        >>> print(g)  # ... v61 = matmul(v58, v60)  v62, v63 = SGD.step(v3, v61) ...
    """
    for eqn in [e for e in graph.eqns if isinstance(e.prim, Effect) and e.prim.split]:
        graph.eqns = _split(graph, eqn)
    return graph


def _split(graph: Graph, step: Eqn) -> list[Eqn]:
    """The graph's equations with ``step`` replaced by its parts, each after the last
    equation it waits for; unchanged where the step must stay whole."""
    eqns = graph.eqns
    at = next(i for i, e in enumerate(eqns) if e is step)
    n = step.prim.items
    params, grads = step.inputs[:n], step.inputs[n:]
    if len(set(step.inputs)) != 2 * n or any(p.kind != "state" for p in params):
        return eqns
    written = _written(graph, step)
    if written is None or any(written[p] != {k} for k, p in enumerate(params)):
        return eqns  # (parameters sharing memory: eager steps them in its order)
    seen_as = may_share(eqns[:at], written)  # var -> the items whose memory it may share
    if any(seen_as.get(g) for g in grads) or \
            any(seen_as.get(v) for e in eqns[at + 1:] for v in e.inputs):
        return eqns
    after = _grouped(_ready(graph, at, grads, seen_as), grads)
    if len(after) <= 1:  # (no item: the step updates no parameter with a gradient)
        return eqns
    graph.split_writes.append((n, step.prim.split[1]))
    first = min(after)
    out = [_part(step, after[-1], True)] if -1 in after else []
    for i, e in enumerate(eqns):
        if e is not step:
            out.append(e)
        if i in after:
            out.append(_part(step, after[i], i == first))
    return out


def _ready(graph: Graph, at: int, grads: list[Var], seen_as: dict[Var, set[int]]) -> list[int]:
    """For each item of the step at ``at``, the equation it must follow: its gradient's, the
    last read of memory it writes, the forward's end and any effect; where the step stood
    when that is not before the step's memory peak."""
    eqns = graph.eqns[:at]
    made = {v: i for i, e in enumerate(eqns) for v in e.outputs}
    barrier = max((i for i, e in enumerate(eqns)
                   if not _in_backward(e) or isinstance(e.prim, Effect)), default=-1)
    ready = [max(made.get(g, -1), barrier) for g in grads]
    for i, e in enumerate(eqns):
        for v in e.inputs:
            for k in seen_as.get(v, ()):
                ready[k] = max(ready[k], i)
    live = live_bytes(graph)
    peak = live.index(max(live[:at], default=0))
    return [i if i < peak else at - 1 for i in ready]  # (the others gain nothing early)


def _grouped(ready: list[int], grads: list[Var]) -> dict[int, list[int]]:
    """Equation index -> the items that step after it: those ready there, and the small ones
    ready before that waited for a part that frees more (or for the last)."""
    ready_at: dict[int, list[int]] = {}
    for k, i in enumerate(ready):
        ready_at.setdefault(i, []).append(k)
    after: dict[int, list[int]] = {}
    waiting: list[int] = []
    for i in sorted(ready_at):
        waiting += ready_at[i]
        if sum(grads[k].nbytes for k in waiting) >= SMALL:
            after[i], waiting = waiting, []
    if waiting:
        after[max(ready_at)] = waiting
    return after


def _in_backward(eqn: Eqn) -> bool:
    """Whether ``eqn`` came from a backward pass (a rule's, or its gradient accumulation)."""
    return eqn.source is not None and eqn.source.what.startswith("backward")


def _written(graph: Graph, step: Eqn) -> dict[Var, set[int]] | None:
    """The state variables whose arrays may share memory that item ``k`` of ``step`` writes
    (its parameter's, and its optimizer state's), each with those items; None where a state
    array's library cannot tell (the step then stays whole)."""
    _, writes = step.prim.split
    n = step.prim.items
    arrays = [writes(k) for k in range(n)]
    found: dict[Var, set[int]] = {p: {k} for k, p in enumerate(step.inputs[:n])}
    for ref in graph.state:
        tensor = ref.tensor.grad if ref.grad else ref.tensor
        if tensor is None:
            continue
        share = getattr(tensor._device.xp, "may_share_memory", None)
        if share is None:
            return None
        for k in range(n):
            if any(share(tensor._data, a) for a in arrays[k]):
                found.setdefault(ref.var, set()).add(k)
    return found


def _part(step: Eqn, ks: list[int], first: bool) -> Eqn:
    """The equation of ``step``'s items ``ks`` alone (``first``: the first part to run)."""
    n = step.prim.items
    picked = ks + [n + k for k in ks]
    part, _ = step.prim.split
    return Eqn(Effect(step.prim.name, part(ks, first)), [step.inputs[j] for j in picked],
               {}, [step.outputs[j] for j in picked], step.source)
