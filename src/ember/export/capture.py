"""Tracing a model for export (``ember.export`` and ``ember.onnx``): ``ember.jit`` records the
call under ``no_grad`` with no optimizing pass but (optionally) constant folding, CSE and
dead-code elimination. With dynamic sizes the model is traced again with those axes resized;
the graphs must match equation by equation, and each variable's twin tells which of its sizes
are dynamic. ``who`` names the exporter in error messages (``"ember.onnx.export"``)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember.export.errors import ExportError
from ember.export.local_state import fold_local_writes, local_memory, made_in
from ember.export.symbolic import SizeExpr
from ember.func.pytree import tree_unflatten
from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.passes import PASSES
from ember.jit.reached_values import held_tensors
from ember.jit.sources import SCOPE
from ember.jit.switches import CONTEXTS
from ember.jit.tracer import TraceError
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

_FOLDING = ("fold", "cse", "dce")


@dataclass
class Capture:
    """A model compiled for export: ``who`` exports it; with ``state_writes`` the model may
    write into its buffers (the graph's ``writes``), never into its arguments."""

    compiled: Any
    who: str
    state_writes: bool
    rng: Any = None  # (the generator's state before the first trace: see retrace_resized)


_TABLES = ("_parameters", "_buffers", "_modules")  # (a module's own: its buffers come first)


@contextmanager
def state_restored(model: Any) -> Iterator[None]:
    """A module's buffers and the tensors its attributes hold (an RNN's carried ``self.h``,
    a tuple of them) as they were before the block: tracing runs the model, which may write
    into them or rebind them, and an export leaves the model as it found it.

    Example:
        >>> with state_restored(model):
        ...     capture, graph = trace(model, args, {}, True, "ember.onnx.export")
    """
    modules = list(model.modules()) if isinstance(model, ember.nn.Module) else []
    saved = [(members, name, value, [(t, t.detach().clone()) for t in held])
             for m in modules for members in (m._buffers, vars(m))
             for name, value in list(members.items())
             if name not in _TABLES and (held := [t for _, t in held_tensors(value)])]
    try:
        yield
    finally:
        with ember.no_grad():
            for members, name, value, tensors in saved:
                members[name] = value
                for t, old in tensors:
                    t.copy_(old)


def trace(model: Any, args: tuple, kwargs: dict, fold: bool, who: str,
          state_writes: bool = False) -> tuple[Capture, Graph]:
    """``model(*args, **kwargs)`` traced under ``no_grad``: the capture and its graph."""
    compiled = ember.jit.compile(model, passes={p: fold and p in _FOLDING for p in PASSES})
    compiled.fill_bytes = 0  # (a constant of one value follows a dynamic size as a broadcast)
    compiled.warn_retraces = False  # (it traces on purpose at several sizes)
    compiled.ignores_switches = True  # (as torch.export: set_stance and jit.disable() are
    # for compiled calls, not for capturing a program)
    capture = Capture(compiled, who, state_writes, ember.get_rng_state())
    with module_scopes(model):
        return capture, retrace(capture, args, kwargs)


@contextmanager
def module_scopes(model: Any) -> Iterator[None]:
    """While it lasts, each op traced inside a submodule's call records that module's path in
    ``model`` (``Source.scope``; ONNX names its nodes by it, as torch.onnx does). The hooks
    are ``model``'s own modules' (no other module's call runs them) and act in this thread
    only (another thread calling ``model`` meanwhile is left alone); a module's exit restores
    the path only where its entry set it (a user's pre-hook may raise before it did)."""
    if not isinstance(model, ember.nn.Module):
        yield
        return
    names = {id(m): name for name, m in model.named_modules()}
    thread, start = threading.get_ident(), SCOPE.path
    entered: list[tuple[Any, str]] = []  # (each module entered in this thread, the outer path)

    def enter(module: Any, args: Any) -> None:
        if threading.get_ident() == thread:
            entered.append((module, SCOPE.path))
            SCOPE.path = names[id(module)]

    def leave(module: Any, args: Any, output: Any) -> None:
        if threading.get_ident() == thread and entered and entered[-1][0] is module:
            SCOPE.path = entered.pop()[1]

    hooks = [h for m in model.modules()
             for h in (m.register_forward_pre_hook(enter, prepend=True),
                       m.register_forward_hook(leave, always_call=True))]
    try:
        yield
    finally:
        for h in hooks:
            h.remove()
        SCOPE.path = start


@contextmanager
def _autocast_aside(who: str) -> Iterator[None]:
    """An active ``ember.autocast`` off inside the block: the graph is the model's own, as
    torch.export's under autocast (which records no casts; a model that autocasts enters
    the context in its forward). Under any other handler (the profiler, a transform) it
    raises: jit would run the model eagerly there and capture nothing."""
    stack = DISPATCH.stack
    if not stack:
        yield
        return
    context = CONTEXTS.get(stack[0]) if len(stack) == 1 else None
    if context is None:
        raise ExportError(f"{who} cannot capture the model inside ember.profiler.profile(), "
                          "vmap, grad or another transform (or autocast nested with one of "
                          f"them: {len(stack)} active); hint: call {who} outside them")
    with context[2]():
        yield


def retrace(capture: Capture, args: tuple, kwargs: dict) -> Graph:
    """The graph of the captured model called with these (other shapes of) arguments."""
    compiled, who = capture.compiled, capture.who
    try:
        with ember.no_grad(), made_in() as made, _autocast_aside(who):
            compiled(*args, **kwargs)
    except TraceError as e:
        raise ExportError(f"{who} traces the model with ember.jit, which refused it: {e}") \
            from e
    graph = compiled.graph
    if compiled.last.eager is not None:  # (a call one graph cannot stand for)
        raise ExportError(f"{who}: the model cannot be one graph: ember.jit {compiled.last.eager}")
    if compiled.last.roots is not None:  # (an output is a view of an argument: the jit graph
        # returns the bases of the other returned views too, which the model does not)
        graph = dataclasses.replace(graph, outputs=graph.outputs[:len(compiled.last.out_consts)])
    local = local_memory(made, graph)
    _refuse_made_state([t for t in made.written if id(t._vc) not in local], graph, who)
    fold_local_writes(graph, made, local, who)
    for eqn in graph.eqns:
        if isinstance(eqn.prim, Effect):
            raise ExportError(f"{who}: the model calls {eqn.prim.name}, an effect on Python "
                              "objects; export a pure forward function")
    arg_writes = any(not _unchanged(graph, i, v) for i, v in graph.arg_writes)
    if arg_writes and capture.state_writes:
        raise ExportError(f"{who}: the model writes into its arguments (an in-place op on an "
                          "input); export a model that leaves its inputs as they are. Hint: "
                          "clone the input first (x = x.clone())")
    if arg_writes or (graph.writes and not capture.state_writes):
        written = [graph.label(t) for t, _ in graph.writes] + (["its arguments"] if arg_writes
                                                               else [])
        raise ExportError(f"{who}: the model writes into its state or arguments when called "
                          f"({', '.join(written)}). Writes of this kind: a BatchNorm "
                          "in training mode updates its running statistics, an "
                          "Embedding(max_norm=...) renormalizes the rows it looks up in its "
                          "weight, a recurrent layer carries its state to the next call, an "
                          "in-place op writes an input. Hint: export in eval mode, with "
                          "max_norm=None (renormalize the weight once before), with state "
                          "passed in and returned instead of carried, and without in-place "
                          "writes to inputs. A module built inside the exported function "
                          "(nn.Linear(4, 3)(x)) initialises its parameters in place, a write "
                          "into state as well: build it outside the function and call it "
                          "there (or export the module itself)")
    return graph


def _refuse_made_state(made: list, graph: Graph, who: str) -> None:
    """Refuses a write into a tensor the call made and keeps after it (:mod:`made_state`),
    unless the graph already has it as a state write (refused with the others below)."""
    state = [t for t in made if not any(t is w for w, _ in graph.writes)]
    if state:
        found = ", ".join(f"{tuple(t.shape)} {t.dtype}" for t in state[:4])
        raise ExportError(f"{who}: the model writes into its state when called: a tensor it "
                          f"makes in the call and keeps after it ({found}; a buffer "
                          "registered lazily, a tensor kept in a module, a global, a closure, "
                          "a container or an attribute). The graph would hold this call's "
                          "value as a constant while each eager call writes it again. Hint: "
                          "make the state before exporting (register the buffer in __init__), "
                          "or pass it in and return it")


def _unchanged(graph: Graph, argument: int, var: Var) -> bool:
    """Whether an argument's new value ``var`` is the argument itself, passed on by
    ``index_check`` (which returns its input: the tracer sees the array hold a new variable)."""
    made = {v: e for e in graph.eqns for v in e.outputs}
    while var in made and made[var].prim.name == "index_check":
        var = made[var].inputs[0]
    return var is graph.inputs[argument]


def retrace_resized(capture: Capture, leaves: list, spec: Any,
                    axes: dict[int, dict[int, Any]], step: int = 1, power: int = 1,
                    bounds: dict[str, Any] | None = None,
                    sizes: dict[str, int] | None = None, odd: bool = False) -> Graph:
    """The graph of another call with the dynamic axes resized (:func:`resized`); a model
    that fails at those sizes is an :class:`ExportError` saying so."""
    grown = resized(leaves, axes, capture.who, step, power, bounds, sizes, odd)
    after = ember.get_rng_state()  # (each trace draws what the first drew: a module built
    ember.set_rng_state(capture.rng)  # in the call initialises its weights alike)
    try:
        return retrace(capture, *tree_unflatten(grown, spec))
    except ExportError:
        raise
    except Exception as e:
        shapes = [tuple(t.shape) for t in grown if isinstance(t, Tensor)]
        raise ExportError(f"{capture.who}: to find which sizes follow the dynamic axes, "
                          f"the model is traced again with them resized (inputs of shapes "
                          f"{shapes}), and failed: {type(e).__name__}: {e}. Hint: an axis "
                          "whose size the model constrains (even, a multiple of some size) "
                          "cannot be dynamic") from e
    finally:
        ember.set_rng_state(after)


def resized(leaves: list, axes: dict[int, dict[int, Any]], who: str, step: int = 1,
            power: int = 1, bounds: dict[str, Any] | None = None,
            sizes: dict[str, int] | None = None, odd: bool = False) -> list:
    """The leaves of the call's arguments with the tensors' dynamic axes ``{tensor index:
    {axis: dim name}}`` resized: the k-th dim name grows its axes by ``(k + 1)^power · step``
    (``power`` 2 grows the dims in other proportions than 1, so that two traces with the two
    tell a size that follows one dim from one that follows another) (axes of one name stay
    equal, of two names apart; an axis given a derived dim's ``SizeExpr`` of a name instead
    grows by its coefficient times that name's growth), filled by repeating the tensor's own entries
    (integer inputs stay valid indices); a dim whose range (``bounds[name]``, with ``lower``
    and ``upper``) ends below the grown size shrinks by as much instead, when it can stay at
    2 or above. With ``odd``, the k-th grows by ``(2k + 1)^power · step`` instead (every dim
    changes parity: the traces then tell ``T // 2`` from ``(T + 1) // 2``). ``sizes`` instead
    gives each dim name its new size. A tensor passed twice with
    the same axes is resized once: the model may test ``query is key``."""
    growth: dict[str, int] = {}
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    for index, t in enumerate(tensors):  # (each dim's change, in the order the dims come)
        for axis, name in sorted(axes.get(index, {}).items()):
            size = t.shape[axis]
            if size == 0:
                raise ExportError(f"{who}: dynamic axis {axis} of input {index} "
                                  "has size 0 in the example input; trace with a non-empty "
                                  "one")
            if isinstance(name, SizeExpr):  # (a derived dim: its root's change, times coeff)
                continue
            if sizes is not None:
                growth.setdefault(name, sizes[name] - size)
            elif name not in growth:
                grow = (2 * len(growth) + 1 if odd else len(growth) + 1) ** power * step
                bound = (bounds or {}).get(name)
                if bound is not None and size + grow > bound.upper and \
                        size - grow >= max(bound.lower, 2):
                    grow = -grow
                growth[name] = grow
    made: dict[tuple, Tensor] = {}
    out, index = [], 0
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            out.append(leaf)
            continue
        key = (id(leaf), tuple(sorted(axes.get(index, {}).items())))
        if key in made:
            out.append(made[key])
            index += 1
            continue
        array = np.asarray(leaf.detach().numpy())
        for axis, name in sorted(axes.get(index, {}).items()):
            size = array.shape[axis]
            grow = name.coeff * growth[name.symbols[0]] if isinstance(name, SizeExpr) else \
                growth[name]
            array = np.take(array, np.arange(size + grow) % size, axis=axis)
        made[key] = ember.tensor(_laid_out_as(array, leaf), dtype=leaf.dtype)
        out.append(made[key])
        index += 1
    return out


def _laid_out_as(array: np.ndarray, like: Tensor) -> np.ndarray:
    """``array`` with its dimensions in memory in the order of ``like``'s strides: a
    channels-last example traces again channels-last (a model's kernels follow the layout)."""
    strides = like.stride()
    order = sorted(range(array.ndim), key=lambda d: -strides[d])
    if order == list(range(array.ndim)):
        return array
    return np.ascontiguousarray(array.transpose(order)).transpose(np.argsort(order))


def twins(first: Graph, second: Graph, who: str
          ) -> tuple[dict[Var, Var], dict[int, Eqn], dict[int, Eqn]]:
    """Each variable of ``first`` mapped to the variable in ``second`` made at the same place,
    each equation whose params changed with the sizes (by ``id``) to its twin (the caller
    decides which of those it can export), and every equation to its twin. Copies are left out
    of the matching: a reshape copies a strided view at some sizes only (a batch of 1 views
    what a batch of 2 copies). A constant may have several twins (the tracer shares one
    constant between uses that the second trace tells apart: a mean's count over a dynamic
    axis and another over a fixed one), so the mapping of a constant is only its last use's:
    see ``ember.onnx.context.Context.twin_of``."""
    def differ(why: str) -> ExportError:
        return ExportError(f"{who}: the traced graph changes with the size of a dynamic axis "
                           f"({why}): the model, or an op it calls, takes another path at "
                           "another size (its Python code branches on a shape). Hint: export "
                           "with fixed sizes (no dynamic axes) for this model")

    eqns1, eqns2 = ([e for e in g.eqns if e.prim.name != "copy"] for g in (first, second))
    if len(eqns1) != len(eqns2) or len(first.inputs) != len(second.inputs) or \
            len(first.state) != len(second.state) or len(first.outputs) != len(second.outputs):
        raise differ(f"{len(eqns1)} against {len(eqns2)} equations"
                     f"{_first_difference(eqns1, eqns2)}")
    mapping: dict[Var, Var] = dict(zip(first.inputs, second.inputs))
    mapping.update((a.var, b.var) for a, b in zip(first.state, second.state))
    copied = {e.outputs[0]: e.inputs[0] for e in second.eqns if e.prim.name == "copy"}
    changed, pairs = {}, {}
    for e1, e2 in zip(eqns1, eqns2):
        if e1.prim is not e2.prim or len(e1.inputs) != len(e2.inputs):
            raise differ(f"{e1.prim.name} against {e2.prim.name} at {e1.source}")
        for v1, v2 in zip(e1.inputs, e2.inputs):
            while v2 in copied:
                v2 = copied[v2]
            known = mapping.get(v1)
            if known is not None and known is not v2 and v1 not in first.consts and \
                    copied.get(known, known) is not v2:
                raise differ(f"{e1.prim.name} at {e1.source} reads one value where the "
                             "second trace reads two")
            mapping[v1] = v2
        mapping.update(zip(e1.outputs, e2.outputs))
        pairs[id(e1)] = e2
        if _params_key(e1.params) != _params_key(e2.params):
            changed[id(e1)] = e2
    for v1, v2 in zip(first.outputs, second.outputs):
        if v1 is not None and v2 is not None:
            mapping[v1] = v2
    for eqn in first.eqns:  # (a copy's output is its input's twin)
        if eqn.prim.name == "copy" and eqn.outputs[0] not in mapping and eqn.inputs[0] in mapping:
            mapping[eqn.outputs[0]] = mapping[eqn.inputs[0]]
    for v1, v2 in mapping.items():  # (squeeze() of a size-1 dynamic axis, say)
        if len(v1.shape) != len(v2.shape):
            raise differ(f"{v1.name} has shape {v1.shape} against {v2.shape}; a dynamic "
                         "axis of size 1 in the example input may be squeezed or broadcast: "
                         "trace with a size above 1")
    return mapping, changed, pairs


def _first_difference(eqns1: list[Eqn], eqns2: list[Eqn]) -> str:
    """Where two traces' equations first differ, for the error: ``", first <op> at <line>
    against <op> at <line>"``, or the first equation one trace has beyond the other."""
    for e1, e2 in zip(eqns1, eqns2):
        if e1.prim is not e2.prim:
            return f", first {e1.prim.name} at {e1.source} against {e2.prim.name} at {e2.source}"
    longer = eqns1 if len(eqns1) > len(eqns2) else eqns2
    extra = longer[min(len(eqns1), len(eqns2))]
    why = _SKIPS.get(extra.prim.name, "")
    where = "" if extra.source is None else f" at {extra.source}"
    return f", the {'first' if longer is eqns1 else 'second'} trace has one more: " \
        f"{extra.prim.name}{where}{why}"


_SKIPS = {"resample": " (interpolate's linear, 2-D nearest and antialiased modes skip "
                      "resampling where the scaled size equals the input's, as "
                      "floor(9 * 1.1) = 9: trace at sizes where it changes)"}


def _params_key(params: dict) -> str:
    return repr(sorted(params.items()))
