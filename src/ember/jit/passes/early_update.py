"""Early updates: an elementwise optimizer's step, traced as one effect over every parameter
and its gradient after the whole backward pass, is split so that each parameter is updated as
soon as its gradient is made and its old value read for the last time. Each gradient then
dies at its own update, and the step never holds every gradient at once (resnet18's compiled
step: the last layers' weight gradients, 32 MiB, were alive at its peak). Each part updates
its parameters exactly as the whole step would. Small gradients (biases, norms' weights) step
with the next part that frees much memory, rather than in parts of their own.

A part runs no earlier than the effect before the step (effects keep their order). The step
stays whole when a parameter's input is not its state (an in-place op before the step made a
new value), when a gradient may share a parameter's memory, or when something after the step
reads a parameter's old value.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.kernels import makes_fresh

SMALL = 64 << 10  # bytes of gradients worth a part of their own (a part: ~15 µs of Python)


def update_early(graph: Graph) -> Graph:
    """Splits each splittable step effect into parts placed where their inputs are final.

    Example:
        >>> g = update_early(g)
        >>> print(g)  # ... v61 = matmul(v58, v60)  v62, v63 = SGD.step(v3, v61) ...
    """
    for eqn in [e for e in graph.eqns if isinstance(e.prim, Effect) and e.prim.part]:
        graph.eqns = _split(graph.eqns, eqn, graph.hoisted)
    return graph


def _split(eqns: list[Eqn], step: Eqn, hoisted: int) -> list[Eqn]:
    """``eqns`` with ``step`` replaced by its parts, each after the last equation it waits
    for; ``eqns`` unchanged where it must stay whole."""
    at = next(i for i, e in enumerate(eqns) if e is step)
    n = step.prim.items
    params, grads = step.inputs[:n], step.inputs[n:]
    if len(set(step.inputs)) != 2 * n or any(p.kind != "state" for p in params):
        return eqns
    seen_as = _aliases(eqns[:at], params)  # var -> the parameters whose memory it may be
    if any(seen_as.get(g) for g in grads) or \
            any(seen_as.get(v) for e in eqns[at + 1:] for v in e.inputs):
        return eqns
    made = {v: i for i, e in enumerate(eqns[:at]) for v in e.outputs}
    effects = [i for i, e in enumerate(eqns[:at]) if isinstance(e.prim, Effect)]
    ready = [max(made.get(g, -1), effects[-1] if effects else -1, hoisted - 1) for g in grads]
    index = {p: k for k, p in enumerate(params)}
    for i, e in enumerate(eqns[:at]):  # after the last read of each parameter's old value
        for v in e.inputs:
            for p in seen_as.get(v, ()):
                ready[index[p]] = max(ready[index[p]], i)
    ready_at: dict[int, list[int]] = {}
    for k, i in enumerate(ready):
        ready_at.setdefault(i, []).append(k)
    after: dict[int, list[int]] = {}  # equation index -> the items that step after it
    waiting: list[int] = []  # small gradients wait to step with the next large one
    for i in sorted(ready_at):
        waiting += ready_at[i]
        if sum(grads[k].nbytes for k in waiting) >= SMALL:
            after[i], waiting = waiting, []
    if waiting:
        after[max(ready_at)] = waiting
    if len(after) == 1:
        return eqns
    out = [_part(step, after[-1])] if -1 in after else []
    for i, e in enumerate(eqns):
        if e is not step:
            out.append(e)
        if i in after:
            out.append(_part(step, after[i]))
    return out


def _aliases(eqns: list[Eqn], params: list[Var]) -> dict[Var, set[Var]]:
    """For each variable, the parameters (of ``params``) whose memory it may share: the
    parameter itself, and what a view or any equation that may return its input (not
    surely making new arrays) makes from it."""
    seen_as: dict[Var, set[Var]] = {p: {p} for p in params}
    for e in eqns:
        inherited = set().union(*(seen_as.get(v, set()) for v in e.inputs))
        if inherited and not makes_fresh(e):
            seen_as.update((v, inherited) for v in e.outputs)
    return seen_as


def _part(step: Eqn, ks: list[int]) -> Eqn:
    """The equation of ``step``'s items ``ks`` alone."""
    n = step.prim.items
    picked = ks + [n + k for k in ks]
    return Eqn(Effect(step.prim.name, step.prim.part(ks)), [step.inputs[j] for j in picked],
               {}, [step.outputs[j] for j in picked], step.source)
