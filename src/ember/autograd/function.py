"""Custom differentiable operations: subclass :class:`Function` with ``forward`` and
``backward`` static methods, as in PyTorch.

``Function.apply`` runs ``forward`` without recording, then records one node whose vjp is the
user's ``backward``. A ``backward`` written in Ember ops is differentiable again; one marked
``@once_differentiable`` runs without recording and refuses a second derivative clearly.
Forward mode (``ember.func.jvp``, ``forward_ad``) uses the optional ``jvp`` static method: an
active transform that defines ``apply_function`` receives the call (see
``ember.autograd.forward.ForwardTrace``). Under ``ember.func.vmap`` the optional ``vmap`` static
method, if defined, runs once on the batched arguments instead of ``forward`` per sample (see
``ember.func.vmap.function_vmap``); without it ``forward``'s Ember ops are batched one by one,
or the Function runs per sample when differentiated from outside the vmap (PyTorch asks for
``generate_vmap_rule = True`` for that; Ember accepts the flag and needs none). ``forward``
may also take no ctx, with a ``setup_context`` static method filling it afterwards, PyTorch
2's style.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.autograd.grad_mode import (
    GRAD,
    inference_tensors_may_exist,
    no_grad,
    refuse_inference_saved,
)
from ember.autograd.graph import Node
from ember.autograd.saved_hooks import (
    SAVED_HOOKS,
    _array,
    _run_hook,
    history,
    pack_value,
    reads_saved_memory,
)
from ember.errors import GradError, type_name
from ember.ops.primitive import DISPATCH, FUNCTION_VIEW_NOTE, ViewInfo
from ember.tensor import Tensor, VersionCounter, _wrap


class FunctionCtx:
    """The ``ctx`` a custom Function's ``forward`` and ``backward`` share."""

    def __init__(self, name: str, needs_input_grad: tuple[bool, ...]) -> None:
        self._name = name
        self.needs_input_grad = needs_input_grad
        self._saved: tuple = ()
        self._non_differentiable: set[int] = set()
        self._dirty: tuple = ()
        self.materialize_grads = True
        self._inputs: tuple = ()
        self._saved_forward: tuple | None = None
        self._versions: dict[int, int] = {}
        self._in_jvp = False
        self._jvp_outputs: tuple = ()  # forward's outputs as returned, while jvp runs
        self._on_release: Callable[[FunctionCtx], None] | None = None
        self._output_slots: dict[int, int] = {}  # id of a differentiable output -> its index
        self._node: Node | None = None  # this Function's node, while its backward runs
        self._packed: tuple | None = None  # (unpack hook, what _pack made), until released
        self._freed = False  # a backward without retain_graph released what was saved

    def save_for_backward(self, *tensors: Any) -> None:
        """Keeps tensors for ``backward``. As in PyTorch they are kept as ``forward`` leaves
        them, and in-place changes after it returns are detected."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"{self._name}: save_for_backward saves tensors (or None), but "
                                f"argument {i} is a {type(t).__name__}. Hint: keep other "
                                "values as ctx attributes (ctx.k = k)")
        self._saved = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keeps tensors for ``jvp``, where ``saved_tensors`` returns them (as in PyTorch)."""
        self._saved_forward = tensors

    def _stamp(self) -> None:
        """``forward`` has returned: the versions the saved tensors must keep."""
        self._versions = {id(t): t._vc.value for t in (*self._saved, *(self._saved_forward or ()))
                          if t is not None}

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to :meth:`save_for_backward` (to :meth:`save_for_forward`
        inside ``jvp``), checked for in-place changes."""
        saved = self._saved
        if self._freed:
            raise GradError(f"{self._name}: its saved tensors were freed by a backward without "
                            "retain_graph. Hint: pass retain_graph=True to the first backward "
                            "to read them (or backward) again")
        if self._in_jvp and self._saved_forward is not None:
            saved = self._saved_forward
        for i, t in enumerate(saved):
            version = None if t is None else self._versions.get(id(t))
            if version is not None and t._vc.value != version:
                raise GradError(
                    f"backward of {self._name}: saved tensor {i} (shape {tuple(t.shape)}) was "
                    f"modified in place after forward saved it: version {version} then, "
                    f"{t._vc.value} now. Hint: save a .clone() or avoid the in-place op.")
        node, slots = self._node, self._output_slots
        if self._packed is not None and saved is self._saved:  # (through saved-tensor hooks:
            saved, slots = self._unpack()  # unpacked at each read, as PyTorch's)
        if node is not None and slots:  # a saved output carries this node's history, as in
            saved = tuple(_as_output(t, node, slots[id(t)]) if id(t) in slots else t  # PyTorch,
                          for t in saved)  # so a backward written in ops differentiates again
        elif self._jvp_outputs and slots:  # (in jvp: the output returned, with its history)
            saved = tuple(self._jvp_outputs[slots[id(t)]] if t is not None and id(t) in slots
                          else t for t in saved)
        return tuple(saved)

    def _pack(self, hooks: tuple) -> None:
        """Recorded inside ``saved_tensors_hooks``: the saved tensors go through its pack hook,
        as the values a node saves do (leaves that require grad too, as PyTorch's)."""
        pack, unpack = hooks
        # (each unpacked tensor keeps its history, device and counter, as a node's inputs,
        # a leaf's a copy node to it; a value the hook made anew has a counter of its own:
        # writes to the original are not checked, see ``saved_hooks.reads_saved_memory``)
        kept = [t is None for t in self._saved]
        self._packed = (unpack, tuple(
            (False, t) if keep else (True, self._packed_entry(*pack_value(pack, t), t))
            for t, keep in zip(self._saved, kept)))
        self._saved = tuple(t for t, keep in zip(self._saved, kept) if keep)  # (the others
        #                                                       live in the hook's)

    @staticmethod
    def _packed_entry(value: Any, origin: tuple | None, t: Tensor) -> tuple:
        return (value, id(t), t._vc, t._vc.value, t.requires_grad, *history(t, t._device),
                t.device, origin)

    def _unpack(self) -> tuple[tuple, dict[int, int]]:
        """The saved tensors back through the unpack hook, checked for in-place changes, and
        the output slots of those that were outputs (by the unpacked tensors' ids)."""
        unpack, entries = self._packed
        tensors, slots = [], {}
        for i, (packed, e) in enumerate(entries):
            if not packed:
                tensors.append(e)
                continue
            value, key, vc, version, requires_grad, src, idx, device, origin = e
            array = _array(_run_hook(unpack, value))
            if not reads_saved_memory(origin, value, array):  # (a copy: unchecked)
                vc = VersionCounter()
            elif key in self._versions and vc.value != version:
                raise GradError(
                    f"backward of {self._name}: saved tensor {i} was modified in place after "
                    f"forward saved it: version {version} then, {vc.value} now. Hint: save a "
                    ".clone() or avoid the in-place op.")
            t = _wrap(array, device, requires_grad, src, idx, vc)
            if key in self._output_slots:
                slots[id(t)] = self._output_slots[key]
            tensors.append(t)
        return tuple(tensors), slots

    def _release(self) -> None:
        """The node is released (a backward without ``retain_graph``): what backward needed
        goes, as PyTorch frees a Function's saved tensors then."""
        self._freed = bool(self._saved) or self._packed is not None
        self._saved = self._inputs = ()
        self._packed = None
        if self._on_release is not None:
            self._on_release(self)

    def mark_dirty(self, *tensors: Any) -> None:
        """Declares inputs that ``forward`` modified in place; ``forward`` must return them,
        and they then carry this Function's history (the same tensor objects, as in
        PyTorch)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Declares outputs (e.g. indices) that have no gradient."""
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value: bool) -> None:
        """If False, ``backward`` receives None (not zeros) for outputs without gradient."""
        self.materialize_grads = value


class _CustomPrimitive:
    """The primitive-like rule object of one Function subclass (not in the registry)."""

    differentiable = True
    save_inputs = False
    save_outputs = False
    view = False

    def __init__(self, fn: type[Function], nout: int) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.backward_name = fn.__name__ + "Backward"  # PyTorch's name for a Function's node
        self.nout = nout

    def reads(self, ctx: Node, i: int) -> bool:
        return True

    def node_attribute(self, node: Node, attr: str) -> Any:
        """``grad_fn.attr`` of this Function's node: its ctx's (``saved_tensors``, what
        forward set), as PyTorch's grad_fn of a Function is its ctx."""
        return getattr(node.params["ctx"], attr)

    def release(self, ctx: Node) -> None:
        ctx.params["ctx"]._release()

    def vjp(self, ctx: Node, *grads: Any) -> tuple:
        from ember.ops.creation import zeros

        fctx: FunctionCtx = ctx.params["ctx"]
        if fctx.materialize_grads:
            grads = tuple(zeros(spec[0], dtype=spec[1], device=ctx.device)
                          if g is None and spec is not None else g
                          for g, spec in zip(grads, ctx.params["out_specs"]))
        fctx._node = ctx  # (only while backward runs: kept, it would make a reference cycle)
        try:
            result = _backward_rule(self.fn)(fctx, *grads)
        finally:
            fctx._node = None
        result = result if isinstance(result, tuple) else (result,)
        positions, nargs = ctx.params["positions"], ctx.params["nargs"]
        if len(result) < nargs or any(g is not None for g in result[nargs:]):
            raise GradError(f"backward of {self.name} returned {len(result)} gradients but "
                            f"forward took {nargs} arguments (return one per argument, None "
                            "for those that have no gradient)")
        for i, g in enumerate(result[:nargs]):
            if g is not None and not isinstance(g, Tensor):
                raise GradError(f"backward of {self.name} returned a {type_name(g)} as the "
                                f"gradient of argument {i}; return a tensor (or None)")
            if g is not None and i not in positions:
                raise GradError(f"backward of {self.name} returned a gradient for argument {i}"
                                ", which is not a tensor; return None for it")
        return tuple(result[p] for p in positions)


class Function:
    """Base class of custom autograd operations.

    Example:
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> y = Square.apply(ember.tensor([3.0], requires_grad=True))
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a Function subclass must define forward(ctx, …)")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Optional, PyTorch 2's style: with it, ``forward(*args)`` takes no ctx, and this
        fills the ctx afterwards from the inputs and the output (saving tensors, marking
        outputs), which ``ember.func`` transforms expect of a Function in PyTorch.

        Example:
            >>> class Cube(ember.autograd.Function):
            ...     @staticmethod
            ...     def forward(x):
            ...         return x ** 3
            ...     @staticmethod
            ...     def setup_context(ctx, inputs, output):
            ...         ctx.save_for_backward(inputs[0])
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         (x,) = ctx.saved_tensors
            ...         return 3 * x ** 2 * g
            >>> ember.func.grad(lambda x: Cube.apply(x).sum())(ember.tensor([2.0]))
            tensor([12.])
        """
        raise NotImplementedError("setup_context is optional")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("a Function subclass must define backward(ctx, …) (or vjp, "
                                  "its other name) for backward-mode AD")

    @staticmethod
    def vjp(ctx: FunctionCtx, *grads: Any) -> Any:
        """PyTorch's other name for ``backward``: a Function defines one of the two."""
        raise NotImplementedError("a Function subclass must define backward(ctx, …) (or vjp, "
                                  "its other name) for backward-mode AD")

    @staticmethod
    def jvp(ctx: FunctionCtx, *tangents: Any) -> Any:
        """Optional: the output tangent(s) from one tangent per forward argument (None for
        non-tensor arguments), for forward mode. Read ``ctx.saved_tensors`` (what
        ``save_for_forward`` kept) and return a tensor or a tuple, one per output."""
        raise NotImplementedError("a Function subclass must define jvp(ctx, …) for forward "
                                  "mode")

    @staticmethod
    def vmap(info: Any, in_dims: tuple, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """Optional: this Function under ``ember.func.vmap``, as PyTorch's. Receives ``info``
        (``info.batch_size``, ``info.randomness``), ``in_dims`` (per argument, the batched
        dimension or None) and the batched arguments; returns ``(output, out_dims)``, out_dims
        one int (or None) per output, or one for all. Typically it moves the batch dims and
        calls ``apply`` on the batched tensors, so gradients flow through ``backward``.

        Example:
            >>> @staticmethod
            ... def vmap(info, in_dims, x):
            ...     return NumpySin.apply(x if in_dims[0] is not None else
            ...                           x.expand(info.batch_size, *x.shape)), 0
        """
        raise NotImplementedError("a Function subclass may define vmap(info, in_dims, …)")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = type(self).__name__
        raise GradError(f"{name}()(...): a Function instance is not called (PyTorch's legacy, "
                        f"non-static style, which it refuses too). Hint: call {name}.apply(...) "
                        "on the class, with static forward and backward methods")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if DISPATCH.handler is None:
            return _run(cls, args, kwargs)[0]
        return run_function(cls, args, kwargs)[0]


def run_function(cls: type[Function], args: tuple, kwargs: dict) -> tuple[Any, FunctionCtx]:
    """Runs ``cls`` through the innermost active transform that handles custom Functions (one
    with an ``apply_function(cls, args, kwargs)`` method), else eagerly. Returns
    ``(outputs, ctx)``."""
    handler = DISPATCH.handler
    if handler is not None:
        stack = DISPATCH.stack
        for h in reversed(stack[:stack.index(handler) + 1]):
            hook = getattr(h, "apply_function", None)
            if hook is not None:
                return hook(cls, args, kwargs)
    return _run(cls, args, kwargs)


def _run(cls: type[Function], args: tuple, kwargs: dict) -> tuple[Any, FunctionCtx]:
    """Function.apply without transforms: forward unrecorded, then one node for backward."""
    needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx = FunctionCtx(cls.__name__, needs)
    with no_grad():
        if cls.setup_context is Function.setup_context:
            out = cls.forward(ctx, *args, **kwargs)
        else:  # forward(*args), then setup_context(ctx, inputs, output), as in PyTorch
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
    outs = out if isinstance(out, tuple) else (out,)
    dirty = {id(t) for t in ctx._dirty}
    ctx._dirty = ()  # (kept, a dirty input, which takes the node's history, would make a cycle)
    if not dirty <= {id(o) for o in outs}:
        raise GradError(f"{cls.__name__}.forward marked a tensor dirty (ctx.mark_dirty) but "
                        "did not return it; return every tensor it modifies in place")
    # (a forward returning no tensor, e.g. a list or a number, is passed through unrecorded)
    recorded = GRAD.enabled and any(needs) and any(isinstance(o, Tensor) for o in outs)
    if recorded:
        out = _record(cls, ctx, args, out, dirty)
    elif dirty:  # a dirty tensor counts as written, recorded or not, as in PyTorch
        for o in outs:
            if id(o) in dirty:
                o._vc.value += 1
    if recorded and inference_tensors_may_exist():
        for i, t in enumerate(ctx._saved):
            if t is not None and t._vc.inference:
                refuse_inference_saved(f"{cls.__name__}.save_for_backward", i, t)
    ctx._stamp()
    if recorded and SAVED_HOOKS.top is not None:
        ctx._pack(SAVED_HOOKS.top)
    return out, ctx


def _record(cls: type[Function], ctx: FunctionCtx, args: tuple, out: Any, dirty: set) -> Any:
    """One node for the Function's backward; returns the outputs as tensors of that node."""
    outs = out if isinstance(out, tuple) else (out,)
    # a dirty input is recorded as it was before forward (its old history), the way an
    # in-place op records an alias of the tensor it overwrites
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    inputs = tuple(_wrap(a._data, a._device, a.requires_grad, a._node, a._idx, a._vc)
                   if id(a) in dirty else a for a in (args[i] for i in positions))
    ctx._inputs = inputs
    params = {"ctx": ctx, "positions": positions, "nargs": len(args),
              "out_specs": tuple((o.shape, o.dtype) if isinstance(o, Tensor) else None
                                 for o in outs)}
    node = _backward_cls(cls)(_CustomPrimitive(cls, len(outs)), inputs, params, None, None,
                              inputs[0].device)
    wrapped = tuple(
        o if not isinstance(o, Tensor)  # other outputs pass through (backward gets None)
        else _wrap(o._data, o._device, False, None, 0, o._vc)
        if id(o) in ctx._non_differentiable or not (o.dtype.is_floating_point or o.dtype.is_complex)
        else _wrap(o._data, o._device, True, node, i, o._vc)
        for i, o in enumerate(outs))
    # an input returned as is stays an input when saved; an output sharing an input's memory
    # (returned as is, or a view) is a view of it, as PyTorch's (``_custom_view``)
    args_ids = {id(a) for a in args}
    ctx._output_slots = {}
    for i, (o, w) in enumerate(zip(outs, wrapped)):
        if not (isinstance(w, Tensor) and w.requires_grad):
            continue
        returned = id(o) in args_ids
        if not returned:
            ctx._output_slots[id(o)] = i
        if (returned or o._view is not None) and id(o) not in dirty:
            w._view = _custom_view(o, f"Output {i} of {cls.__name__}", outs, wrapped)
    if dirty:
        wrapped = tuple(_take_history(ctx, o, w) if id(o) in dirty else w
                        for o, w in zip(outs, wrapped))
        _save_dirty_as_outputs(ctx, outs, dirty)
    return wrapped if isinstance(out, tuple) else wrapped[0]


def _custom_view(o: Any, label: str, outs: tuple, wrapped: tuple) -> ViewInfo:
    """The view record of a Function's output that forward returned as a view of ``o``'s
    memory (``o`` an input returned as is, or a view): PyTorch's outputs are views of the
    inputs they share memory with, which neither they nor their base may be written in place
    after (``ViewInfo.custom``: that would override the Function's backward). A view of
    another output has that output as its ``_base``, as in PyTorch."""
    custom = (label, FUNCTION_VIEW_NOTE)
    info = o._view
    if info is None:
        return ViewInfo(o, (), o._vc.value, custom=custom)
    shown = next((w for r, w in zip(outs, wrapped) if r is info.shown), info.shown)
    return ViewInfo(info.base, info.chain, o._vc.value, info.without_grad, shown, custom)


def _save_dirty_as_outputs(ctx: FunctionCtx, outs: tuple, dirty: set) -> None:
    """A saved dirty tensor now carries the node's history: ctx keeps an alias without it,
    which ``saved_tensors`` gives back as that output of the node, as PyTorch saves an output
    (kept itself, it would make the cycle tensor -> node -> ctx -> tensor)."""
    slot = {id(o): i for i, o in enumerate(outs)}

    def alias(t: Any) -> Any:
        if t is None or id(t) not in dirty:
            return t
        kept = _wrap(t._data, t._device, False, None, 0, t._vc)
        ctx._output_slots[id(kept)] = slot[id(t)]
        return kept

    ctx._saved = tuple(map(alias, ctx._saved))


def _backward_rule(cls: type[Function]) -> Callable:
    """``cls.backward``, or ``cls.vjp`` where it defines that instead (as PyTorch)."""
    own_vjp = cls.vjp is not Function.vjp
    if own_vjp and cls.backward is not Function.backward:
        raise GradError(f"{cls.__name__} defines both backward and vjp, which are one method "
                        "under two names (as in PyTorch); define only one of them")
    return cls.vjp if own_vjp else cls.backward


def _backward_cls(cls: type[Function]) -> type[Node]:
    """The class of ``cls``'s nodes, ``<Function>Backward``, as PyTorch's ``cls._backward_cls``
    (``type(y.grad_fn).__name__`` names the Function)."""
    found = cls.__dict__.get("_backward_cls")
    if found is None:
        found = type(f"{cls.__name__}Backward", (Node,),
                     {"__slots__": (), "__module__": cls.__module__})
        cls._backward_cls = found
    return found


def _as_output(t: Any, node: Node, i: int) -> Any:
    """Output ``i`` of a Function's ``node``, as the tensor ``t`` forward returned."""
    return _wrap(t._data, t._device, True, node, i, t._vc)


def _take_history(ctx: FunctionCtx, t: Any, result: Any) -> Any:
    """A dirty tensor ``t`` takes the history of ``result`` (its value, as this Function's
    output), through the in-place machinery (a view's base follows, a leaf that requires
    grad is refused)."""
    from ember.ops.inplace import inplace

    return inplace(t, ctx._name, lambda old: result)


class _OnceDifferentiable:
    """Marks a gradient computed by a once-differentiable backward: differentiating it raises."""

    name = "once_differentiable"
    nout = 1
    differentiable = True
    save_inputs = save_outputs = view = False

    def __init__(self, where: str) -> None:
        self.where = where

    def vjp(self, ctx: Node, g: Any) -> tuple:
        raise GradError(f"{self.where} is decorated with @once_differentiable: its gradient "
                        "cannot be differentiated again (create_graph through it)")


def once_differentiable(backward: Callable) -> Callable:
    """Decorates a ``backward`` that is not itself differentiable (e.g. NumPy inside)."""
    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with no_grad():
            result = backward(ctx, *grads)
        sources = tuple(t for t in (*ctx._inputs, *grads) if t is not None and t.requires_grad)
        if not (GRAD.enabled and sources):
            return result
        rule = _OnceDifferentiable(f"backward of {ctx._name}")
        seq = result if isinstance(result, tuple) else (result,)
        marked = tuple(None if r is None else
                       _wrap(r._data, r._device, True, Node(rule, sources[:1], {}, None, None,
                                                            r._device))
                       for r in seq)
        return marked if isinstance(result, tuple) else marked[0]
    return wrapper
