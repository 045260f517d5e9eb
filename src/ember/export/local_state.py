"""Tensors the exported call makes and then writes in place are not state. A module built
inside the function (``nn.Linear(4, 3)(x)``, a ``GroupNorm``) makes its parameters and fills
them in place (``uniform_``, ``ones_``): the tracer sees leaves that require grad, so state,
and a write into them. As ``torch.onnx.export`` does, such a tensor's value after the
initialisation becomes a constant of the graph (a random draw is the one the trace made),
when that value is computed from nothing the call is given (no input, no other state)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ember.jit.ir import Eqn, Graph, Var
from ember.tensor import set_counter_factory
from ember.version_counter import VersionCounter


class _Made(VersionCounter):
    """The version counter of memory made while the exported call runs."""

    __slots__ = ()


@contextmanager
def marking_new_memory() -> Iterator[None]:
    """Tensors on memory made inside the block carry a :class:`_Made` counter (a view or a
    ``Parameter`` shares its memory's). Under ``inference_mode``, which marks memory its own
    way, nothing is marked (every write then stays a write)."""
    if sys.modules["ember.tensor"]._new_counter is not VersionCounter:  # (ember.tensor: a function)
        yield
        return
    set_counter_factory(_Made)
    try:
        yield
    finally:
        set_counter_factory(None)


def fold_local_writes(graph: Graph) -> None:
    """Each write into a tensor the call made, whose new value depends only on
    constants, draws and that tensor's own starting value, and whose starting value nothing
    else reads: the new value becomes a constant (the tensor's value now), the write and the
    equations only it needed are dropped, and so is the tensor's state. Other writes stay
    (refused by the caller)."""
    producer = {v: e for e in graph.eqns for v in e.outputs}
    for tensor, final in list(graph.writes):
        if not isinstance(getattr(tensor, "_vc", None), _Made) or \
                tuple(tensor.shape) != tuple(final.shape):
            continue
        ref = next(r for r in graph.state if r.tensor is tensor)
        chain = _ancestors(final, producer)
        reads = {v for e in chain for v in e.inputs if v not in producer}
        if any(v is not ref.var and v not in graph.consts for v in reads):
            continue  # (computed from an input or other state: a real write)
        kept = _without(graph, chain, final, tensor)
        if kept is None or any(ref.var in e.inputs for e in kept) or \
                any(ref.var is v for v in graph.outputs):
            continue  # (its starting value is read elsewhere: the constant would be wrong)
        graph.eqns = kept
        graph.writes = [(t, v) for t, v in graph.writes if t is not tensor]
        graph.state = [r for r in graph.state if r is not ref]
        final.kind = "const"
        graph.consts[final] = tensor._data.copy()
        live = {v for e in kept for v in e.inputs} | graph.live_roots()
        graph.consts = {v: a for v, a in graph.consts.items() if v in live}
        producer = {v: e for e in graph.eqns for v in e.outputs}


def _ancestors(var: Var, producer: dict[Var, Eqn]) -> list[Eqn]:
    """The equations ``var`` is computed through."""
    seen: dict[int, Eqn] = {}
    todo = [var]
    while todo:
        eqn = producer.get(todo.pop())
        if eqn is not None and id(eqn) not in seen:
            seen[id(eqn)] = eqn
            todo.extend(eqn.inputs)
    return list(seen.values())


def _without(graph: Graph, chain: list[Eqn], final: Var, tensor: Any) -> list[Eqn] | None:
    """The graph's equations with those of ``chain`` that nothing else reads once ``final``
    is a constant and ``tensor``'s write is gone (None: ``final``'s equation makes another
    value that is read)."""
    removable = {id(e) for e in chain}
    live = {v for t, v in graph.writes if t is not tensor}
    live.update(v for v in graph.outputs if v is not None)
    live.update(v for _, v in graph.arg_writes)
    live.update(v for _, v in graph.grads if v is not None)
    live.update(graph.cached)
    kept = []
    for eqn in reversed(graph.eqns):
        if id(eqn) in removable and not any(v in live and v is not final for v in eqn.outputs):
            continue
        if final in eqn.outputs:
            return None
        kept.append(eqn)
        live.update(eqn.inputs)
    kept.reverse()
    return kept
