"""``ember.jit.compile``: a function (or module) traced once per input signature, optimized,
turned into Python code, cached, and run instead of the eager function.

The cache key is what fixes the graph: each tensor argument's shape, strides, dtype, device,
``requires_grad`` and hooks, and which arguments share memory (with each other, or with a tensor
the function reaches); the values of static and
non-tensor arguments; grad mode; the default dtype and device; the ``training`` flag of every
module the function reaches; whether each parameter's and argument's ``.grad`` is set (unless
its first graph showed it touches no ``.grad``); what its global and closure names and its
default arguments hold, and which modules, hooks and tensors (of which shapes) it reaches
(:meth:`~ember.jit.discover.Reach.layout`); how many primitives were replaced (a custom op
defined again). On a new key the function is traced again and the reason is logged (logger
``ember.jit``) and kept for :func:`explain`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ember.autograd.grad_mode import GRAD
from ember.backend import get_default_device
from ember.dtypes import get_default_dtype
from ember.errors import ArgumentError, user_stacklevel
from ember.func.pytree import LEAF, tree_flatten, tree_unflatten
from ember.jit.arguments import argument_names, flatten_arguments, hashable, parameter_names
from ember.jit.autodiff import (
    Joint,
    as_later_calls,
    assemble,
    compiled_call,
    differentiable,
    plan_outputs,
    split,
    trace_backward,
    traced_call,
)
from ember.jit.codegen import Generated, _store, generate
from ember.jit.discover import Reach, reach
from ember.jit.fallback import (
    StateMemory,
    aliased_writes,
    argument_writes,
    backward_hooks,
    check_grad_views,
    held_tensors,
    retained_outputs,
    shared_state,
    shares_split_writes,
    state_view_writes,
    trace_or_views,
)
from ember.jit.guards import ValueGuard
from ember.jit.ir import Graph
from ember.jit.kernels import owner
from ember.jit.layout_keys import tensor_hooks
from ember.jit.lr_reads import LiveLr
from ember.jit.outside_memory import outside_writes
from ember.jit.ownership import note_grad_outputs, owned, stored_apart, wrap_outputs
from ember.jit.passes import PASSES, optimize
from ember.jit.reached_values import is_plain
from ember.jit.reasons import counted_in_trace, differences, moves
from ember.jit.rollback import Rollback
from ember.jit.switches import CONTEXTS, JIT, Resets, instead_of_trace
from ember.jit.tracer import BIG, TraceError, Tracer
from ember.layouts import strides_key
from ember.nn.module import Module
from ember.ops.attention_backends import allowed_backends
from ember.ops.primitive import DISPATCH, REPLACED
from ember.tensor import Tensor, _wrap

log = logging.getLogger("ember.jit")


def _set_grad(tensor: Tensor, grad: Any, device: Any, in_place: bool) -> None:
    """An argument's ``.grad`` after a call: written into the ``.grad`` it had where the traced
    call wrote into that tensor (a backward's sum, ``zero_()``), as eager does, so that
    ``g = x.grad`` stays live; else a new tensor."""
    if in_place:
        _store(tensor._grad, grad)
    else:
        tensor.grad = None if grad is None else _wrap(grad, device)


@dataclass
class Entry:
    """One compiled signature: the graph, the generated code, how outputs are rebuilt."""

    graph: Graph
    generated: Generated
    out_spec: Any
    out_consts: list
    device: Any
    trace_seconds: float
    joint: Joint | None = None  # outputs that need grad: the call is one autograd node
    backward: Generated | None = None
    n_saved: int = 0  # the forward's trailing outputs are the values the backward reads
    # the tensor arguments whose .grad from before the call the graph reads (an accumulation
    # into it): their arrays are the graph's last inputs
    grad_inputs: tuple[int, ...] = ()
    # why the graph cannot stand for the call (arguments sharing memory it writes into): the
    # plain function runs instead
    eager: str | None = None
    # without a joint, where some outputs alias an argument or state tensor (a view of it, the
    # argument returned): the graph outputs that are roots, and how each tensor output is made
    # from them (see autodiff._Plan), so it shares memory and version counter as eager's
    roots: list[int] | None = None
    make: list[tuple] | None = None
    # without a plan: output position -> the earlier output whose memory it shared when
    # traced (``return t, t.reshape(-1)``): it may share it at every call
    shared: dict[int, int] | None = None
    # output positions (roots, with a plan) that were, or that make, views of a .grad when
    # traced (``return w.grad[1:]``): they keep sharing its memory as eager's (copies don't)
    grad_views: frozenset[int] = frozenset()
    const_owners: set[int] | None = None  # the memory of the graph's constants (first call)
    # whether every output is surely a new array of its own (decided at the first call from
    # the graph: then no call checks their memory)
    fresh_outputs: bool | None = None
    # (position among the tensor outputs, tensor or argument position) where the function
    # returns that tensor's .grad itself: the call returns the .grad it has after the graph
    returned_grads: tuple[tuple[int, Tensor | int], ...] = ()
    # tensors whose values Python read while tracing: constants of the graph (see guards.py)
    value_guards: tuple[ValueGuard, ...] = ()
    # what the trace changed in what the function reaches (``self.h: None -> an object``),
    # which running the graph would not: the next call with this layout traces again
    once: str | None = None


class CompiledFunction:
    """What :func:`compile` returns; call it like the function it wraps.

    ``graph`` and ``code`` show the most recently compiled signature; ``entries`` all of them.
    """

    #: a uniform constant made while tracing that is this big (in bytes) becomes an equation
    #: broadcasting its value (an export sets 0: every such constant, whatever its size)
    fill_bytes = BIG
    #: warn when the function has been compiled ``_MANY_TRACES`` times (an export, which
    #: traces on purpose at several sizes, sets False)
    warn_retraces = True

    def __init__(self, fn: Callable, static_argnums: tuple[int, ...] = (), mode: str = "default",
                 passes: dict[str, bool] | None = None, fullgraph: bool = False) -> None:
        if mode not in MODES:
            raise ArgumentError(f"ember.jit.compile: mode must be one of {sorted(MODES)}, got "
                                f"{mode!r}")
        unknown = set(passes or ()) - set(PASSES)
        if unknown:
            raise ArgumentError(f"ember.jit.compile: unknown passes {sorted(unknown)}; the passes "
                                f"are {list(PASSES)}")
        self.fn = fn
        self.static_argnums = tuple(static_argnums)
        self.fullgraph = fullgraph  # (a signature that must run eagerly raises instead)
        self.passes = {**MODES[mode], **(passes or {})}
        self.name = getattr(fn, "__name__", None) or type(fn).__name__
        # what the function runs inside (None: nothing): for a graph per autocast state, a call
        # of run_in(state, fn) (see _under_handler)
        self._context: Callable | None = None
        self.ignores_switches = False  # (export's: it traces under any stance or disable())
        self.forget()
        functools.update_wrapper(self, fn, updated=())

    def forget(self) -> None:
        """Drops every graph and what tracing learned: the next call traces again."""
        self.resets = Resets.count
        self.entries: dict[tuple, Entry] = {}
        self.traces = 0  # (also those that replaced an entry: a value Python read changed)
        self.eager_since = False  # (past _MAX_TRACES: said so once)
        self.ran_eagerly: set[tuple] = set()  # keys run once by "eager_then_compile"
        self.last: Entry | None = None
        self.ran: Entry | None = None  # the most recent call's (what jit.save writes)
        self.reach: Reach | None = None  # what the current call reaches
        self.reaches: dict[tuple, Reach] = {}  # by the objects among the arguments
        # each layout seen, and a reach of it (which keeps its objects alive); both None once
        # no graph or cached reach uses it
        self.layouts: list[tuple[dict | None, Reach | None]] = []
        self.state_memory = StateMemory()  # (arguments sharing it are part of the key)
        self.watch_grads = True  # until a trace shows the function never touches a .grad
        self.traced_changes: dict[str, int] = {}  # layout entries traces changed, how often
        self.side_effects: set[str] = set()  # those changed by two traces: left out of layouts
        self.within: dict[Any, CompiledFunction] = {}  # by the state of a context it ran under

    def __getattr__(self, name: str) -> Any:
        """A compiled module answers as the module (``parameters()``, ``train()``,
        ``state_dict()``...), as ``torch.compile``'s wrapper does, without its ``_orig_mod.``
        prefix on state-dict keys."""
        fn = self.__dict__.get("fn")
        if not isinstance(fn, Module):
            raise AttributeError(f"'CompiledFunction' object has no attribute {name!r}")
        attr = getattr(fn, name)
        if not (inspect.ismethod(attr) and attr.__self__ is fn):
            return attr

        @functools.wraps(attr)
        def chained(*args: Any, **kwargs: Any) -> Any:  # fast.eval() is fast, as in torch
            out = attr(*args, **kwargs)
            return self if out is fn else out

        return chained

    @property
    def _orig_mod(self) -> Module:
        """The compiled module itself, as the ``_orig_mod`` of ``torch.compile``'s wrapper
        (which code unwraps with ``getattr(model, "_orig_mod", model)``)."""
        if not isinstance(self.fn, Module):
            raise AttributeError("'CompiledFunction' object has no attribute '_orig_mod': it "
                                 "compiles a function, not a module")
        return self.fn

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        """A compiled method binds like a function: ``self`` is then an argument, which the
        cache key holds by identity (each instance gets its own graphs)."""
        return self if obj is None else types.MethodType(self, obj)

    # -- calling ---------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not JIT.enabled and not self.ignores_switches:
            return self._run(args, kwargs)
        if DISPATCH.handler is not None:
            return self._under_handler(args, kwargs)
        if self.resets != Resets.count:
            self.forget()
        leaves, spec = flatten_arguments(args, kwargs)
        self._look(args, kwargs, leaves)
        tensors, key = self._key(args, kwargs, leaves, spec)
        entry = self.entries.get(key)
        if entry is None:
            return self._trace(key, args, kwargs)
        self.ran = entry
        if entry.once is not None:
            return self._trace(key, args, kwargs, f"traced again: its last trace changed "
                               f"{entry.once}, which the graph does not do")
        if entry.value_guards:
            changed = next((g for g in entry.value_guards if not g.holds()), None)
            if changed is not None:
                return self._trace(key, args, kwargs, f"traced again: {changed.reason()}")
        if entry.eager is not None or \
                entry.graph.split_writes and shares_split_writes(entry.graph, tensors):
            return self._run(args, kwargs)  # (arguments sharing memory the graph writes)
        if entry.joint is not None:  # a differentiable call: one autograd node
            return self._rebuild(entry, compiled_call(entry, tensors))
        if entry.grad_inputs:  # (.grad that a backward accumulates into: inputs too)
            arrays = entry.generated.fn(*(t._data for t in tensors),
                                        *(tensors[i]._grad._data for i in entry.grad_inputs))
        else:
            arrays = entry.generated.fn(*(t._data for t in tensors))
        dev, graph = entry.device, entry.graph
        n = len(graph.outputs)
        # (outputs own their memory before the arguments are written: an output holding an
        # argument's earlier value, `y.copy_(x); x.add_(1); return y`, keeps that value)
        roots = tuple(_wrap(a, dev) for a in owned(entry, [arrays[p] for p in entry.roots],
                                                   tensors)) if entry.make is not None else \
            wrap_outputs(entry, arrays[:n], tensors, dev)
        for i, value in stored_apart(graph.arg_writes, arrays[n:], tensors) if \
                graph.arg_writes else ():
            _store(tensors[i], value)
        for (i, _), grad in zip(graph.arg_grads, arrays[n + len(graph.arg_writes):]):
            _set_grad(tensors[i], grad, dev, i in graph.arg_grads_in_place)
        outputs = list(assemble(entry.make, tensors, roots)) if entry.make is not None else roots
        for i, t in entry.returned_grads:
            outputs[i] = (tensors[t] if type(t) is int else t)._grad
        return self._rebuild(entry, outputs)

    def _under_handler(self, args: tuple, kwargs: dict) -> Any:
        """A call under a transform runs the plain function; one under a context of
        :data:`CONTEXTS` alone (autocast) runs, with that context set aside, the compiled
        function that enters it itself: one per state, as torch guards on autocast's."""
        stack = DISPATCH.stack
        context = CONTEXTS.get(stack[0]) if len(stack) == 1 else None
        if context is None:
            return self._run(args, kwargs)
        state_of, run_in, set_aside = context
        state = state_of()
        inner = self.within.get(state)
        if inner is None:  # (compiling self.fn itself: it reaches what a plain call reaches)
            inner = self.within[state] = CompiledFunction(self.fn, self.static_argnums,
                                                          "default", self.passes, self.fullgraph)
            inner._context = functools.partial(run_in, state)
        with set_aside():
            return inner(*args, **kwargs)

    def _run(self, args: tuple, kwargs: dict) -> Any:
        """The plain function, inside ``_context`` (the autocast state it is compiled
        for) where it has one."""
        if self._context is None:
            return self.fn(*args, **kwargs)
        return self._context(lambda: self.fn(*args, **kwargs))

    def _key(self, args: tuple, kwargs: dict, leaves: list, spec: Any) -> \
            tuple[list[Tensor], tuple]:
        tensors, parts, memory, grads = [], [], {}, self.watch_grads
        state = None  # (the memory of the tensors it reaches, read once an argument needs it)
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Tensor):
                tensors.append(leaf)
                shared = memory.setdefault(owner(leaf._data), i)  # (views, or one array twice)
                if shared == i and self.reach.tensors:  # (or a parameter, buffer, global's)
                    state = self.state_memory.of(self.reach) if state is None else state
                    shared = shared_state(leaf, state, args, kwargs) or i
                grad = leaf._grad if grads else None
                parts.append((tuple(leaf._data.shape), leaf.dtype, leaf._device,
                              leaf._requires_grad, None if shared == i else shared,
                              tensor_hooks(leaf),  # (the functions, by identity)
                              None if grad is None else grad.dtype, strides_key(leaf._data)))
            else:
                parts.append(("value", type(leaf), hashable(
                    leaf, lambda i=i: argument_names(self.fn, args, kwargs)[i])))
        statics = tuple((type(args[i]), hashable(
            args[i], lambda i=i: parameter_names(self.fn, len(args))[i]))
            for i in self.static_argnums if i < len(args)) if self.static_argnums else ()
        return tensors, (spec, tuple(parts), statics, GRAD.enabled,
                         self.reach.guard(self.watch_grads), self.reach.index,
                         (get_default_dtype(), get_default_device(), allowed_backends(),
                          REPLACED.value))

    def _look(self, args: tuple, kwargs: dict, leaves: list, again: bool = False) -> None:
        """Makes ``self.reach`` what the function reaches with these arguments (found again
        when something it reached may have moved, or ``again``), and learns which of the
        layouts seen that is."""
        objects, hooks = [], []  # (tensor arguments' hooks: functions it calls too)
        for x in leaves:
            if isinstance(x, Tensor):
                hooks += tensor_hooks(x)
            elif not is_plain(x):
                objects.append(x)
        ids = (*map(id, objects), None, *map(id, hooks)) if hooks else tuple(map(id, objects))
        found = self.reaches.get(ids)
        if found is None or again or found.moved():
            found = reach(self.fn, args, parameter_names(self.fn, len(args)), kwargs, hooks)
            found.arguments = objects + hooks  # (kept alive: their ids stay theirs)
            found.bindings = [b for b in found.bindings if b[2] not in self.side_effects or
                              b[3][0] == "object"]  # (a number a trace moves: not looked at)
            layout = {k: v for k, v in found.layout().items() if k not in self.side_effects}
            found.index = next((i for i, (seen, _) in enumerate(self.layouts) if seen == layout),
                               None)
            if found.index is None:  # (in a slot no graph or reach uses, if any: the list
                used = self._used()  # stays as long as those)
                found.index = next((i for i in range(len(self.layouts)) if i not in used),
                                   len(self.layouts))
                self.layouts[found.index:found.index + 1] = [(layout, found)]  # (kept alive)
            self.reaches[ids] = found
            if len(self.reaches) > _KEEP_REACHES:  # (a fresh object each call: the oldest go)
                self._release(self.reaches.pop(next(iter(self.reaches))).index)
        self.reach = found

    def _rebuild(self, entry: Entry, tensors: list | tuple) -> Any:
        """The function's return value: its tensor leaves from ``tensors``, in order, and its
        other leaves as they were when traced."""
        if entry.out_spec is LEAF and entry.out_consts[0] is _TENSOR:  # (one tensor)
            return tensors[0]
        it = iter(tensors)
        leaves = [next(it) if c is _TENSOR else c.now() if type(c) is LiveLr else c
                  for c in entry.out_consts]
        return tree_unflatten(leaves, entry.out_spec)

    # -- tracing ---------------------------------------------------------------------------
    def _trace(self, key: tuple, args: tuple, kwargs: dict, reason: str = "") -> Any:
        reason = reason or self._why(key, argument_names(self.fn, args, kwargs))
        if instead_of_trace(self, key, reason, _MAX_TRACES):  # (a stance, or past the limit)
            return self._run(args, kwargs)
        log.info("ember.jit: %s: %s", self.name, reason)
        start = time.perf_counter()
        leaves, spec = tree_flatten((args, kwargs))
        self._look(args, kwargs, leaves, again=True)  # (objects may move in ways no count tells)
        for label, m in zip(self.reach.module_labels, self.reach.modules):
            refusal = getattr(m, "jit_refusal", None)  # (a module whose Python must run)
            if refusal:
                raise TraceError(f"ember.jit: {self.name} reaches {label}, a "
                                 f"{type(m).__name__}, which cannot be compiled: {refusal}")
        key = self._key(args, kwargs, leaves, spec)[1]
        inputs = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
        out, views = trace_or_views(  # (views: why the call must run eagerly, or None)
            self.name, self.reach, self.watch_grads, self.fullgraph,
            Rollback(self.reach, inputs).restore,
            lambda v: self._record(key, args, kwargs, (leaves, spec), inputs, reason, start, v))
        if views is None:
            return out
        self.last = self.entries[key] = Entry(Graph(self.name), Generated(None, "", {}), None,
                                              [], None, time.perf_counter() - start, eager=views)
        return self._run(args, kwargs)

    def _record(self, key: tuple, args: tuple, kwargs: dict, flat: tuple, inputs: list,
                reason: str, start: float, views: str | None = None) -> Any:
        """Runs the function under a tracer, turns what it recorded into an entry kept under
        ``key`` (its layout part as after the trace), and returns the function's output."""
        leaves, spec = flat
        tracer = Tracer(self.name, self.reach, self.fill_bytes)
        with tracer:
            for t in inputs:
                tracer.add_input(t)
            out = self._run(args, kwargs)
            out_leaves, out_spec = tree_flatten(out)
            if any(type(x) is LiveLr for x in out_leaves):  # (the caller gets plain numbers)
                out = tree_unflatten([float(x) if type(x) is LiveLr else x
                                      for x in out_leaves], out_spec)
            joint, returned, hooked, plan, given = None, out_leaves, None, None, out_leaves
            if differentiable(tracer, inputs, out_leaves):
                hooked = backward_hooks(self.name, self.reach, tracer) or argument_writes(
                    tracer, inputs, argument_names(self.fn, args, kwargs), leaves) or \
                    retained_outputs(out_leaves)
                if hooked is None:
                    joint, returned = trace_backward(tracer, inputs, out_leaves)
            else:
                plan = plan_outputs(tracer, inputs, out_leaves)
                if tracer.ran_backward:  # (its loss needs no grad at later calls: nor now)
                    given = as_later_calls(plan, out_leaves)
                # (every output its own, or none an argument or state: wrapped as it comes,
                # so the graph returns what the function does, as ONNX and export read it;
                # else a view of a value the function does not return is made from that
                # value, which the graph returns too)
                own = all(source == "out" for source, _, _ in plan.make)
                if own and (len(plan.returned) > len(out_leaves) or
                            all(not steps for _, _, steps in plan.make)):
                    plan = None
                else:
                    returned = plan.returned
            # (what it returns in the memory of state it rebound: its value now, before the
            # new value is written in)
            rebound = {owner(t._data) for t in tracer.carried.rebound()}
            given = [_wrap(x._data.copy(order="K"), x._device) if isinstance(x, Tensor) and
                     owner(x._data) in rebound else x for x in given]
            graph = tracer.finish(returned)
        check_grad_views(self.name, views, tracer)
        redo = getattr(self.entries.get(key), "once", None) is not None
        layout, once = self._layout_after_trace(args, kwargs, leaves, key[5], redo,
                                                tracer.lr_reads.read_before_step())
        device = inputs[0]._device if inputs else get_default_device()
        consts = [_TENSOR if isinstance(x, Tensor) else x for x in out_leaves]
        backward, n_saved = None, 0
        if joint is not None:
            if tracer.grad_inputs:
                raise TraceError(f"ember.jit: {self.name} reads the .grad an argument had "
                                 "before the call and returns values that need grad. Hint: "
                                 "compile the whole step with backward() inside, or set the "
                                 "argument's .grad to None before calling")
            if graph.arg_writes or graph.arg_grads:
                raise TraceError(f"ember.jit: {self.name} writes into its arguments (or their "
                                 ".grad) and returns values that need grad; compile the whole "
                                 "step with backward() inside, or avoid the in-place write")
            graph, back, saved = split(graph, joint)
            back, frees = optimize(back, self.passes)
            backward, n_saved = generate(back, device.xp, device, frees), len(saved)
        graph, frees = optimize(graph, self.passes)
        generated = generate(graph, device.xp, device, frees)
        names = argument_names(self.fn, args, kwargs)
        entry = Entry(graph, generated, out_spec, consts, device, time.perf_counter() - start,
                      joint, backward, n_saved, tuple(tracer.grad_inputs),
                      hooked or outside_writes(tracer) or tracer.eager_reason or
                      aliased_writes(graph, leaves, key[1], names) or
                      state_view_writes(graph, key[1], names) or
                      held_tensors(out_leaves, tracer, inputs, self.reach, (self.fn, args, kwargs)))
        if plan is not None:
            entry.roots, entry.make = plan.roots, plan.make
        note_grad_outputs(entry, joint, plan, inputs, out_leaves)
        entry.once = once
        entry.value_guards = tuple(ValueGuard(t, tracer.labels.get(id(t), "a tensor"), where)
                                   for t, _, where in tracer.value_reads.values())
        if entry.eager is not None:
            if self.fullgraph:
                raise TraceError(f"ember.jit: {self.name} (fullgraph=True) cannot be one graph: "
                                 f"it {entry.eager}")
            JIT.reasons.append(f"{self.name}: {entry.eager}")
            log.info("ember.jit: %s: %s", self.name, entry.eager)
        if not graph.grads and not graph.arg_grads and not entry.grad_inputs and \
                not any(ref.grad for ref in graph.state) and not self.entries:
            self.watch_grads = False  # (a model's forward: .grad is none of its business)
            parts = tuple(p if p[0] == "value" else (*p[:6], None, p[7]) for p in key[1])
            key = (key[0], parts, *key[2:4], self.reach.guard(False), *key[5:])
        key = (*key[:5], layout, *key[6:])
        self.entries[key] = entry
        self.last = self.ran = entry
        if len(self.entries) > _KEEP_ENTRIES:
            self._forget_oldest()
        self.traces += 1
        if self.traces == _MANY_TRACES and self.warn_retraces:
            warnings.warn(f"ember.jit: {self.name} has been compiled {_MANY_TRACES} times (the "
                          f"last: {reason}); ember.jit.explain() lists every reason. Hint: a "
                          "number read that changes each call (a global, get_last_lr()) is "
                          "better a tensor argument; give varying shapes a few fixed sizes",
                          stacklevel=4)
        if joint is not None:  # (one node, as at later calls: see autodiff.traced_call)
            return self._rebuild(entry, traced_call(entry, inputs, returned))
        kept = {owner(a) for a in graph.consts.values()}
        if all(a is b for a, b in zip(given, out_leaves)) and not any(
                isinstance(x, Tensor) and owner(x._data) in kept for x in out_leaves):
            return out
        # (an output the graph keeps as a constant for later calls: the caller gets a copy,
        # or writing into it would change what they return; in its layout, as later calls
        # return it: a C-order copy made a channels-last zeros_like(x) contiguous)
        return self._rebuild(entry, [_wrap(x._data.copy(order="K"), x._device)
                                     if owner(x._data) in kept else x
                                     for x in given if isinstance(x, Tensor)])

    def _layout_after_trace(self, args: tuple, kwargs: dict, leaves: list, before: int,
                            redo: bool, inputs_moved: bool) -> tuple[int, str | None]:
        """The layout a new entry is kept under when the trace itself changed what the
        function reaches (a module setting its own attribute), and what changed where the
        entry must not run again. The layout before it, the first time an entry changes:
        the next call traces once more, with what this trace left (an initialization done on
        the first call is then not in the steady graph), and so does a later call with the
        layout from before (state reset to None: the graph would not set it again; that
        trace, a ``redo``, changes it again). An entry a second trace changes too (a counter
        bumped on every call) is a side effect of tracing: it is left out of the layouts
        from then on, and the entry is kept under the layout without it; but not where
        ``inputs_moved``: the code read a value an effect then changed (a scheduler's lr)."""
        if not self.reach.moved():
            return before, None
        old = self.layouts[before][0]
        self._look(args, kwargs, leaves)
        new = self.layouts[self.reach.index][0]
        changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        if redo:
            return before, "; ".join(moves(old, new)) or None
        for k in changed:
            self.traced_changes[k] = self.traced_changes.get(k, 0) + 1
        # (a tensor rebound on every call, a growing cache, stays in the key: its graph would
        # read the tensor the trace saw, so each call traces)
        repeated = {k for k in changed if self.traced_changes[k] > 1 and
                    "tensor" not in (_kind(old.get(k)), _kind(new.get(k)))}
        if not repeated or inputs_moved:
            return before, "; ".join(moves(old, new)) or None
        if (counter := counted_in_trace(self.name, repeated, self.reach)) is not None:
            warnings.warn(counter, stacklevel=user_stacklevel())
        self.side_effects |= repeated
        self._look(args, kwargs, leaves, again=True)
        return self.reach.index, None

    def _forget_oldest(self) -> None:
        """Drops the oldest signature's graph (so a model rebound again and again, in a
        notebook, is freed once its graphs are)."""
        key = next(iter(self.entries))
        del self.entries[key]
        self._release(key[5])

    def _release(self, index: int) -> None:
        """Lets layout ``index`` go of the objects it keeps alive, unless a graph or a cached
        reach still uses it."""
        if index not in self._used():
            self.layouts[index] = (None, None)  # (None equals no layout: never matched again)

    def _used(self) -> set[int]:
        """The layouts a graph, a cached reach or the current call's reach uses."""
        return {k[5] for k in self.entries} | {r.index for r in self.reaches.values()} | \
            ({self.reach.index} if self.reach is not None else set())

    def _why(self, key: tuple, names: list[str]) -> str:
        if not self.entries:
            return "first call: traced"
        previous = list(self.entries)[-1]
        layouts = (self.layouts[previous[5]][0], self.layouts[key[5]][0])
        return "traced again: " + "; ".join(
            differences(previous, key, self.reach, names, layouts) or ["a new signature"])

    # -- inspection ------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The IR of the most recently compiled signature (``print`` it)."""
        return self._last().graph

    @property
    def code(self) -> str:
        """The generated Python of the most recently compiled signature."""
        return self._last().generated.code

    def _last(self) -> Entry:
        if self.last is None:
            raise RuntimeError(f"ember.jit: {self.name} has not been called yet, so nothing is "
                               "compiled; call it once with example inputs first")
        return self.last


def _kind(entry: Any) -> Any:
    """The kind of a layout entry (``"tensor"``, ``"object"``, …), None for a plain value."""
    return entry[0] if isinstance(entry, tuple) and entry else None


_MANY_TRACES = 8  # compiling the same function this often is worth a warning
_MAX_TRACES = 64  # past this many, a call no graph fits runs eagerly (fullgraph: traces)
_KEEP_REACHES = 64  # what a function reaches, kept for this many sets of argument objects
_KEEP_ENTRIES = 32  # signatures (graphs) kept per compiled function, the oldest dropped first
_TENSOR = object()  # marks the output leaves that are tensors (None is a value too)


MODES = {
    "default": {},
    "debug": {name: False for name in PASSES},
}
