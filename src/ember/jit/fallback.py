"""Why a compiled signature runs the plain function instead of its graph: what the call does
that one generated call cannot stand for (module backward hooks on outputs that need grad, an
in-place write into an argument whose history belongs to the caller's graph, a write into an
argument that shares memory with another, or with a tensor the function reaches, an output
object holding tensors or built by the call). Each check
returns the reason, in the words :func:`ember.jit.explain` gives, or None.
"""

from __future__ import annotations

import enum
import operator
import types
from collections.abc import Callable
from typing import Any

from ember.backend.device import Device
from ember.dtypes import DType
from ember.jit.discover import Reach
from ember.jit.ir import Effect, Graph
from ember.jit.kernels import owner
from ember.jit.outside_memory import by_owner, overlap
from ember.jit.sources import warn_user
from ember.jit.switches import JIT
from ember.jit.tracer import TraceError, Tracer
from ember.tensor import Tensor
from ember.utils.held_objects import holds


def backward_hooks(name: str, found: Reach, tracer: Tracer) -> str | None:
    """Why calls with this key run the plain function, if the outputs pass through a
    module's backward hooks: their Python must run at each backward, between the
    module's outputs' gradients and its inputs', where generated code has no place for
    it (torch.compile breaks the graph there too). None when no module call had them.
    ``name`` names the compiled function, ``found`` is what it reaches."""
    if not tracer.backward_hooks:
        return None
    labels = {id(m): label for label, m in zip(found.module_labels, found.modules)}
    hooked = "; ".join(
        f"module {labels.get(id(s.module)) or name} ({type(s.module).__name__}): "
        f"{', '.join(_hook_name(h) for h in [*s.pre_hooks, *s.hooks])}"
        for s in tracer.backward_hooks)
    return (f"runs eagerly: its outputs need grad and pass through module backward hooks "
            f"(backward pre-hooks and full backward hooks: {hooked}), whose Python runs at "
            "each backward, inside the module's backward, which a compiled call's "
            "generated backward cannot; calls with this signature run the plain function, "
            "so the hooks see and replace eager's gradients. Hint: remove the hooks "
            "(handle.remove()) to compile the call again, or compile the whole step with "
            "backward() inside (the hooks' tensor work is then traced into the graph)")


def argument_writes(tracer: Tracer, inputs: list[Tensor], names: list[str],
                    leaves: list) -> str | None:
    """Why calls with this key run the plain function, if the function writes in place
    into a tensor argument and returns values that need grad (``x.mul_(2)`` returned):
    the write, and the history it gives the argument, happen in the caller's autograd
    graph, which one compiled node cannot stand for. None when it writes into none."""
    names = [n for n, leaf in zip(names, leaves) if isinstance(leaf, Tensor)]
    arguments = [v for v in tracer.graph.inputs if v not in tracer.grad_input_vars]
    written = [names[i] for i, (t, var) in enumerate(zip(inputs, arguments))
               if tracer.lookup(t._data) not in (var, *tracer.twins.get(var, ()))]
    if not written:
        return None
    return (f"runs eagerly: it writes in place into argument {', '.join(written)} and "
            "returns values that need grad; the write and the history it gives the "
            "argument belong to the caller's autograd graph, which one compiled node "
            "cannot stand for, so calls with this signature run the plain function. Hint: "
            "write out of place (y = x * 2), or compile the whole step with backward() "
            "inside")


def retained_outputs(outputs: list) -> str | None:
    """Why calls with this key run the plain function, if the function called
    ``retain_grad()`` on an output it returns (``h.retain_grad(); return h.sum(), h``): the
    gradient of the other outputs reaches ``h`` through the function's own graph, where
    one compiled node, whose outputs are siblings, gives it none (torch.compile breaks the
    graph there). None when no output retains its gradient."""
    if not any(isinstance(t, Tensor) and t.retains_grad for t in outputs):
        return None
    return ("runs eagerly: it calls retain_grad() on a tensor it returns, whose .grad comes "
            "from the other outputs' backward through the function's own graph, which one "
            "compiled node (its outputs side by side) cannot give; calls with this signature "
            "run the plain function. Hint: call retain_grad() on the output after the call "
            "when nothing else the call returns is made from it, or compile the whole step "
            "with backward() inside")


def aliased_writes(graph: Graph, leaves: list, parts: tuple, names: list[str]) -> str | None:
    """Why calls with this key run the plain function, if the graph writes in place into
    an argument that shares memory with another (``f(b, b[1:3])``): the graph reads each
    argument's values as they were when the call started, eager sees the write through
    the other. None when no written argument shares its memory."""
    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
    group = [i if p[0] == "value" or p[4] is None else p[4] for i, p in enumerate(parts)]
    for k, _ in graph.arg_writes:
        i = positions[k]
        others = [names[j] for j in positions if j != i and group[j] == group[i]]
        if others:
            return (f"runs eagerly: argument {names[i]} shares memory with "
                    f"{', '.join(others)} and the function writes into it in place; the "
                    "graph would read the other as it was before the write. Hint: pass "
                    "separate tensors (.clone() one), or write out of place")
    return None


class StateMemory:
    """The memory of the tensors a function reaches (parameters, buffers, globals): the id
    of each one's memory (:func:`~ember.jit.kernels.owner`) -> its array and label; found
    again only when the reach changed or one of its tensors holds another array (a check of
    about a microsecond per call for twenty tensors)."""

    __slots__ = ("arrays", "owners", "tensors")

    def __init__(self) -> None:
        self.tensors: list | None = None
        self.arrays: tuple = ()
        self.owners: dict[int, tuple[Any, str, Tensor]] = {}

    def of(self, found: Reach) -> dict[int, tuple[Any, str, Tensor]]:
        arrays = tuple(map(_DATA, found.tensors))
        if found.tensors is not self.tensors or len(arrays) != len(self.arrays) or \
                not all(map(operator.is_, arrays, self.arrays)):
            self.tensors, self.arrays = found.tensors, arrays  # (kept: no id is reused)
            self.owners = {owner(a): (a, found.labels.get(id(t), "a tensor it reaches"), t)
                           for a, t in zip(arrays, found.tensors)}
        return self.owners


_DATA = operator.attrgetter("_data")


def shared_state(leaf: Tensor, memory: dict[int, tuple[Any, str, Tensor]], args: tuple,
                 kwargs: dict) -> str | None:
    """For the cache key: the reached tensor (of :class:`StateMemory`) whose memory the
    tensor argument ``leaf`` is (its label), or is part of (``"a view of <label>"``); None
    where it shares none. An argument that is a parameter the function also reads by name
    is one value in the graph, which later calls must pass the same way. (A tensor inside a
    tuple, list or dict argument is reached as part of it: itself, it is no other tensor.)"""
    hit = memory.get(owner(leaf._data))
    if hit is None:
        return None
    array, label, tensor = hit
    if tensor is leaf and not any(a is leaf for a in (*args, *kwargs.values())):
        return None
    return label if array is leaf._data else f"a view of {label}"


def state_view_writes(graph: Graph, parts: tuple, names: list[str]) -> str | None:
    """Why calls with this key run the plain function, if an argument is a view of a
    tensor the function reaches (``f(buf[1:])`` where ``f`` reads or writes ``buf``) and
    the graph writes anything: it would read the argument and the tensor each as they were
    when the call started, where eager sees a write into one through the other."""
    shared = [(names[i], p[4]) for i, p in enumerate(parts) if p[0] != "value" and
              isinstance(p[4], str) and p[4].startswith("a view of ")]
    if not shared or not (graph.writes or graph.arg_writes or
                          any(isinstance(e.prim, Effect) for e in graph.eqns)):
        return None
    what = ", ".join(f"argument {n} is {s}" for n, s in shared)
    return (f"runs eagerly: {what}, and the function writes in place; the graph would read "
            "each as it was when the call started, eager sees the write through the other. "
            "Hint: pass a .clone(), or the tensor itself")


def _hook_name(fn: Any) -> str:
    """A hook as ``explain()`` names it: its qualified name and line."""
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", type(fn).__name__)
    return name if code is None else \
        f"{name} at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"


def shares_split_writes(graph: Graph, tensors: list[Tensor]) -> bool:
    """Whether an argument shares memory (by its array's owner) that a part of a split
    optimizer step writes: a parameter's array or its optimizer state's."""
    owners = {owner(t._data) for t in tensors}
    return any(owner(a) in owners
               for n, writes in graph.split_writes for k in range(n) for a in writes(k))


def grad_views(found: Reach) -> str | None:
    """Why a call that backpropagates or touches ``.grad`` runs the plain function, if a
    reached tensor's ``.grad`` is a view of another tensor, or shares memory with another
    reached tensor or ``.grad`` (a flat gradient buffer: ``p.grad = flat[a:b].view(shape)``):
    eager's backward adds into that memory in place, so the buffer holds the gradients (and
    clipping it clips them); a graph writes new memory for ``.grad``. None where none does."""
    arrays = by_owner(((name, x) for t in found.tensors  # (name None: a .grad)
                       for name, x in ((found.labels.get(id(t), "a tensor"), t), (None, t._grad))
                       if x is not None), lambda pair: pair[1]._data)
    for t in found.tensors:
        grad = t._grad
        if grad is None:
            continue
        label = found.labels.get(id(t), "a tensor")
        others = [name or "another .grad" for name, x in arrays[owner(grad._data)]
                  if x is not grad and overlap(x._data, grad._data)]
        if grad._view is not None or others:
            what = "is a view of another tensor" if grad._view is not None else \
                f"shares memory with {others[0]}"
            return (f"runs eagerly: the .grad of {label} {what} (a flat gradient buffer, as "
                    "p.grad = flat[a:b].view(p.shape)); eager's backward adds into that "
                    "memory in place, a graph would give .grad new memory and leave the "
                    "buffer as it was. Hint: give each parameter a .grad of its own (or leave "
                    "it unset) to compile the step")
    return None


class GradViews(TraceError):
    """Raised by a trace that touched ``.grad`` (backward, a read, a write) where a reached
    ``.grad`` is a view of a flat buffer (``views``, the reason :func:`grad_views` gave): the
    call runs eagerly (with ``fullgraph``, this error)."""


def trace_or_views(name: str, found: Reach, watch: bool, fullgraph: bool,
                   restore: Callable[[], None], record: Callable[[str | None], Any]) -> tuple:
    """``(record(views), None)``, or ``(None, views)`` where the call must run eagerly: a
    reached ``.grad`` is a view of a flat buffer (``views``, :func:`grad_views`; looked at
    where ``watch``) and the trace touched ``.grad`` (``restore`` then undoes what it ran)."""
    views = grad_views(found) if watch else None
    touched = _grad_watch(found) if views else None
    try:
        return record(views), None
    except BaseException as e:  # (.grad views of a flat buffer: the trace touched .grad)
        ours = isinstance(e, GradViews) or isinstance(e, TraceError) and touched and touched()
        restore()  # (the lines before the error ran: now as if it was never called)
        if not ours or fullgraph:
            raise
    warn_user(f"ember.jit: {name} {views}")
    JIT.reasons.append(f"{name}: {views}")
    return None, views


def _grad_watch(found: Reach) -> Callable[[], bool]:
    """Whether, when asked, some reached ``.grad`` was rebound or written since."""
    grads = [(t, t._grad, t._grad is not None and t._grad._vc.value) for t in found.tensors]
    return lambda: any(t._grad is not g or g is not None and g._vc.value != v
                       for t, g, v in grads)


def check_grad_views(name: str, views: str | None, tracer: Tracer) -> None:
    """Raises :class:`GradViews` where ``views`` is a reason and the trace of ``name``
    touched ``.grad``."""
    graph = tracer.graph
    if views and (tracer.ran_backward or graph.grads or graph.arg_grads or
                  any(ref.grad for ref in graph.state)):
        raise GradViews(f"ember.jit: {name} (fullgraph=True) cannot be one graph: it {views}")


def held_tensors(out_leaves: list, tracer: Tracer, inputs: list, found: Reach,
                 call: tuple) -> str | None:
    """Why calls run eagerly when an output leaf is an object (a dataclass, a plain class, a
    function; not a tuple, list or dict, which the graph rebuilds) that the graph cannot
    return as it is: one that holds, at any depth (:func:`holds`), a tensor of this call (one
    the trace computed, or an input's memory), or one the call built (the graph would return
    the first call's object at every call, and a caller's change to it would show in every
    later result). An object that existed before the call, reached from ``call`` (the
    function, its arguments) or from what ``found`` reached before it (modules, objects,
    globals: the model, ``self``, a global), and holds no tensor of the call, is returned as
    it is: it is the same object at every call. So are immutable values (numbers, strings,
    dtypes, devices, tuples of them) and functions defined at a module's top level. An object
    the call stores into what it reaches and returns counts as one that existed."""
    fresh, memory = tracer.fresh, {id(t._data) for t in inputs}
    roots = (call, found.modules, found.objects, [value for *_, value in found.bindings])

    def of_this_call(v: Any) -> bool:
        return isinstance(v, Tensor) and (id(v._data) in memory or
                                          fresh.get(id(v._data)) is v._data)
    for leaf in out_leaves:
        if isinstance(leaf, Tensor) or _immutable(leaf):
            continue
        if holds(leaf, of_this_call):
            return (f"runs eagerly: it returns a {type(leaf).__name__} holding tensors, which "
                    "the graph cannot rebuild with new values. Hint: return the tensors in "
                    "tuples, lists or dicts, or register the class with "
                    "ember.func.pytree.register_pytree_node")
        if not _module_level(leaf) and not holds(roots, lambda v, leaf=leaf: v is leaf):
            return (f"runs eagerly: it returns a {type(leaf).__name__} it builds, which the "
                    "graph cannot build again at each call (it would return one object at "
                    "every call). Hint: return tensors in tuples, lists or dicts, or build the "
                    "object from the compiled function's result")
    return None


#: values a caller cannot change: returned as they are even when the call built them
_ATOMS = (str, bytes, int, float, complex, type(None), type, types.ModuleType,
          types.BuiltinFunctionType, range, slice, type(...), enum.Enum, DType, Device)


def _module_level(value: Any) -> bool:
    """Whether ``value`` is a function defined at a module's or class's top level (made at
    import, so before any call: ``ember.nn.functional.relu``), not in a function's body."""
    return isinstance(value, types.FunctionType) and "<locals>" not in value.__qualname__


def _immutable(value: Any) -> bool:
    """Whether ``value`` is an atom, or a tuple or frozenset of immutable values."""
    if isinstance(value, tuple | frozenset):
        return all(_immutable(v) for v in value)
    return isinstance(value, _ATOMS)
