"""In-place writes into memory that outlives a traced call. A tensor the function makes can
sit on memory it does not own: ``ember.from_numpy(G)`` (``as_tensor``, ``asarray``,
``frombuffer``, ``from_dlpack``) of an array or buffer it reaches, another tensor's after
``.data =``. Eager moves that memory at every call; a graph would hold the first call's value
as a constant, so such a call runs eagerly (and an export refuses it). Memory is the call's
own when nothing but tensors and the trace references the arrays it lies in once the call
has returned (a NumPy array made in the call, or a tensor's after ``.numpy()``)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any, TypeVar

import numpy as np

from ember.jit.ir import Effect
from ember.jit.kernels import owner as memory_owner
from ember.jit.sources import _at, user_source, warn_user
from ember.tensor import Tensor

T = TypeVar("T")


def note_write(notes: dict, x: Tensor, mark: int, held: bool = False) -> None:
    """``x`` is about to be written in place (``held``: the graph holds its value as a
    constant, which it writes into that memory at each call): noted in ``notes`` (id of its
    array -> the array, shape, dtype, line, ``held``) where it was made in the call (its
    counter is born after ``mark``) on memory that may be another's (the counter is shared)."""
    if x._vc.shared and x._vc.born > mark and id(x._data) not in notes:
        notes[id(x._data)] = (x._data, tuple(x.shape), x.dtype, user_source(), held)


def outside_writes(tracer: Any) -> str | None:
    """Why calls with this key run the plain function, if the trace wrote into memory that
    outlives the call (see :func:`written_outside`). None where it wrote none."""
    found = written_outside(tracer)
    return shared_state(tracer) if found is None else (
        f"runs eagerly: it writes in place into {found}; eager moves that memory at each "
        "call, a graph would hold the first call's value. Hint: make the tensor once, "
        "outside the function (G_t = ember.from_numpy(G)), and use it there, or .clone() it "
        "before writing when the array should stay as it is")


def shared_state(tracer: Any) -> str | None:
    """Why calls with this key run the plain function, if the graph writes a tensor it
    reaches whose memory another one it reaches shares with no view record the trace follows
    (``W.data = F[:3]`` before the call, then ``F.add_(1)``: the graph would read ``W`` as it
    was when the call started). Only tensors on the same memory are compared, at each trace
    (the cache key watches which share memory: :func:`shared_groups`)."""
    graph = tracer.graph
    if not graph.writes:
        return None
    tensors = {id(t): t for t in [*(r.tensor for r in graph.state if not r.grad),
                                  *(t for t, _ in graph.writes)] if not _only_stepped(tracer, t)}
    groups = by_owner(tensors.values())
    written = {id(t) for t, _ in graph.writes}
    for group in groups.values():
        if len(group) < 2 or all(id(t) not in written for t in group):
            continue
        spans = sorted((_span(t._data), i) for i, t in enumerate(group))
        for n, ((_, end), i) in enumerate(spans):  # (only spans that overlap are compared)
            for (start, _), j in spans[n + 1:]:
                if start >= end:
                    break
                a, b = (group[i], group[j]) if id(group[i]) in written else (group[j], group[i])
                if id(a) in written and _root(tracer, a) is not _root(tracer, b) and \
                        overlap(a._data, b._data) and not _moved_together(tracer, a, b):
                    label = tracer.labels.get
                    reason = (f"runs eagerly: it writes {label(id(a), 'a tensor it reaches')} "
                              f"in place, and {label(id(b), 'another tensor it reaches')} "
                              "shares its memory with no view record (as after W.data = "
                              "F[:3], or parameters made views of one vector by "
                              "vector_to_parameters, written other than by one optimizer "
                              "step); the graph would read each as it was "
                              "when the call started. Hint: take the view in the function "
                              "(F[:3]), .clone() one of them, or read the vector outside")
                    warn_user(f"ember.jit: {tracer.graph.name} {reason}")
                    return reason
    return None


_BYTE_BOUNDS = getattr(np.lib, "array_utils", np).byte_bounds  # (NumPy 2's place, or 1's)


def _span(array: Any) -> tuple[int, float]:
    """The first and past-the-last byte addresses of ``array`` (all memory, where the array
    tells none)."""
    try:
        return _BYTE_BOUNDS(array)
    except (AttributeError, TypeError, ValueError):
        return (0, float("inf"))


def _root(tracer: Any, t: Tensor) -> Any:
    """The array of the tensor ``t`` views, as the trace follows it (``t``'s own else)."""
    seen = tracer.view_record(t)
    return (t if seen is None else seen[0])._data


def by_owner(items: Iterable[T], array: Callable[[T], Any] = lambda t: t._data,
             ) -> dict[Any, list[T]]:
    """``items`` (tensors, or what ``array`` takes a tensor's array from) grouped by the
    owner of their memory (:func:`~ember.jit.kernels.owner`), in order: only those of one
    group may :func:`overlap`.

    Example:
        >>> by_owner([W, F, G])  # after W.data = F[:3]
        {<F's owner>: [W, F], <G's owner>: [G]}
    """
    groups: dict[Any, list[T]] = {}
    for item in items:
        groups.setdefault(memory_owner(array(item)), []).append(item)
    return groups


def overlap(a: Any, b: Any) -> bool:
    """Whether the arrays ``a`` and ``b`` may share memory (where that is too hard to tell)."""
    try:
        return bool(np.shares_memory(a, b, max_work=1 << 12))
    except np.exceptions.TooHardError:
        return True


def _moved_together(tracer: Any, a: Tensor, b: Tensor) -> bool:
    """Whether one optimizer step's effect is the graph's only write of both ``a`` and ``b``
    (parameters and the flat vector they are views of, which the effect takes and gives:
    each read of either comes before or after it): each enters it with the value the call
    started with and leaves it with its final one (``tracer.moved_together``)."""
    start = {id(ref.tensor): ref.var for ref in tracer.graph.state if not ref.grad}
    final = {id(t): v for t, v in tracer.graph.writes}
    return any(all(id(t) in vars_ and vars_[id(t)][0] is start.get(id(t)) and
                   vars_[id(t)][1] is final.get(id(t), start.get(id(t))) for t in (a, b))
               for vars_ in tracer.moved_together)


def _only_stepped(tracer: Any, t: Tensor) -> bool:
    """Whether ``t`` is a tensor on stepped parameters' memory that the graph only hands
    through their step effects (a flat vector held where the function reaches it, not read:
    the graph reads nothing of it, as if it were not state)."""
    mine = {v for vars_ in tracer.moved_together for v in vars_.get(id(t), ())}
    graph = tracer.graph
    return bool(mine) and all(v in mine for w, v in graph.writes if w is t) and \
        mine.isdisjoint(graph.outputs) and not any(
            not isinstance(e.prim, Effect) and not mine.isdisjoint(e.inputs) for e in graph.eqns)


def written_outside(tracer: Any) -> str | None:
    """The first noted write (``tracer.outside``) into memory that something besides tensors
    and the trace still references after the call (a global array, a closure's, an
    argument's, a container's; the memory of the graph's state or arguments, but where the
    write goes through the very tensor or a view the graph replays the write into), in words;
    None where there is none."""
    notes = tracer.outside
    if not notes:
        return None
    ours = {id(notes), *map(id, notes.values()), *map(id, tracer.known.values())}
    for holder in (tracer, tracer.graph):
        ours.update(id(v) for v in vars(holder).values() if isinstance(v, dict | list | set))
    arrays = [t._data for t in [*tracer.inputs, *(ref.tensor for ref in tracer.graph.state)]]
    owners = [(id(a), memory_owner(a)) for a in arrays]
    replayed = {i for i, _ in owners}
    del arrays
    for note in notes.values():  # (no local names the array: see _unseen)
        if not note[4] and _written_back(tracer, note[0], replayed):
            continue  # (a held constant is written back, but as it was when traced)
        # (memory of the state or arguments, through a tensor the graph does not follow
        # there, from_numpy(T.numpy()[0]), outlives the call whoever else holds it; not
        # memory that state holds only through T.data = value)
        theirs = {owner for i, owner in owners if i != id(note[0])}
        if memory_owner(note[0]) in theirs or _referenced(note, ours):
            _, shape, dtype, where, _ = note
            return (f"a tensor it makes over memory that outlives the call (shape {shape}, "
                    f"{dtype.name}{_at(where)}: a NumPy array or buffer it reaches, through "
                    "ember.from_numpy, as_tensor, asarray, frombuffer or from_dlpack (of a "
                    "reached tensor's .numpy() too), or another tensor's memory through "
                    ".data =)")
    return None


def _written_back(tracer: Any, array: Any, replayed: set[int]) -> bool:
    """Whether the graph writes ``array``'s new value back: it is the array of state or an
    argument (``replayed``: their ids), or a view a view op made of one while tracing (a
    write into it is recorded as a write into that tensor: see :mod:`.view_writes`)."""
    entry = tracer.view_arrays.get(id(array))
    if entry is not None and entry[0]() is array:
        base = entry[1]()
        array = (entry[2] if base is None else base)._data
    return id(array) in replayed


def _referenced(note: tuple, ours: set[int]) -> bool:
    """Whether an object other than a tensor or ``ours`` references the noted array or the
    memory it views (its base, the object under a ``memoryview``), or a buffer view of that
    memory (a ``memoryview`` someone holds); or a reference no collector lists (a tuple of
    arrays, which the collector leaves untracked, an object array, another array's base)
    holds one of them. Memory imported through DLPack (its base a capsule, whose producer no
    collector lists) counts as referenced."""
    chain = _base_chain(note[0])
    if type(chain[-1]).__name__ == "PyCapsule":
        return True
    level = chain  # (one scan of the heap a level: the chain, then views of its memory)
    skip = ours | {id(chain), *map(id, chain)}
    while level:
        referrers = gc.get_referrers(*level)
        views = None if _unseen(level, referrers, chain) else _views_of(referrers, skip)
        del referrers  # (no holder at the next level's scan)
        if views is None:
            return True
        level = views
        skip.add(id(views))
    return False


def _base_chain(array: Any) -> list[Any]:
    """``array``, its base, the base's base ... (a ``memoryview``'s object)."""
    chain: list[Any] = []
    while array is not None and all(a is not array for a in chain):
        chain.append(array)
        array = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)
    return chain


def _views_of(referrers: list, skip: set[int]) -> list | None:
    """The buffer views (``memoryview``, its managed buffer) among ``referrers`` that hold the
    memory, where nothing but those, tensors, ``skip`` and this module's frames is there;
    None where something else is (its holder)."""
    views = []
    for r in referrers:
        if id(r) in skip or isinstance(r, Tensor) or \
                (isinstance(r, FrameType) and r.f_code.co_filename == __file__):
            continue
        if isinstance(r, memoryview) or type(r).__name__ == "managedbuffer":
            skip.add(id(r))  # (a view of the memory: who holds it?)
            views.append(r)
            continue
        return None
    return views


def _unseen(level: list, referrers: list, chain: list) -> bool:
    """Whether an object of ``level`` has more references than ``referrers`` (what the
    collector lists) and the arrays of ``chain`` (each array references its base) account
    for. The running frames here hold none (the caller's names none of them but ``level``)."""
    for i in range(len(level)):
        obj = level[i]
        seen = sum(list(map(id, gc.get_referents(r))).count(id(obj)) for r in referrers)
        if level is chain and i and not isinstance(chain[i - 1], memoryview):
            seen += 1  # (the array before it in the chain: its base)
        if sys.getrefcount(obj) - 2 > seen:  # (the argument, ``obj``)
            return True
    return False


def shared_groups(tensors: list[Tensor], labels: dict[int, str]) -> tuple:
    """The labels of the tensors that share one memory (:func:`memory_owner`), grouped: part
    of the cache key, so an alias made after a trace traces again.

    Example:
        >>> shared_groups([W, F], {id(W): "W", id(F): "F"})  # after W.data = F[:3]
        (('W', 'F'),)
    """
    return tuple(tuple(labels.get(id(t), "?") for t in g)
                 for g in by_owner(tensors).values() if len(g) > 1)
