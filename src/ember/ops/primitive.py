"""The primitive registry and the one entry point every op goes through: :func:`apply`.

A primitive defines an op once: ``forward`` on backend arrays, ``infer`` (output shape and
dtype from input specs, with a clear error), ``vjp`` and ``jvp`` written in Ember ops, and
``flops``. Autograd, tracing, profiling and export all derive from these rules. The specs
those rules read are :mod:`ember.ops.tensor_spec`'s; the errors for input an op does not take
(complex, limited dtypes, mixed devices, a backend failure explained) :mod:`ember.ops.op_errors`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ember.autograd.grad_mode import GRAD, refuse_inference_saved
from ember.autograd.graph import WORTH_DROPPING, Node
from ember.autograd.saved_hooks import HOOKS_OPEN, SAVED_HOOKS, Unsaved
from ember.backend import get_default_device
from ember.dtypes import COMPLEX_DTYPES, FLOAT8_DTYPES, FLOATING_DTYPES, LIMITED_DTYPES, DType
from ember.errors import ArgumentError, EmberError, GradError, refuse_non_tensor
from ember.ops.op_errors import (  # noqa: F401 (complex_error, refuse_*: imported from here)
    check_limited,
    common_device,
    complex_error,
    complex_grad_error,
    explain_failure,
    refuse_complex,
    refuse_limited,
)
from ember.ops.tensor_spec import TensorSpec, spec  # noqa: F401 (spec: imported from here)
from ember.tensor import Tensor, _wrap, set_data_set_hook, set_detach_hook, set_value_read_hook
from ember.version_counter import INFERENCE_ALIVE, VersionCounter

_FLOAT = frozenset(d.np for d in FLOATING_DTYPES + FLOAT8_DTYPES + COMPLEX_DTYPES)  # take grads
_COMPLEX = frozenset(d.np for d in COMPLEX_DTYPES)
_LIMITED = frozenset(d.np for d in LIMITED_DTYPES)  # (NumPy's dtypes: the eager path's test)



class Primitive:
    """Base class of primitives; subclass it and decorate with :func:`primitive`.

    Class attributes:
        name: the op's name in errors, graphs and profiles.
        nout: number of outputs ``forward`` returns (a tuple when above 1).
        differentiable: False for ops with no gradient (comparisons, argmax, sampling).
        view: the output may share memory with input 0 (reshape, transpose, slicing), so it
            shares input 0's version counter.
        save_inputs / save_outputs: which values the vjp rule reads; the engine keeps those
            and checks them for in-place modification before backward. ``save_outputs`` may
            name output indices, e.g. ``(1, 2)``: a norm's statistics but not its output.
        allocates: the first output is a new array, never an input nor a view of one (the
            jit's memory planning may then give its buffer to a later op); any others are
            no views of the inputs either.
        writes_input: the output is a copy of input 0 with some elements changed
            (``index_put``, ``view_scatter``), and ``forward(..., in_place=True)`` changes
            them in input 0 itself: the jit's memory planning asks for that where input 0's
            buffer dies there.
        pure: False for ops whose every application matters besides its value (sampling
            draws from a generator, collectives communicate): graph passes never fold,
            merge or drop them.
        read_only_view: a view that in-place ops may not write through (``as_strided``, whose
            elements may overlap).
        jvp_takes_none: the jvp rule takes None for an input with no tangent (a constant),
            instead of zeros, so that ``inf * 0`` never turns a constant's term into NaN.
        complex_grad: the vjp and jvp rules hold for complex tensors, in PyTorch's convention
            (the gradient of a real loss L at z = x + iy is dL/dx + i dL/dy). Recording a
            complex output of a primitive without it raises a DTypeError; the check costs the
            recording path one comparison, and eager code without gradients nothing.
        input_layout: the output is dense with its dimensions in input 0's stride order (as
            NumPy's order-"K" results are), though its shape differs; meta results follow it.
        limited_dtypes: which of PyTorch's limited-support dtypes (uint16/32/64, the float8s)
            the primitive computes on, as PyTorch does; eager execution refuses the others,
            testing only the first input's dtype (the data input of every op that takes one).
            Views, which only move elements, take them all.
    """

    name = "primitive"
    nout = 1
    differentiable = True
    view = False
    allocates = False
    writes_input = False
    save_inputs = True
    save_outputs = False
    pure = True
    read_only_view = False
    jvp_takes_none = False
    complex_grad = False
    input_layout = False
    limited_dtypes: frozenset[DType] = frozenset()

    def forward(self, xp: Any, *arrays: Any, **params: Any) -> Any:
        raise NotImplementedError

    def infer(self, *specs: TensorSpec, **params: Any) -> TensorSpec | tuple[TensorSpec, ...]:
        raise NotImplementedError(f"{self.name} has no infer rule")

    def vjp(self, ctx: Node, *grads: Tensor | None) -> Tensor | None | tuple:
        raise NotImplementedError(f"{self.name} has no vjp rule")

    def jvp(self, ctx: Node, *tangents: Tensor | None) -> Tensor | tuple:
        raise NotImplementedError(f"{self.name} has no jvp rule")

    def reads(self, ctx: Node, i: int) -> bool:
        """Whether the vjp reads input ``i``'s values (with ``save_inputs``); an in-place change
        of an input it does not read is harmless. Override to be precise, e.g. ``a * b`` reads
        ``a`` only when ``b`` needs a gradient."""
        return True

    def grad_region(self, ctx: Node) -> Any:
        """For a view whose input gradient is its output gradient placed in a region of zeros
        (a slice): that region as a backend index key, else None. The engine then adds each
        such gradient into the region of one buffer instead of padding it with zeros."""
        return None

    def skip_outputs(self, params: dict, unread: set[int]) -> dict | None:
        """Params that spare computing the outputs in ``unread`` (nothing will read them), or
        None when the op cannot; graph passes ask it. E.g. max pooling skips its winners."""
        return None

    def meta_layout(self, out: Any, /, *arrays: Any, **params: Any) -> Any:
        """A one-output op's result on the meta device, from ``out`` (a C-order meta array of
        the ``infer`` spec) and the input arrays: override where the op lays its result out
        otherwise (``x[key]`` in PyTorch's layout)."""
        return out

    def flops(self, *specs: TensorSpec, **params: Any) -> int:
        """Floating-point operations of one application (0 unless a rule says more)."""
        return 0

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


PRIMITIVES: dict[str, Primitive] = {}
# Counts primitives replaced under their name (a custom op defined again): compiled functions
# key on it, so a graph that holds a replaced primitive is traced again.
REPLACED = VersionCounter()


def primitive(cls: type[Primitive]) -> Primitive:
    """Class decorator: registers the primitive and returns its single instance.

    Example:
        >>> @primitive
        ... class Neg(Primitive):
        ...     name = "neg"
        ...     def forward(self, xp, a): return xp.negative(a)
    """
    if cls.name in PRIMITIVES:
        raise ArgumentError(f"a primitive named {cls.name!r} is already registered")
    instance = cls()
    PRIMITIVES[cls.name] = instance
    return instance


def replace_primitive(prim: Primitive) -> None:
    """Registers ``prim`` under its name, replacing any earlier primitive of that name (a
    custom op defined again); compiled functions then trace again."""
    if prim.name in PRIMITIVES:
        REPLACED.value += 1
    PRIMITIVES[prim.name] = prim


class _Dispatch(threading.local):
    """Who runs this thread's ops: ``handler`` is None for plain eager execution (the fast
    path), or the innermost active interposer (a trace, the profiler, anomaly mode).
    ``casting`` is True while a handler that casts operands (autocast) is active: op wrappers
    then leave operands of different dtypes to it instead of refusing them (and the handler
    casts nothing while it is False: see :func:`not_casting`). Per thread, as
    PyTorch's dispatch state is: a trace in one thread never sees another thread's ops."""

    def __init__(self) -> None:
        self.handler: Callable | None = None
        self.stack: list[Callable] = []
        self.casting = False
        self.observers: list[Callable] = []  # handlers that only watch (the profiler)
        self.grad_writers: list[Callable] = []  # handlers that record in-place .grad sums
        # handlers that change every op by a policy (autocast): they stay active inside the
        # branches of higher-order ops (ember.cond), which set the other handlers aside
        self.ambient: list[Callable] = []

    def only_observers(self) -> bool:
        """Whether ops compute plain eager values: every active handler only watches them."""
        return all(h in self.observers for h in self.stack)

    def transforming(self) -> bool:
        """Whether a handler that records or rewrites ops is active (jit, vmap, forward mode),
        not only watchers (the profiler) and policies (autocast), which compute eagerly."""
        return any(h not in self.observers and h not in self.ambient for h in self.stack)

    def grads_in_place(self) -> bool:
        """Whether a backward may add into an existing ``.grad`` in place, as eager does:
        every active handler watches ops, or records that write as eager makes it (a jit
        trace)."""
        return all(h in self.observers or h in self.grad_writers for h in self.stack)


DISPATCH = _Dispatch()
_active_handlers = 0  # in all threads: the value-read hook is on while there is one (it asks
_active_lock = threading.Lock()  # only the reading thread's handlers)


def push_handler(handler: Callable[[Primitive, tuple, dict], Any], observer: bool = False,
                 grads_in_place: bool = False, ambient: bool = False) -> None:
    """Makes ``handler(prim, inputs, params)`` receive every op until :func:`pop_handler`.

    A handler computes by calling :func:`apply_below`, which hands the op to the handler
    beneath it, or runs it eagerly at the bottom; so handlers nest. An ``observer`` only
    watches ops that compute as in plain eager mode (the profiler, anomaly mode); a handler
    with ``grads_in_place`` records a backward's in-place sum into an existing ``.grad``; an
    ``ambient`` one applies a policy to every op (autocast) and stays active inside the
    branches of higher-order ops.
    """
    if observer:
        DISPATCH.observers.append(handler)
    if grads_in_place:
        DISPATCH.grad_writers.append(handler)
    if ambient:
        DISPATCH.ambient.append(handler)
    DISPATCH.stack.append(handler)
    DISPATCH.handler = handler
    global _active_handlers
    with _active_lock:
        _active_handlers += 1
        set_value_read_hook(_tell_value_read)
        set_detach_hook(_tell_detach)
        set_data_set_hook(_tell_data_set)


def pop_handler(handler: Callable) -> None:
    """Removes ``handler`` (pushed before) from the dispatch stack."""
    DISPATCH.stack.remove(handler)
    if handler in DISPATCH.observers:
        DISPATCH.observers.remove(handler)
    if handler in DISPATCH.grad_writers:
        DISPATCH.grad_writers.remove(handler)
    if handler in DISPATCH.ambient:
        DISPATCH.ambient.remove(handler)
    DISPATCH.handler = DISPATCH.stack[-1] if DISPATCH.stack else None
    global _active_handlers
    with _active_lock:
        _active_handlers -= 1
        if not _active_handlers:
            set_value_read_hook(None)
            set_detach_hook(None)
            set_data_set_hook(None)


def _tell_value_read(t: Tensor, what: str) -> str | None:
    """Python is about to read ``t``'s values: each active handler, in the order pushed
    (outermost first), may refuse (vmap does for batched tensors, whose one value per sample
    Python cannot see), or give the text to print (vmap does for ``what == "printing"``:
    every sample). The first hook that returns text wins: the handlers after it are not
    asked."""
    for handler in DISPATCH.stack:
        hook = getattr(handler, "on_value_read", None)
        if hook is not None and (shown := hook(t, what)):
            return shown
    return None


def _tell_data_set(t: Tensor, value: Tensor) -> None:
    """``t.data = value`` is about to run: each active handler may refuse (vmap does where
    either is batched: the assignment would bypass its batching and its tape)."""
    for handler in DISPATCH.stack:
        hook = getattr(handler, "on_data_set", None)
        if hook is not None:
            hook(t, value)


def _tell_detach(out: Tensor, t: Tensor) -> None:
    """``out = t.detach()`` was made: the innermost active handler with an ``on_detach`` hook
    that answers True (it owns ``t``: vmap's per-sample view) detaches what stands behind
    ``t``, below itself, so the handlers beneath see that detach in turn."""
    stack, handler = DISPATCH.stack, DISPATCH.handler
    for h in reversed(stack[:stack.index(handler) + 1] if handler in stack else ()):
        hook = getattr(h, "on_detach", None)
        if hook is not None and hook(out, t):
            return


def per_sample(t: Tensor) -> bool:
    """Whether ``t`` holds one value per sample of an active ``vmap`` (a batched tensor,
    whose values Python cannot read as one)."""
    for handler in DISPATCH.stack:
        hook = getattr(handler, "per_sample", None)
        if hook is not None and hook(t):
            return True
    return False


def apply(prim: Primitive, *inputs: Tensor, **params: Any) -> Any:
    """Applies a primitive to tensors: the one entry point of every op."""
    if _active_handlers:  # (a global read: the thread-local lookup only when some are)
        handler = DISPATCH.handler
        if handler is not None:
            return handler(prim, inputs, params)
    return eager(prim, inputs, params)


def apply_below(handler: Callable, prim: Primitive, inputs: tuple, params: dict) -> Any:
    """From inside ``handler``: runs the op with the handlers beneath it."""
    return run_below(handler, apply, prim, *inputs, **params)


def run_below(handler: Callable, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """From inside ``handler``: calls ``fn`` with only the handlers beneath it active (so a
    rule the handler evaluates is not seen by the handler itself)."""
    stack = DISPATCH.stack
    i = stack.index(handler)
    saved = DISPATCH.handler
    DISPATCH.handler = stack[i - 1] if i else None
    try:
        return fn(*args, **kwargs)
    finally:
        DISPATCH.handler = saved


def not_casting(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` with casting handlers (autocast) leaving its ops alone, as PyTorch's
    autocast leaves in-place and ``out=`` ops alone."""
    if not DISPATCH.casting:
        return fn(*args)
    DISPATCH.casting = False
    try:
        return fn(*args)
    finally:
        DISPATCH.casting = True


def eager(prim: Primitive, inputs: tuple, params: dict) -> Any:
    """Computes a primitive now and records it on the tape when a gradient is needed."""
    n = len(inputs)
    try:  # (free until it catches)
        if n == 1:
            dev = inputs[0]._device
            arrays = (inputs[0]._data,)
        elif n == 2:
            a, b = inputs
            dev = a._device
            if b._device is not dev:
                dev = common_device(prim, inputs)
            arrays = (a._data, b._data)
        elif n:
            dev = inputs[0]._device
            for t in inputs:
                if t._device is not dev:
                    dev = common_device(prim, inputs)
                    break
            arrays = tuple(t._data for t in inputs)
        else:
            dev = params.get("device") or get_default_device()
            arrays = ()
    except AttributeError:
        for i, t in enumerate(inputs):
            refuse_non_tensor(prim.name, f"input {i}" if i else "input", t)
        raise
    if n and arrays[0].dtype in _LIMITED:
        check_limited(prim, arrays[0].dtype)
    try:
        if dev.is_meta:  # no data: the infer rule is the kernel
            from ember.ops.meta import meta_forward

            out = meta_forward(prim, inputs, params)
        else:
            out = prim.forward(dev.xp, *arrays, **params)
    except EmberError:
        raise
    except Exception as exc:
        raise explain_failure(prim, inputs, params, exc) from exc
    # a 0-d result may come back as a backend scalar; a tensor always holds a (writable) array
    if prim.nout == 1:
        if not out.ndim:
            out = dev.xp.asarray(out)
    else:
        out = tuple(o if o.ndim else dev.xp.asarray(o) for o in out)

    record = False
    if GRAD.enabled and prim.differentiable:
        for t in inputs:
            if t._view is not None and t._view.version != t._vc.value:
                refresh_view(t)  # its base changed in place since: take the new history
            if t._requires_grad:
                record = True
    if prim.view:
        return _view_of(inputs[0], out, dev, prim, params, record)
    if not record or not prim.nout:  # (an op with no outputs: nothing to record)
        if prim.nout == 1:
            return _wrap(out, dev)
        return tuple(_wrap(o, dev) for o in out)

    outs = (out,) if prim.nout == 1 else out
    tensors = [_wrap(o, dev, o.dtype in _FLOAT, None, i) for i, o in enumerate(outs)]
    if outs[0].dtype in _COMPLEX and not prim.complex_grad:
        raise complex_grad_error(prim, inputs)
    _record(prim, inputs, params, tensors, dev)
    return tensors[0] if prim.nout == 1 else tuple(tensors)


def _record(prim: Primitive, inputs: tuple, params: dict, tensors: list, dev: Any) -> None:
    node = Node(prim, inputs, params,
                tuple(t._vc.value for t in inputs) if prim.save_inputs else None,
                _saved_outputs(prim.save_outputs, tensors) if prim.save_outputs else None,
                dev)
    if INFERENCE_ALIVE and prim.save_inputs and not DISPATCH.stack:  # (transforms'
        for i, t in enumerate(inputs):  # tensors stand for theirs, as torch.func's wrappers)
            if t._vc.inference and prim.reads(node, i):
                refuse_inference_saved(prim.name, i, t)
    for t in tensors:
        if t._requires_grad:  # integer and bool outputs (indices, masks) have no gradient
            t._node = node
    if not HOOKS_OPEN.count or SAVED_HOOKS.top is None:  # (hooks make their own choice)
        drop_unread_inputs(node)


def _saved_outputs(which: bool | tuple[int, ...], tensors: list) -> tuple:
    """The node's record of its outputs: (array, counter, version), None where not kept."""
    return tuple((t._data, t._vc, t._vc.value) if which is True or i in which else None
                 for i, t in enumerate(tensors))


def drop_unread_inputs(node: Node) -> None:
    """Lets the tape stop holding inputs whose values the rule never reads (``save_inputs``
    False, or ``reads`` False): only their shape and history stay, so activations are freed as
    soon as nothing else needs them. Parameters (alive anyway), small inputs (too little memory
    to be worth the bookkeeping) and, where ``save_inputs`` is False, integer and bool leaves
    (the index tensors a rule may read, as saved-tensor hooks pack them) are kept: a constant
    float operand (constant padding's filled buffer, alpha dropout's shift) is not."""
    prim = node.prim
    inputs = node.inputs
    if prim.save_inputs:
        if type(prim).reads is Primitive.reads:
            return
        # ``reads`` speaks for constants too (a large operand of ``where`` it never reads)
        kept = [(t._requires_grad and t._node is None) or _held_bytes(t._data) < WORTH_DROPPING
                or prim.reads(node, i) for i, t in enumerate(inputs)]
    else:
        kept = [(t._node is None and (t._requires_grad or t._data.dtype not in _FLOAT))
                or _held_bytes(t._data) < WORTH_DROPPING for t in inputs]
    if not all(kept):
        node.inputs = tuple(t if keep else Unsaved(t) for t, keep in zip(inputs, kept))


def _held_bytes(array: Any) -> int:
    """The memory holding ``array`` keeps alive: its base's, for a view (a small slice of a
    large activation holds all of it)."""
    base = getattr(array, "base", None)
    return array.nbytes if base is None else getattr(base, "nbytes", array.nbytes)


_AS_BASE = object()  # (a view's shown base is its base)


class ViewInfo:
    """What makes a tensor a view: its base (the tensor owning the memory), the chain of view
    primitives from the base to it, the memory's version when its history was made, and
    whether it was made under ``no_grad`` from a tensor that requires grad (writing into such
    a view with grad enabled is refused, as in PyTorch: its history is not the base's), and
    ``custom``: for an output of a custom Function that is a view (or an input returned as
    is), ``("Output i of F", note)``, its name and the why and hint of the error
    (``custom_view_message``): a write into it, or into its base, would override F's backward,
    so both are refused as in PyTorch."""

    __slots__ = ("_base", "chain", "version", "without_grad", "_shown", "custom")

    def __init__(self, base: Tensor, chain: tuple, version: int, without_grad: bool = False,
                 shown: Tensor | None | object = _AS_BASE, custom: tuple | None = None) -> None:
        self._base, self.chain, self.version = base, chain, version
        self.without_grad, self.custom = without_grad, custom
        # the tensor ``_base`` names, the base as PyTorch sees it (kept only where it is not
        # ``base``: a reference more would count as another tensor on the memory in resize_)
        self._shown = _AS_BASE if shown is base else shown

    @property
    def shown(self) -> Tensor | None:
        """The tensor PyTorch calls this view's base (None: as PyTorch sees it, no view; a
        tensor whose shape changed in place is a view of its old self here)."""
        return self._base if self._shown is _AS_BASE else self._shown

    @shown.setter
    def shown(self, tensor: Tensor | None) -> None:
        self._shown = _AS_BASE if tensor is self._base else tensor

    @classmethod
    def extending(cls, src: Tensor, prim: Primitive, params: dict,
                  without_grad: bool = False) -> ViewInfo:
        """The record of the view ``prim(src, **params)``: ``src``'s base and chain, one step
        longer (``src`` is the base where it is no view)."""
        info = src._view
        if info is None:
            return cls(src, ((prim, params),), src._vc.value, without_grad)
        raw, shown = info._base, info._shown  # (``base`` and ``shown`` without their calls)
        base = raw if raw._view is None else raw._view.base
        shown = raw if shown is _AS_BASE else src if shown is None else shown
        return cls(base, info.chain + ((prim, params),), src._vc.value,
                   without_grad or info.without_grad, shown, info.custom)

    @property
    def base(self) -> Tensor:
        """The base; when the tensor that was the base has since changed shape in place
        (``unsqueeze_``, ``t_``), the base is its old self, which the chain starts from."""
        base = self._base
        return base if base._view is None else base._view.base


def _view_of(src: Tensor, out: Any, dev: Any, prim: Primitive, params: dict,
             record: bool) -> Tensor:
    """Wraps the output of a view primitive; when it really shares ``src``'s memory it shares
    the version counter too and, for a differentiable view, remembers how it was made from the
    base (``view(dtype)``, as PyTorch's, is no autograd view: writes through it bump the
    counter but leave the base's history alone)."""
    # (a view the backend made of src's own memory has src as its base: that test is ~20x
    # cheaper than may_share_memory, which answers the other cases)
    shared = out.size == 0 or out.base is src._data or dev.xp.may_share_memory(out, src._data)
    t = _wrap(out, dev, record and out.dtype in _FLOAT, None, 0, src._vc if shared else None)
    if record:
        if out.dtype in _COMPLEX and not prim.complex_grad:
            raise complex_grad_error(prim, (src,))
        _record(prim, (src,), params, [t], dev)
    if shared and prim.differentiable:
        t._view = ViewInfo.extending(src, prim, params, not GRAD.enabled and src._requires_grad)
    return t


def plain(t: Tensor) -> bool:
    """Whether an op of ``t`` alone is only to be computed: no handler active, no history to
    record or renew (grad on and ``t`` requiring grad, or a view of memory written since), data
    on a real device, a tensor (not a tensor-like); the test of eager fast paths that skip
    :func:`apply`."""
    return not (_active_handlers or not isinstance(t, Tensor) or t._device.is_meta
                or GRAD.enabled and (t._requires_grad or t._view is not None
                                     and t._view.version != t._vc.value))


def apply_view(prim: Primitive, src: Tensor, **params: Any) -> Tensor:
    """``apply(prim, src, **params)`` for a view primitive, made at once where :func:`plain`
    holds (the fast path of ``x[i]``, ``x[:, 1:5]``, ``x[None]``, ``unsqueeze``)."""
    if plain(src):
        dev = src._device
        try:
            out = prim.forward(dev.xp, src._data, **params)
        except Exception:  # (apply explains it)
            return apply(prim, src, **params)
        return _view_of(src, out, dev, prim, params, False)
    return apply(prim, src, **params)


def replay_view(base: Tensor, chain: tuple) -> Tensor:
    """Applies a view chain to ``base`` again (with the current history of ``base``)."""
    out = base
    for prim, params in chain:
        out = apply(prim, out, **params)
    return out


FUNCTION_VIEW_NOTE = ("This view was made inside a custom Function (or an input was returned "
                      "as is), whose backward a write into it or its base would override. "
                      "Hint: clone() the output of the custom Function")


def custom_view_message(info: ViewInfo, what: str, op: str = "") -> str:
    """The error's text for a write into, or a use after a write into the base of, a view
    whose ``info.custom`` is ``(label, note)`` (an output of a custom Function): ``what``
    happened, ``op`` names the writing op."""
    label, note = info.custom
    return f"{op}{': ' if op else ''}{label} is a view and {what}. {note}"


def refresh_view(t: Tensor) -> None:
    """Gives a view whose memory was written in place the history of its base's new state
    (and, if it retains its grad, retains the new value's, as PyTorch does); raises, as
    PyTorch, for a custom Function's view output and a view made under no_grad."""
    info = t._view
    if info.custom is not None:
        raise GradError(custom_view_message(info, "its base or another view of its base "
                                            "has been modified in place"))
    if info.without_grad:
        raise GradError("A view was created in no_grad mode and its base or another view of "
                        f"its base has been modified inplace since (shape {tuple(t.shape)}): "
                        "made under no_grad from a tensor that requires grad, it has no "
                        "history of its base's to renew, so it is refused, as in PyTorch. "
                        "Hint: make the view and the write both inside no_grad, or both outside")
    fresh = replay_view(info.base, info.chain)
    t._node, t._idx, t._requires_grad = fresh._node, fresh._idx, fresh.requires_grad
    info.version = t._vc.value
    if t._retains and t._node is not None:
        t.retain_grad()
