"""Tensors the exported call makes for itself. A module built inside the function
(``nn.Linear(4, 3)(x)``) makes its parameters and fills them in place: as
``torch.onnx.export`` does, such a write becomes a constant of the graph. A tensor the call
makes, writes and keeps (a buffer registered lazily, a tensor in a global, a closure's
module, a container, an attribute) is the model's state from then on, and its write is
refused. Liveness decides which, not the places the model might keep it: once the call has
returned, a collection runs, and a tensor on memory made in the call is local only when
nothing but the trace references it (an export-time cost only)."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType, FunctionType, GeneratorType
from typing import Any

from ember.export.errors import ExportError
from ember.jit.codegen import Generated
from ember.jit.ir import Eqn, Graph, Var
from ember.nn import (
    register_module_buffer_registration_hook,
    register_module_parameter_registration_hook,
)
from ember.ops.random import Sample
from ember.tensor import Tensor, add_wrap_hook, remove_wrap_hook
from ember.version_counter import VersionCounter, birth_mark

_SCAN = threading.Lock()  # (a scan of every tensor holds them all: one at a time)


@dataclass
class Made:
    """What one traced call made and wrote: the tensors on new memory written in place and
    alive after it (``written``, filled on exit), and the memory of the parameters and
    buffers a module registered in this thread while it ran (``owned``, ids of counters)."""

    written: list[Tensor] = field(default_factory=list)
    owned: set[int] = field(default_factory=set)


@contextmanager
def made_in() -> Iterator[Made]:
    """The :class:`Made` of the block: memory this thread makes in it (another thread's
    tensors, made meanwhile, are not this block's).

    Example:
        >>> with made_in() as made:
        ...     y = model(x)
    """
    made, mark = Made(), birth_mark()
    seen: dict[int, VersionCounter] = {}
    thread = threading.get_ident()

    def wrapped(t: Tensor) -> None:
        if threading.get_ident() == thread:
            seen[id(t._vc)] = t._vc

    def registered(module: Any, name: str, value: Any) -> None:
        if isinstance(value, Tensor) and threading.get_ident() == thread:
            made.owned.add(id(value._vc))

    hooks = [register_module_parameter_registration_hook(registered),
             register_module_buffer_registration_hook(registered)]
    add_wrap_hook(wrapped)
    try:
        yield made
    finally:
        remove_wrap_hook(wrapped)
        for hook in hooks:
            hook.remove()
        fresh = {key for key, vc in seen.items() if vc.value > 0 and vc.born > mark}
        if fresh:  # (else nothing to look for: no collection, no scan)
            with _SCAN:
                gc.collect()
                made.written.extend(t for t in _live_tensors() if id(t._vc) in fresh)
        made.owned &= {id(t._vc) for t in made.written}
        seen.clear()


def fold_local_writes(graph: Graph, made: Made, local: set[int], who: str) -> None:
    """Each write into a tensor on memory the call made and nothing keeps (``local``), whose
    new value depends only on constants, draws and that tensor's own starting value, and whose
    starting value nothing else reads: the new value becomes a constant (the tensor's value
    now), the write and the equations only it needed are dropped, and so is the tensor's
    state. A random draw folds only into the parameters and buffers of a module built in the
    call (its initial weights); into another tensor it would be per-call noise frozen, which
    is refused. Other writes stay (refused by the caller)."""
    producer = {v: e for e in graph.eqns for v in e.outputs}
    for tensor, final in list(graph.writes):
        if id(getattr(tensor, "_vc", None)) not in local or \
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
        if draws and id(tensor._vc) not in made.owned:
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


def local_memory(made: Made, graph: Graph) -> set[int]:
    """The counters (ids) of the memory in ``made.written`` that nothing but the trace (its
    graph's state and writes, its generated code's globals) references, with no reference
    the collector cannot list (a NumPy object array's): every other is state the model
    keeps. One scan of the heap for all of them."""
    with _SCAN:  # (no other export's list of every tensor exists meanwhile)
        if not made.written:
            return set()
        ours = {id(made.written), *map(id, graph.state), *map(id, graph.writes),
                *(id(t._view) for t in made.written if t._view is not None)}
        seen = dict.fromkeys(map(id, made.written), 0)
        kept: set[int] = set()  # (tensors something else references)
        dicts: list[tuple[dict, list[int]]] = []
        for r in gc.get_referrers(*made.written):
            hits = [id(o) for o in gc.get_referents(r) if id(o) in seen]
            for key in hits:
                seen[key] += 1
            if isinstance(r, dict):
                dicts.append((r, hits))
            elif id(r) not in ours and not _this_module(r):
                kept.update(hits)
        jit = _jit_globals([d for d, _ in dicts])
        kept.update(key for d, hits in dicts if id(d) not in jit for key in hits)
        kept.update(id(t) for t in made.written if sys.getrefcount(t) - seen[id(t)] != _UNSEEN)
        return {id(t._vc) for t in made.written} - {id(t._vc) for t in made.written
                                                      if id(t) in kept}


_UNSEEN = 2  # (getrefcount's argument and the comprehension's ``t``)


def _this_module(r: Any) -> bool:
    """Whether ``r`` is a frame or generator of this module's (which holds a tensor it checks)."""
    code = getattr(r, "gi_code", None) or getattr(r, "f_code", None)
    return isinstance(r, FrameType | GeneratorType) and code.co_filename == __file__


def _jit_globals(dicts: list[dict]) -> set[int]:
    """The ids of those ``dicts`` that are the globals of code ``ember.jit`` generated (its
    constants)."""
    found = set()
    for o in gc.get_referrers(*dicts) if dicts else ():
        if isinstance(o, Generated):
            found.add(id(o.globals))
        elif isinstance(o, FunctionType) and o.__code__.co_filename.startswith("<ember.jit "):
            found.add(id(o.__globals__))
    return found & set(map(id, dicts))


def _live_tensors() -> list[Tensor]:
    """Every tensor the process holds now, but one another thread is still making (no
    version counter yet)."""
    return [o for o in gc.get_objects()
            if issubclass(type(o), Tensor) and hasattr(o, "_vc")]  # (not a proxy)


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
    value that is read). A draw nothing reads goes too (an earlier fill of the tensor, which
    a later one overwrote)."""
    removable = {id(e) for e in chain}
    live = {v for t, v in graph.writes if t is not tensor}
    live.update(v for v in graph.outputs if v is not None)
    live.update(v for _, v in graph.arg_writes)
    live.update(v for _, v in graph.grads if v is not None)
    live.update(graph.cached)
    kept = []
    for eqn in reversed(graph.eqns):
        if (id(eqn) in removable or isinstance(eqn.prim, Sample)) and \
                not any(v in live and v is not final for v in eqn.outputs):
            continue
        if final in eqn.outputs:
            return None
        kept.append(eqn)
        live.update(eqn.inputs)
    kept.reverse()
    return kept
