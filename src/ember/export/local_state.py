"""Tensors the exported call makes and then writes in place are not state. A module built
inside the function (``nn.Linear(4, 3)(x)``, a ``GroupNorm``) makes its parameters and fills
them in place (``uniform_``, ``ones_``): the tracer sees leaves that require grad, so state,
and a write into them. As ``torch.onnx.export`` does, such a tensor's value after the
initialisation becomes a constant of the graph (a random draw is the one the trace made),
when that value is computed from nothing the call is given (no input, no other state). Only
this trace's tensors count (:class:`Made`, per block), not those left where the model holds
them, and a random draw only into a module built in the call."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ember.export.errors import ExportError
from ember.jit.ir import Eqn, Graph, Var
from ember.jit.reached_values import held_tensors
from ember.nn import (
    Module,
    register_module_buffer_registration_hook,
    register_module_parameter_registration_hook,
)
from ember.ops.random import Sample
from ember.tensor import Tensor, counter_factory, set_counter_factory
from ember.version_counter import VersionCounter


@dataclass
class Made:
    """What one traced call made: the version counters of its new memory (``counters``) and
    of the parameters and buffers a module registered while it ran (``owned``)."""

    counters: set[VersionCounter] = field(default_factory=set)
    owned: set[VersionCounter] = field(default_factory=set)


@contextmanager
def marking_new_memory() -> Iterator[Made]:
    """The memory this thread makes inside the block (a view or a ``Parameter`` shares its
    memory's counter), and the state modules register in it, recorded in the :class:`Made`
    it yields: nothing stays on the tensors, so a tensor made in an earlier export is not
    this one's. An ``inference_mode`` opened inside ends the marking (more writes refused).

    Example:
        >>> with marking_new_memory() as made:
        ...     y = model(x)
    """
    made = Made()
    before = counter_factory()
    thread = threading.get_ident()

    def marking() -> VersionCounter:
        vc = before()
        if threading.get_ident() == thread:
            made.counters.add(vc)
        return vc

    def registered(module: Any, name: str, value: Any) -> None:
        if isinstance(value, Tensor) and threading.get_ident() == thread:
            made.owned.add(value._vc)

    hooks = [register_module_parameter_registration_hook(registered),
             register_module_buffer_registration_hook(registered)]
    set_counter_factory(marking)
    try:
        yield made
    finally:
        if counter_factory() is marking:  # (else another thread's inference_mode replaced it)
            set_counter_factory(before)
        for hook in hooks:
            hook.remove()


def held_counters(model: Any) -> set[VersionCounter]:
    """The version counters of the tensors ``model`` holds: a module's (and its
    submodules') parameters, buffers and tensor attributes, a function's closure cells and
    the globals it names. A
    tensor the call made and left there is the model's state, not a local."""
    root = getattr(model, "__self__", model)
    owners = list(root.modules()) if isinstance(root, Module) else []
    values = [v for m in owners for members in (m._parameters, m._buffers, vars(m))
              for v in members.values()]
    for cell in getattr(model, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # (an empty cell)
            continue
    code, names = getattr(model, "__code__", None), getattr(model, "__globals__", {})
    values += [names[n] for n in (code.co_names if code else ()) if n in names]
    return {t._vc for v in values for _, t in held_tensors(v)}


def fold_local_writes(graph: Graph, made: Made, held: set[VersionCounter], who: str) -> None:
    """Each write into a tensor the call made (``made``) and left nowhere the model holds
    (``held``), whose new value depends only on constants, draws and that tensor's own
    starting value, and whose starting value nothing else reads: the new value becomes a
    constant (the tensor's value now), the write and the equations only it needed are
    dropped, and so is the tensor's state. A random draw folds only into the parameters and
    buffers of a module built in the call (its initial weights); into another tensor it would
    be per-call noise frozen, which is refused. Other writes stay (refused by the caller)."""
    producer = {v: e for e in graph.eqns for v in e.outputs}
    for tensor, final in list(graph.writes):
        vc = getattr(tensor, "_vc", None)
        if vc not in made.counters or vc in held or \
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
        draws = sorted({e.prim.name for e in chain if isinstance(e.prim, Sample)})
        if draws and vc not in made.owned:
            raise ExportError(
                f"{who}: the model fills a tensor it makes ({graph.label(tensor)}, "
                f"{tuple(tensor.shape)}) with a random draw ({', '.join(draws)}) in place; "
                "the exported graph would hold this trace's draw as one fixed value, not a "
                "new draw per call (an out-of-place draw such as ember.randn is refused as "
                "well). Hint: pass the noise in as an input, or make the tensor a parameter "
                "or buffer of a module built in the call when it is an initial weight")
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
