"""Tracing: run the function once, eagerly and for real, and write down every primitive.

The tracer is a dispatch handler (``ember.ops.primitive.push_handler``): each op still runs
(so the trace computes real values and autograd records its tape as usual), and the tracer
adds an equation to the graph. ``loss.backward()`` inside the function runs the engine, whose
rules call ops too, so the backward pass lands in the same graph; an optimizer step becomes an
effect equation. Values are followed by the identity of their backend arrays, so aliases
(``detach()``, the autograd engine's views of a tensor) need no special case, and an in-place
op simply makes the array hold a new variable.

Python that reads a traced value (``if x > 0``, ``.item()``, ``print(x)``) would freeze the
value seen while tracing into the graph, so it raises :class:`TraceError` naming the line.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ember.autograd.engine import VJP_HOOK, running_task
from ember.autograd.function import _CustomPrimitive
from ember.autograd.function import _run as run_function_eagerly
from ember.autograd.graph import keep_saved
from ember.dtypes import from_numpy
from ember.errors import OpError
from ember.jit.carried import CarriedState
from ember.jit.effects import Effects
from ember.jit.ir import Effect, Eqn, Graph, Source, StateRef, Var
from ember.jit.kernels import owner as memory_owner
from ember.jit.lr_reads import LrReads
from ember.jit.outside_memory import note_write
from ember.jit.sources import (
    DataDependentShape,
    TraceError,
    _at,
    called_by_user,
    not_traceable,
    other_thread_error,
    user_source,
    value_read_error,
)
from ember.jit.view_writes import ViewWrites
from ember.nn.backward_hooks import BackwardHookState, OutputIdentity
from ember.ops.primitive import (
    PRIMITIVES,
    TensorSpec,
    apply_below,
    pop_handler,
    push_handler,
)
from ember.ops.random import Sample
from ember.optim.optimizer import OPTIMIZER_TRACE
from ember.other_threads import OtherThreadsTensors
from ember.tensor import Tensor, _wrap, add_wrap_hook, remove_wrap_hook
from ember.version_counter import birth_mark

BIG = 64 * 1024  # bytes: a uniform constant this big becomes a broadcast equation


# (the files between a user's .numpy() and on_value_read)
_TENSOR_FILE, _HOOKS_FILE = Tensor.numpy.__code__.co_filename, apply_below.__code__.co_filename

class Tracer(Effects, ViewWrites):
    """The dispatch handler that records a :class:`Graph` while the function runs.

    ``found`` (:class:`ember.jit.discover.Reach`) names the tensors the function reaches
    before it runs: their arrays are state wherever they turn up (``.data``, ``.detach()``).
    """

    def __init__(self, name: str, found: Any, fill_bytes: int = BIG) -> None:
        self.graph = Graph(name)
        self.fill_bytes = fill_bytes  # (see _filled)
        self.labels = found.labels  # id(tensor) -> "fc1.weight"
        self.known = {id(t._data): (t._data, t) for t in found.tensors}
        self.found = found
        # gradients already there when tracing starts: an accumulation reads them
        self.entry_grad_arrays = {id(p._grad._data): p for p in found.params if p._grad is not None}
        # id(array) -> (weak reference to it, its current var): values are followed by array
        # identity; an array that dies leaves (so tracing holds no more memory than eager)
        self.env: dict[int, tuple[weakref.ref, Var]] = {}
        self.dynamic: set[Var] = set()  # vars whose value depends on inputs, state or RNG
        self.count = 0
        self.backward_of: Source | None = None  # set while a vjp rule runs
        self.ran_backward = False
        self.binds_grads = False  # an optimizer step sets .grad while the compiled code runs
        self.stepped: list[Any] = []  # the optimizers whose step the function takes
        # for each step effect over parameters that a reached tensor shares memory with:
        # id(a parameter or such tensor) -> its variables in and out of the effect
        self.moved_together: list[dict[int, tuple[Var, Var]]] = []
        # the caller's tensors whose values Python read (int(buffer)) before any op did: their
        # variable -> (the tensor, what first read it, where); constants of the graph, unless
        # the function writes the tensor (see finish)
        self.value_reads: dict[Var, tuple[Tensor, str, Source | None]] = {}
        self.node_source: dict[int, Source | None] = {}
        # id(param) -> its .grad when tracing started (or, for one found later, first seen)
        self.entry_grads: dict[int, Any] = {id(p): p._grad for p in found.params}
        self.inputs: list[Tensor] = []
        self.input_grads: list[Any] = []  # each argument's .grad when tracing started
        # the arguments whose .grad from before the call the function reads (a backward
        # accumulating into it), in the order their inputs follow the arguments' own
        self.grad_inputs: list[int] = []
        self.grad_input_vars: set[Var] = set()
        self.twins: dict[Var, set[Var]] = {}  # the inputs of arguments that are one array
        self.small_consts: dict[tuple, Var] = {}
        # id(the array owning a constant's memory) -> those constants (see keep_constants)
        self.const_memory: dict[int, list[Var]] = {}
        self.fresh = weakref.WeakValueDictionary()  # id(array) -> arrays made while tracing
        # tensors made here on memory that may be another's, written (see outside_memory)
        self.mark, self.outside = birth_mark(), {}
        self.eager_reason: str | None = None  # (set where no graph can replay the call)
        self.others = OtherThreadsTensors()  # what other threads make meanwhile (see var_of)
        self.just_fresh: int | None = None  # the array the last tensor made was first for
        self.view_root: dict[Var, Var] = {}  # a view's variable -> the variable it views
        # id(array) -> (a weak reference to it, its view's base, a stand-in for that base,
        # the view chain, the view's version counter): each array a view op made, while it
        # lives, for its detach() (see viewed_as)
        self.view_arrays: dict[int, tuple] = {}
        self.views: dict[Var, list[Var]] = {}
        self.state_views: dict[int, list[Var]] = {}  # id(a base not met yet) -> state viewing it
        # views whose base was written in place after them -> that memory (what of it is
        # read holds another value now)
        self.stale: dict[Var, Any] = {}
        # each reached module's buffers, and the tensors modules and objects carry from one
        # call to the next, when tracing starts (one the function rebinds is written back:
        # see rebound_tensors)
        self.carried = CarriedState(found)
        self.grown: list[tuple[Tensor, Var]] = []  # state rebound to values with history
        # module calls whose outputs carry backward hooks (their Python runs at each backward)
        self.backward_hooks: list[BackwardHookState] = []
        self.functions: list[str] = []  # the custom Functions' forward or backward running
        self.lr_reads = LrReads(found)  # (see lr_reads)
        for _, opt in found.optimizers:
            self.read_state_anew(opt)

    # -- variables ------------------------------------------------------------------------
    def new_var(self, array: Any, kind: str) -> Var:
        var = Var(self.count, array.shape, _dtype_of(array), kind)
        self.count += 1
        self.rebind(array, var)
        return var

    def read_state_anew(self, opt: Any) -> None:
        """``opt``'s state tensors are state wherever they turn up from now on: read at every
        call (not constants), and, after a step wrote them in place, read anew (not the
        values from before it)."""
        for label, t in self.found.optimizer_state(opt):
            self.labels.setdefault(id(t), label)
            self.known[id(t._data)] = (t._data, t)
            self.env.pop(id(t._data), None)

    def lookup(self, array: Any) -> Var | None:
        """The variable ``array`` holds now, if it was seen."""
        entry = self.env.get(id(array))
        return entry[1] if entry is not None and entry[0]() is array else None

    def add_input(self, t: Tensor) -> Var:
        """A tensor argument of the function."""
        before = self.lookup(t._data)
        var = self.new_var(t._data, "input")
        if before is not None and before.kind == "input":  # one array passed twice: the
            twins = self.twins.setdefault(before, {before})  # array holds either's var, so
            twins.add(var)  # neither is written unless the function writes it
            self.twins[var] = twins
        self.graph.inputs.append(var)
        self.inputs.append(t)
        self.input_grads.append(t._grad)
        self.dynamic.add(var)
        return var

    def add_state(self, t: Tensor, grad_of: Tensor | None = None) -> Var:
        var = self.new_var(t._data, "state")
        owner = grad_of if grad_of is not None else t
        label = self.labels.get(id(owner))
        if label is None:
            label = self.labels[id(owner)] = f"captured{len(self.graph.state)}"
        self.graph.state.append(StateRef(var, owner, label, grad_of is not None))
        self.dynamic.add(var)
        if grad_of is None:
            self.entry_grads.setdefault(id(t), t._grad)
            self.link_state_view(t, var)
        return var

    def var_of(self, t: Tensor) -> Var:
        """The variable a tensor holds now; a tensor first met here becomes state (found
        before tracing, or a leaf that requires grad, or a gradient of one) or a constant."""
        try:
            array = t._data
        except AttributeError:
            raise not_traceable(t) from None
        var = self.lookup(array)
        if var is not None:
            written = self.stale.get(var)
            if written is None or not t._device.xp.may_share_memory(array, written):
                return var  # (a copy taken before the write keeps the value it copied)
            anew = self.view_anew(t)
            if anew is None:
                where = _at(user_source())
                raise TraceError(f"ember.jit: a view (shape {tuple(t.shape)}) is read after an "
                                 f"in-place write to the tensor it views{where}; eager would "
                                 "see the new values through it, the graph would not. Hint: "
                                 "take the view after the write, or .clone() it before")
            return anew
        known = self.known.get(id(array))
        if known is not None and known[0] is array:
            var = self.add_state(known[1])
            return var if var not in self.stale else self.view_anew(t) or var
        if id(t) in self.labels or (t.requires_grad and t._node is None):
            return self.add_state(t)
        owner = self.entry_grad_arrays.get(id(array))
        if owner is not None and owner._grad is not None and owner._grad._data is array:
            return self.add_state(t, grad_of=owner)
        for i, g in enumerate(self.input_grads):
            if g is not None and g._data is array:
                return self._grad_input(i)
        if array.nbytes >= self.fill_bytes and array.size > 1 and id(array) in self.fresh:
            var = self._filled(array)
            if var is not None:
                return var
        if self.others.made(array):
            raise other_thread_error(tuple(t.shape))
        # equal small constants made while tracing share one variable (so CSE sees them)
        small = array.size <= 64 and id(array) in self.fresh
        key = (array.dtype.str, array.shape, array.tobytes()) if small else None
        var = self.small_consts.get(key) if small else None
        if var is not None:
            self.rebind(array, var)
            return var
        var = self.new_var(array, "const")
        self.graph.consts[var] = array
        self.const_memory.setdefault(memory_owner(array), []).append(var)
        if small:
            self.small_consts[key] = var
        return var

    def _grad_input(self, i: int) -> Var:
        """The ``.grad`` argument ``i`` had when the call started (a backward accumulates
        into it): one more input of the graph, after the arguments, read at every call."""
        var = self.new_var(self.input_grads[i]._data, "input")
        self.graph.inputs.append(var)
        self.grad_inputs.append(i)
        self.grad_input_vars.add(var)
        self.dynamic.add(var)
        return var

    def _filled(self, array: Any) -> Var | None:
        """A big array of one value made while tracing (``zeros_like`` in a vjp rule, say):
        an equation broadcasting that value, so the graph keeps no big constant and each call
        holds the memory only while eager would. "Big" is ``fill_bytes``; an export makes it
        every size, so that a causal mask's ``ones(T, T)`` is the same equation whatever the
        dynamic ``T`` it is traced with."""
        first = array.reshape(-1)[:1]
        if first[0] != first[0] or not (array == first[0]).all():
            return None
        value = _wrap(first.reshape(()).copy(), None)
        var = self.new_var(array, "eqn")
        self.graph.eqns.append(Eqn(PRIMITIVES["expand"], [self.var_of(value)],
                                   {"shape": tuple(array.shape)}, [var], user_source()))
        return var

    def _promote(self, var: Var, t: Tensor) -> None:
        """A constant turns out to be a tensor of the caller's that the function writes:
        it becomes state, read at every call and written back at the end."""
        del self.graph.consts[var]
        var.kind = "state"
        label = self.labels.setdefault(id(t), f"captured{len(self.graph.state)}")
        self.graph.state.append(StateRef(var, t, label))
        self.dynamic.add(var)
        self.entry_grads.setdefault(id(t), t._grad)

    def see_new_tensor(self, t: Tensor) -> None:
        """Every tensor made while tracing: an array never seen before is new (an alias of a
        known one, from ``detach()`` or ``.data``, is not)."""
        if threading.get_ident() != self.thread:  # (another thread's tensor)
            return
        key = id(t._data)
        self.just_fresh = None
        if key not in self.env and key not in self.known:
            self.just_fresh = None if key in self.fresh else key
            self.fresh[key] = t._data

    def rebind(self, array: Any, var: Var) -> None:
        key, env = id(array), self.env

        def forget(ref: weakref.ref) -> None:
            entry = env.get(key)
            if entry is not None and entry[0] is ref:
                del env[key]

        env[key] = (weakref.ref(array, forget), var)

    def invalidate_views(self, var: Var, memory: Any) -> None:
        """``memory``, the array holding ``var``, is about to hold another value: arrays
        that share it and hold a view of ``var`` (or what ``var`` views) go stale. A write
        into an empty tensor (``x[1:]`` of one row) changes no memory."""
        if not memory.size:
            return
        root = self.view_root.get(var, var)
        for v in (root, *self.views.get(root, ())):
            if v is not var:
                self.stale[v] = memory

    # -- the handler ----------------------------------------------------------------------
    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        in_vars = [self.var_of(t) for t in inputs]
        out = apply_below(self, prim, inputs, params)
        outs = out if isinstance(out, tuple) else (out,)
        out_vars = [self.new_var(o._data, "eqn") for o in outs]
        _check_infer(prim, in_vars, params, out_vars)
        # (an op of backward() outside any rule: accumulating a gradient)
        source = self.backward_of or user_source("backward " if running_task() else "")
        self.record(prim, in_vars, params, out_vars, source)
        if prim.view and outs[0]._data.base is not None:
            self.note_view(out_vars[0], in_vars[0])
            seen = self.view_record(outs[0])
            if seen is not None:
                self.note_view_array(outs[0], *seen)
        for o in outs:
            if o._node is not None:
                self.node_source[id(o._node)] = source
        return out

    def record(self, prim: Any, in_vars: list[Var], params: dict, out_vars: list[Var],
               source: Source | None) -> None:
        """Appends the equation; its outputs depend on the inputs, state or RNG where its
        inputs do (or it samples)."""
        self.graph.eqns.append(Eqn(prim, in_vars, dict(params), out_vars, source))
        if isinstance(prim, Sample) or any(v in self.dynamic for v in in_vars):
            self.dynamic.update(out_vars)

    def apply_function(self, cls: type, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """A custom ``Function`` runs as in eager code (its ops are recorded); one that puts a
        module's backward hooks on its outputs is noted (see :attr:`backward_hooks`)."""
        if cls is OutputIdentity and not any(s is args[0] for s in self.backward_hooks):
            self.backward_hooks.append(args[0])
        self.functions.append(f"the forward of autograd.Function {cls.__name__}")
        try:
            return run_function_eagerly(cls, args, kwargs)
        finally:
            self.functions.pop()

    def on_alias(self, alias: Tensor, x: Tensor) -> None:
        if self.just_fresh == id(x._data):  # (the alias, just made, is no new array: x, a
            self.fresh.pop(id(x._data), None)  # tensor from outside met here, is not fresh)
        self.var_of(x)  # (same array: the alias reads x's variable)
        self.keep_constants(x._data)  # (about to be written)
        note_write(self.outside, x, self.mark)

    def keep_constants(self, array: Any) -> None:
        """``array``'s memory is about to be written in place: the constants read from that
        memory (``b = zeros(()); y = x * b; b.add_(1)``, or a view of it) keep the values they
        had, as copies; the graph holds no reference that the write, or a later call's, changes."""
        for var in self.const_memory.pop(memory_owner(array), ()):
            if var in self.graph.consts:
                self.graph.consts[var] = self.graph.consts[var].copy()

    def on_data_set(self, t: Tensor, value: Tensor) -> None:
        """``t.data = value`` on a tensor from before the call (an argument, a tensor it
        reaches): ``t`` is state (or the argument) as it was, and ``value``'s array has its
        variable (a constant: a copy) before ``t`` holds it, so ``t``'s end value is written
        at every call (``T.data = zeros(3); T.add_(1)`` read ``T`` again and added up).
        A constant over memory that may outlive the call (``ember.from_numpy(G)``), which
        that write would freeze, is noted for :mod:`.outside_memory`; any ``t`` given a view
        made in the call (``T.data = U[1]``) is that view (see ``share_view``)."""
        if threading.get_ident() != self.thread:
            return
        if t._vc.born <= self.mark:
            if value._view is not None and value._vc.born <= self.mark:
                # (T.data = U[1], U from before the call: from the second call on T views U
                # already, and the graph, traced with T apart, read U[1] one call behind)
                self.eager_reason = (
                    f"runs eagerly: it sets .data of a tensor from before the call to a view "
                    f"of another such tensor ({user_source()}); a graph cannot follow the "
                    "aliasing that leaves between calls. Hint: write into the view itself "
                    "(U[1].add_(1)), or set .data once, outside the function")
            self.var_of(t)
            if self.var_of(value).kind == "const":
                note_write(self.outside, value, self.mark, held=True)
            self.keep_constants(value._data)  # (t's memory now: the graph keeps a copy)
        self.share_view(t, value)

    def on_saved_copy(self, copy: Tensor, x: Tensor) -> None:
        """An in-place op's backward keeps ``copy`` of ``x``'s value before the write (see
        ``ember.ops.inplace``): in the graph that is the same variable, not a constant."""
        var = self.lookup(x._data)
        if var is not None:  # (else x's array is another handler's: a vmap's sample view)
            self.rebind(copy._data, var)

    def on_inplace(self, x: Tensor, result: Tensor) -> None:
        """``result`` was written into ``x``'s memory: the array now holds result's var (and,
        where ``x`` views another array, that array a new var: see :mod:`.view_writes`)."""
        seen = self.view_record(x)  # (also for a detach() of a view)
        if seen is not None:
            base, chain = self.traced_base(*seen)
            # (else x is an argument the caller made as a view, or a detach of a view whose
            # base was written since, an effect's gradient: written whole)
            if chain and (x._view is not None or self.lookup(base._data) not in self.stale):
                self.write_into_view(x, result, base, chain)
                return
        target, new = self.lookup(x._data), self.own_value(x, self.var_of(result))
        if target is not None:
            self.note_outside_write(target, x)
            self.invalidate_views(target, x._data)
            # (the value written is no stale view, even where it views what x held: a
            # second x.fill_(v) of a value equal to the first's, an expand of one constant)
            self.stale.pop(new, None)
        self.rebind(x._data, new)

    def note_outside_write(self, var: Var, t: Tensor) -> None:
        """``t``, holding ``var``, is written in place: a tensor from outside that was a
        constant becomes state (the world sees the change)."""
        if var.kind == "const" and id(t._data) not in self.fresh:
            self._promote(var, t)

    def on_value_read(self, t: Tensor, what: str) -> None:
        if what == "numpy()" and t._vc.born <= self.mark and self.eager_reason is None and \
                called_by_user(_TENSOR_FILE, _HOOKS_FILE):
            self.eager_reason = (  # (as torch.compile breaks its graph at .numpy())
                f"runs eagerly: it takes .numpy() of a tensor from before the call "
                f"({user_source()}), whose writes no graph replays. Hint: use ember ops")
        var = self.lookup(t._data)
        if var is None and (var := self.var_of(t)).kind == "state":  # (the caller's)
            self.value_reads[var] = (t, what, user_source())
        elif var in self.dynamic and var not in self.value_reads and not self.flat_read(t, what):
            raise value_read_error(t, what, user_source(), self.functions[-1:])

    # -- backward (optimizer steps and other effects: see effects.Effects) ---------------
    def around_vjp(self, node: Any, grads: Any) -> Any:
        self.ran_backward = True
        fwd = self.node_source.get(id(node))
        saved = self.backward_of
        self.backward_of = Source(fwd.file, fwd.line, fwd.text, f"backward of {node.prim.name} "
                                  "at ") if fwd is not None else user_source("backward ")
        custom = isinstance(node.prim, _CustomPrimitive)
        if custom:
            self.functions.append(f"the backward of autograd.Function {node.prim.name}")
        try:
            return node.prim.vjp(node, *grads)
        finally:
            self.backward_of = saved
            if custom:
                self.functions.pop()

    def __enter__(self) -> Tracer:
        push_handler(self, grads_in_place=True)
        self._saved_vjp = VJP_HOOK.around
        VJP_HOOK.around = self.around_vjp
        OPTIMIZER_TRACE.tracer = self
        self.thread = threading.get_ident()
        add_wrap_hook(self.see_new_tensor)
        self.others.__enter__()
        self.lr_reads.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.others.__exit__()
        remove_wrap_hook(self.see_new_tensor)
        OPTIMIZER_TRACE.tracer = None
        self.eager_reason = self.lr_reads.restore() or self.eager_reason
        VJP_HOOK.around = self._saved_vjp
        pop_handler(self)

    # -- the graph's ends ------------------------------------------------------------------
    def finish(self, outputs: list) -> Graph:
        """Records outputs, the final value of every state tensor and argument written, and
        the final ``.grad`` of every parameter and argument whose gradient changed."""
        g = self.graph
        g.outputs = [self.var_of(t) if isinstance(t, Tensor) else None for t in outputs]
        self.rebound_tensors(outputs)
        self.carried.refuse_untracked(lambda t: self.lookup(t._data) in self.dynamic, g.name)
        for ref in list(g.state):
            t = ref.tensor
            if ref.grad:  # a .grad read, then rebound or written in place: the end .grad
                if t._grad is not self.entry_grads.get(id(t)) or (
                        t._grad is not None and self.var_of(t._grad) is not ref.var):
                    self.end_grad(t)
                continue
            final = self.var_of(t)
            if final is not ref.var:
                g.writes.append((t, final))
            # (an optimizer effect binds .grad at run time: the end state is then written too)
            if t._grad is not self.entry_grads.get(id(t)) or (t.requires_grad and self.binds_grads):
                self.end_grad(t)
        written = {id(t) for t, _ in g.writes} | {
            id(t) for opt in self.stepped for _, t in self.found.optimizer_state(opt)}
        for t, what, where in self.value_reads.values():
            if id(t) in written and not self.flat_read(t, what):  # (a counter: value kept)
                raise TraceError(
                    f"ember.jit: {what} reads the value of {self.labels.get(id(t), 'a tensor')}"
                    f" (shape {tuple(t.shape)}){_at(where)}, which this function also writes "
                    "(a counter): the graph would keep the value read while tracing. Hint: "
                    "keep the count as a Python number, compute with tensor ops instead, or "
                    "move the call out of the compiled function (an averaged model's "
                    "update_parameters after the compiled step)", _at(where))
        self.refuse_history_across_calls(outputs)
        arguments = [v for v in g.inputs if v not in self.grad_input_vars]
        for i, (t, var) in enumerate(zip(self.inputs, arguments)):
            final = self.var_of(t)
            if final is not var and final not in self.twins.get(var, ()):
                g.arg_writes.append((i, final))
            if t._grad is not self.input_grads[i]:
                g.arg_grads.append((i, None if t._grad is None else self.var_of(t._grad)))
            elif t._grad is not None and self.lookup(t._grad._data) not in (
                    None, *self.grad_input_vars):
                g.arg_grads.append((i, self.var_of(t._grad)))  # (a sum written into it)
                g.arg_grads_in_place.append(i)
        return g

    def refuse_history_across_calls(self, outputs: list) -> None:
        """State rebound to a tensor that requires grad (``self.h = h``, not detached), where
        what the call differentiates (an output that requires grad, a gradient it computes)
        depends on the state's old value: in eager code the next call's backward goes on
        into this call's history (backpropagation through calls), which compiled calls do
        not keep. Refused. (A rebound value nothing differentiable reads from, a running
        statistic kept without ``.detach()``, is kept as its value.)"""
        g = self.graph
        ends = {self.var_of(t) for t in outputs if isinstance(t, Tensor) and t.requires_grad} | \
            {v for _, v in [*g.grads, *g.arg_grads] if v is not None} | \
            {v for e in g.eqns if isinstance(e.prim, Effect) for v in e.inputs}
        for old, var in self.grown:
            after = {var}
            for e in g.eqns:
                if not after.isdisjoint(e.inputs):
                    after.update(e.outputs)
            if not after.isdisjoint(ends):
                label = self.labels.get(id(old), "a state")
                raise TraceError(
                    f"ember.jit: the function rebinds {label} to a tensor that requires grad "
                    f"(shape {tuple(old.shape)}) and differentiates through its old value: in "
                    "eager code the next call's backward goes on into this call's history "
                    "(backpropagation through calls), which compiled calls do not keep. Hint: "
                    f"store a .detach() in {label} (truncated backpropagation through time), "
                    "or run this module eagerly")

    def end_grad(self, t: Tensor) -> None:
        """Records ``t``'s ``.grad`` at the end (once): written in place when it is still the
        tensor the call started with, as eager writes it."""
        g = self.graph
        if any(p is t for p, _ in g.grads) or (t._grad is not self.entry_grads.get(id(t)) and
                                                self.others.made(getattr(t._grad, "_data", None))):
            return  # (the second: another thread's backward made it meanwhile, not this call)
        g.grads.append((t, None if t._grad is None else self.var_of(t._grad)))
        if t._grad is not None and t._grad is self.entry_grads.get(id(t)):
            g.grads_in_place.append(t)

    def rebound_tensors(self, outputs: list) -> None:
        """A module's buffer or tensor attribute (or a tensor attribute of the user's object,
        or a tuple, list or dict of tensors there) that the function rebound to new tensors of
        the same shapes, dtypes and device (``self.running = 0.9 * self.running + 0.1 * m``,
        an RNN's ``self.h = h.detach()``, an LSTM's ``self.state = (h, c)``) is a state write,
        as an in-place one is: the holder gets its tensors back, holding the new values, and
        each call writes the values into them. (One rebound to another shape is a new layout:
        the next call traces again.) All are read before any is written, as Python rebinds
        them (``self.prev = self.h; self.h = new``). The history of the ``outputs`` reads
        the old values still, as eager's would (backward of this call, run outside it)."""
        pairs = self.carried.put_back()
        keep_saved(outputs, [old for old, _ in pairs])
        olds = {id(old._data) for old, _ in pairs}
        values = []
        for old, new in pairs:
            read = self.var_of(old)  # (state, read at every call, if the function never read it)
            if new.requires_grad:
                self.grown.append((old, read))
            shares = id(new._data) in olds or new._data.base is not None
            values.append((self.var_of(new), new._data.copy() if shares else new._data))
        for (old, _), (var, value) in zip(pairs, values):
            old._data[...] = value  # (what this call leaves, as the compiled calls will)
            old._vc.value += 1
            self.rebind(old._data, var)


def _check_infer(prim: Any, in_vars: list[Var], params: dict, out_vars: list[Var]) -> None:
    """The graph's shapes and dtypes are what the primitive's ``infer`` rule says (what memory
    planning and export rely on); a rule that disagrees with its own kernel is a bug. A rule
    that refuses (the kernel ran) has an output size read from the data: the error gets the
    user's line, and a hint when it has none."""
    try:
        specs = prim.infer(*(TensorSpec(v.shape, v.dtype) for v in in_vars), **params)
    except OpError as e:
        head, _, hint = str(e).partition(" Hint: ")
        src = user_source()
        raise DataDependentShape(f"{head.rstrip('.')}; the call{_at(src)}. Hint: "
                                 f"{hint or _DATA_HINT}", prim.name, src) from None
    specs = specs if prim.nout > 1 else (specs,)
    for i, (sp, var) in enumerate(zip(specs, out_vars)):
        if tuple(sp.shape) != var.shape or sp.dtype is not var.dtype:
            blame = getattr(prim, "infer_mismatch", "a bug in this primitive's rules; please "
                            "report it")
            raise OpError(f"{prim.name}: the infer rule gives output {i} as {sp}, the kernel "
                          f"made {var.shape} {var.dtype.name}: {blame}")


_DATA_HINT = ("select with ember.where(mask, x, 0) instead of x[mask]; where a library call "
              "needs it, compile the model that feeds it (ember.jit.compile(model)) and make "
              "that call after it, outside")


def _dtype_of(array: Any) -> Any:
    return from_numpy(array.dtype)
