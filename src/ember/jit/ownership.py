"""Which outputs of a compiled call own their memory, as eager's outputs do (a constant the
graph keeps, an argument's or a state tensor's memory is copied out; a view of an earlier
output may share it): the helpers :mod:`ember.jit.compiled` runs on each call's outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember.jit.ir import Graph
from ember.jit.kernels import makes_fresh, owner
from ember.tensor import Tensor, _wrap

if TYPE_CHECKING:
    from ember.jit.compiled import Entry


def owned(entry: Entry, arrays: list, tensors: list[Tensor]) -> list:
    """The output arrays of a call, each owning its memory as eager's outputs do: one that is
    a constant the graph keeps for every call, an argument's or a state tensor's memory (or
    its ``.grad``'s), or an earlier output's (the passes made two equal outputs one) is
    copied, so that writing into it changes nothing else; one that shared an earlier
    output's when traced (a view of it) may share it."""
    return [a for a, _ in _owned(entry, arrays, tensors)]


def wrap_outputs(entry: Entry, arrays: list, tensors: list[Tensor], device: Any) -> list[Tensor]:
    """The output tensors of a call (``None`` arrays left out), each owning its memory as
    :func:`owned` says; one kept sharing an earlier output's memory (a view of it) shares its
    version counter too."""
    made: list = []
    for a, j in _owned(entry, arrays, tensors):
        made.append(None if a is None else _wrap(a, device, vc=None if j is None else
                                                 made[j]._vc))
    return [t for t in made if t is not None]


def _owned(entry: Entry, arrays: list, tensors: list[Tensor]) -> list[tuple[Any, int | None]]:
    """:func:`owned`'s arrays, each with the position of the earlier output whose memory it
    keeps sharing (else None)."""
    if entry.fresh_outputs is None:
        entry.const_owners = {owner(a) for a in entry.graph.consts.values()}
        entry.fresh_outputs = _fresh(entry.graph, entry.roots)
    shared = entry.shared or {}
    if entry.fresh_outputs and not shared:  # (with views among them: the loop below)
        return [(a, None) for a in arrays]
    state = [ref.tensor for ref in entry.graph.state]
    held = {*entry.const_owners, *(owner(t._data) for t in [*tensors, *state]),
            *(owner(t._grad._data) for t in [*tensors, *state] if t._grad is not None)}
    out: list = []
    for i, a in enumerate(arrays):
        j = None
        if a is not None:
            j = shared.get(i)
            if owner(a) not in held or i in entry.grad_views:
                j = None
            elif j is None or out[j][0] is None or owner(out[j][0]) != owner(a):
                a, j = a.copy(), None
            held.add(owner(a))
        out.append((a, j))
    return out


def stored_apart(writes: list, values: Any, tensors: list[Tensor]) -> list[tuple[int, Any]]:
    """The arguments' new values (``writes``: the graph's ``arg_writes``), each copied where
    it is the memory of another written argument (``z.copy_(x); x.add_(1)``: z's new value
    is x's array, which x's own write would change first)."""
    pairs = [(i, a) for (i, _), a in zip(writes, values)]
    if len(pairs) < 2:
        return pairs
    memory = {owner(tensors[i]._data): i for i, _ in pairs}
    return [(i, a.copy() if memory.get(owner(a), i) != i else a) for i, a in pairs]


def shared_outputs(outputs: list) -> dict[int, int]:
    """Which traced outputs share the memory of an earlier one, not being that tensor (a view
    of it, as eager made them): position -> the earlier position."""
    seen: dict[int, int] = {}
    shared = {}
    for i, t in enumerate(outputs):
        if isinstance(t, Tensor):
            j = seen.setdefault(owner(t._data), i)
            if j != i and outputs[j] is not t:
                shared[i] = j
    return shared


def note_grad_outputs(entry: Entry, joint: Any, plan: Any, inputs: list[Tensor],
                      outputs: list) -> None:
    """Notes on ``entry`` (at the trace) the traced outputs that are a ``.grad`` of an
    argument, a state tensor or one the graph differentiates (each call returns that .grad
    itself), and those that are views of one (``w.grad[1:]``: they keep sharing its memory, as
    eager's; a copy of a .grad is copied); with a plan or joint, the roots they are made from.
    Without either, which outputs share an earlier one's memory (:func:`shared_outputs`)."""
    graph = entry.graph
    holders: dict = {id(t._grad): t for t in [*(t for t, _ in graph.grads), *(
        ref.tensor for ref in graph.state)] if t._grad is not None}
    holders.update((id(t._grad), k) for k, t in enumerate(inputs) if t._grad is not None)
    grads = [(t if type(t) is not int else inputs[t])._grad for t in holders.values()]
    memory = {owner(g._data) for g in grads}
    views = frozenset(i for i, t in enumerate(outputs) if isinstance(t, Tensor) and
                      owner(t._data) in memory and not any(t is g for g in grads))
    made = joint.make if joint is not None else plan.make if plan is not None else None
    if made is not None:  # (the roots such views are made from share the .grad's memory)
        views = frozenset(made[k][1] for k in views if made[k][0] == "out")
    if joint is not None:
        joint.grad_roots = views
    elif plan is not None:
        entry.grad_views = views
    else:
        entry.shared, entry.grad_views = shared_outputs(outputs), views
    entry.returned_grads = tuple((i, holders[id(x)]) for i, x in enumerate(
        x for x in outputs if isinstance(x, Tensor)) if id(x) in holders)


def _fresh(graph: Graph, roots: list[int] | None) -> bool:
    """Whether the graph's outputs (those at ``roots``, or all) are surely new arrays, each its
    own: each made by an equation that allocates or writes into a buffer it is given, and no
    two the same variable."""
    made = {eqn.outputs[0] for eqn in graph.eqns if eqn.outputs and makes_fresh(eqn)}
    outs = [v for v in (graph.outputs if roots is None else [graph.outputs[p] for p in roots])
            if v is not None]
    return len(set(outs)) == len(outs) and all(v in made for v in outs)
