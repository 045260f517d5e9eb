"""Saved-tensor hooks: what a node keeps for backward goes through the user's ``pack_hook``
when recorded and comes back through ``unpack_hook`` each time backward reads it
(:class:`saved_tensors_hooks`, per thread); and :class:`Unsaved`, an input kept without its
values (its history and shape) where the rule never reads them."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ember.errors import GradError

if TYPE_CHECKING:
    from ember.autograd.graph import Node
    from ember.tensor import Tensor


class _SavedHooks(threading.local):
    """This thread's saved-tensor hooks: per thread, as PyTorch's (a context opened in one
    thread neither packs another thread's saves nor blocks its hooks)."""

    def __init__(self) -> None:
        self.top: tuple | None = None  # (pack_hook, unpack_hook) of the innermost context
        self.stack: list[tuple] = []
        self.disabled: str | None = None  # the error of disable_saved_tensors_hooks


class _HooksOpen:
    """How many saved-tensor hook contexts are open in all threads. Recording an op reads
    this plain slot first and the per-thread :data:`SAVED_HOOKS` only while it is not 0, so
    the path with no hooks anywhere costs what it did before hooks were per thread."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def change(self, by: int) -> None:
        with _HOOKS_LOCK:
            self.count += by


SAVED_HOOKS = _SavedHooks()
HOOKS_OPEN = _HooksOpen()
_HOOKS_LOCK = threading.Lock()


class saved_tensors_hooks:
    """Context manager: what backward keeps goes through ``pack_hook(tensor) -> object`` when
    recorded and comes back through ``unpack_hook(object) -> tensor`` when backward reads it,
    as ``torch.autograd.graph.saved_tensors_hooks``. Use it to offload or compress activations.

    Leaves that require grad (parameters) are kept by reference, as the destination of their
    gradient, and not passed to the hooks. Inputs whose values the rule does not read (its
    ``reads``: ``x * 2`` reads x only if the 2 needs a gradient) are not passed either; the
    node no longer keeps them alive. Nor are Python numbers an op took (that 2), as in
    PyTorch. The hooks run without recording.

    Example:
        >>> x, w = ember.ones(2, requires_grad=True), ember.full((2,), 3.0, requires_grad=True)
        >>> pack = lambda t: t.to(ember.bfloat16)          # keep activations in bfloat16
        >>> unpack = lambda t: t.to(ember.float32)
        >>> with ember.autograd.graph.saved_tensors_hooks(pack, unpack):
        ...     loss = (x.exp() * w).sum()
        >>> loss.backward()
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.hooks = (pack_hook, unpack_hook)

    def __enter__(self) -> saved_tensors_hooks:
        if SAVED_HOOKS.disabled is not None:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack.append(self.hooks)
        SAVED_HOOKS.top = self.hooks
        HOOKS_OPEN.change(1)
        return self

    def __exit__(self, *exc: object) -> None:
        SAVED_HOOKS.stack.pop()
        SAVED_HOOKS.top = SAVED_HOOKS.stack[-1] if SAVED_HOOKS.stack else None
        HOOKS_OPEN.change(-1)


class packed_on_exit:
    """Context manager: the values the ops inside it save go through the open saved-tensor
    hooks only when it closes (in the same order), so what the code inside writes after an
    op (batch norm's running statistics) is written before that op's values are packed, as in
    PyTorch, whose kernel writes them before its node saves (a checkpoint's recompute, which
    stops at its last pack, then makes those writes too). Costs nothing without hooks."""

    __slots__ = ("outer", "inner", "cells")

    def __enter__(self) -> packed_on_exit:
        top = SAVED_HOOKS.top if HOOKS_OPEN.count and SAVED_HOOKS.disabled is None else None
        self.outer = top
        if top is not None:
            self.cells: list[list] = []
            unpack = top[1]
            self.inner = saved_tensors_hooks(self._defer, lambda cell: unpack(cell[0]))
            self.inner.__enter__()
        return self

    def _defer(self, t: Tensor) -> list:
        cell = [t]
        self.cells.append(cell)
        return cell

    def __exit__(self, kind: type | None, *exc: object) -> None:
        if self.outer is None:
            return
        self.inner.__exit__()
        if kind is None:  # (a failed op's nodes are dropped: nothing to pack)
            pack = self.outer[0]
            for cell in self.cells:
                cell[0] = pack_value(pack, cell[0])[0]


class Unsaved:
    """An input whose values the rule does not read: its history and shape, not its memory."""

    __slots__ = ("shape", "dtype", "requires_grad", "node", "idx", "vc")

    def __init__(self, t: Tensor) -> None:
        self.shape, self.dtype, self.requires_grad = t._data.shape, t._data.dtype, t.requires_grad
        self.node, self.idx, self.vc = t._node, t._idx, t._vc

    @classmethod
    def as_recorded(cls, t: Tensor, edge: tuple | None) -> Unsaved:
        """As ``Unsaved(t)``, with the history ``t`` had when the node recorded it (``edge``,
        the node's edge of it): an in-place op since may have given ``t`` a newer one, which
        leads back to the node (kept, a reference cycle)."""
        kept = cls.__new__(cls)
        kept.shape, kept.dtype, kept.vc = t._data.shape, t._data.dtype, t._vc
        kept.requires_grad = edge is not None
        kept.node, kept.idx = (None, 0) if edge is None or edge[0] is None else edge
        return kept

    def tensor(self, device: Any) -> Tensor:
        """A zero-memory stand-in with the input's shape, dtype and history: all a rule that
        does not read the values can use (and all it may use)."""
        from ember.tensor import _wrap

        return _wrap(device.zero_view(self.shape, self.dtype), device,
                     self.requires_grad, self.node, self.idx, self.vc)

    def __repr__(self) -> str:
        return f"<unsaved input {tuple(self.shape)}>"


def _run_hook(hook: Callable, value: Any) -> Any:
    """Calls a pack/unpack hook without recording and with no hooks active inside it."""
    from ember.autograd.grad_mode import no_grad

    top = SAVED_HOOKS.top
    SAVED_HOOKS.top = None
    try:
        with no_grad():
            return hook(value)
    finally:
        SAVED_HOOKS.top = top


def pack_value(pack: Callable, t: Tensor) -> tuple[Any, tuple | None]:
    """``pack(t)``, refusing a pack hook that writes ``t`` in place (as PyTorch: the write
    would change the value forward computed); and where ``t``'s memory lies (see
    :func:`_origin`), so that unpacking can tell whether backward reads that memory."""
    version = t._vc.value
    packed = _run_hook(pack, t)
    if t._vc.value != version:
        raise GradError(f"saved_tensors_hooks: the pack hook modified the tensor it was given "
                        f"(shape {tuple(t.shape)}) in place. Hint: pack a copy (t.clone()) "
                        "if the hook must change it")
    return packed, _origin(t._data)


def _origin(array: Any) -> tuple | None:
    """``array``'s bytes ``(first, past the last)`` and a weak reference to the array that
    owns its memory; None for an empty or non-NumPy array (nothing to check)."""
    if not isinstance(array, np.ndarray) or not array.size:
        return None
    return (*byte_bounds(array), weakref.ref(_owner(array)))


def _owner(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def reads_saved_memory(origin: tuple | None, packed: Any, array: Any) -> bool:
    """Whether backward reads the memory a saved tensor had (its owner still lives): the
    unpacked ``array`` overlaps it, or the ``packed`` value holds it (as a tensor or NumPy
    array, in a tuple, list or dict: an unpack hook may compute from it). Only then does a
    write to the saved tensor after forward change what backward reads, so only then is it
    version-checked; a value the hooks made anew (a clone, a cast, a move, whatever else the
    hook keeps for itself) is not, as PyTorch checks no value its hooks return
    (**difference**: for one that is the saved memory, as ``save_on_cpu``'s on CPU, PyTorch
    silently reads the written values)."""
    if origin is None or origin[2]() is None:
        return False
    return _overlaps(origin, array) or _holds(origin, packed)


def _holds(origin: tuple, value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds(origin, v) for v in value)
    if isinstance(value, dict):
        return any(_holds(origin, v) for v in value.values())
    return _overlaps(origin, getattr(value, "_data", value))


def _overlaps(origin: tuple, array: Any) -> bool:
    # (another owner: other memory, without reading the bounds, as for any copy)
    if not isinstance(array, np.ndarray) or not array.size or \
            _owner(array) is not origin[2]():
        return False
    first, last = byte_bounds(array)
    return first < origin[1] and origin[0] < last


def _pack(node: Node, hooks: tuple) -> None:
    from ember.tensor import _wrap

    pack = hooks[0]
    checked = node.versions is not None
    reads = node.prim.reads
    entries = []
    for i, t in enumerate(node.inputs):
        # an input the rule never reads (``reads``: ``x * 2``'s x, ``where``'s a and b) is
        # not packed: only its shape and history are kept, as without hooks (and as PyTorch).
        # A rule that saves no inputs still reads the index tensors it is given (gather,
        # x[idx], sort's winners): integer and bool inputs are packed for it (an add's
        # constant operand is not: PyTorch saves nothing for add)
        read = reads(node, i) if checked else not (
            t.requires_grad or t.is_floating_point() or t.is_complex())
        # a Python number an op took is not the hooks' (as PyTorch); a leaf that requires
        # grad, the gradient's destination, is packed as any input the rule reads (PyTorch's
        # hooks see parameters too: save_on_cpu moves them) and else kept by reference
        if t._vc.number or (t.requires_grad and t._node is None and not read):
            entries.append((0, t))
        elif read:
            value, origin = pack_value(pack, t)
            entries.append((1, (value, t.requires_grad, *history(t, node.device), t._vc,
                                origin)))
        else:
            entries.append((2, Unsaved(t)))
    outs = node.outputs
    if outs is not None:
        outs = tuple(None if o is None else (*pack_value(pack, _wrap(o[0], node.device)),
                                             *o[1:]) for o in outs)
    node.packed = (hooks[1], tuple(entries), outs)
    del node.inputs, node.outputs


def history(t: Tensor, device: Any) -> tuple[Node | None, int]:
    """The history a packed ``t`` comes back with: its own; for a leaf that requires grad (of
    which a hook made a private copy), a copy node whose edge is the leaf, so a backward
    recorded under ``create_graph`` from the copy's values reaches the leaf (as PyTorch's
    unpacked saved leaf shares its gradient accumulator)."""
    from ember.autograd.graph import Node
    from ember.ops.convert import Copy

    if t._node is not None or not t.requires_grad:
        return t._node, t._idx
    top = SAVED_HOOKS.top
    SAVED_HOOKS.top = None  # (the copy node saves nothing: nothing to pack)
    try:
        return Node(Copy, (t,), {}, None, None, device), 0
    finally:
        SAVED_HOOKS.top = top


def _unpack(node: Node, packed: tuple) -> tuple[tuple, tuple | None]:
    from ember.tensor import VersionCounter, _wrap

    unpack, entries, outs = packed
    dev = node.device
    versions = None if node.versions is None else list(node.versions)
    inputs = []
    for i, (kind, e) in enumerate(entries):
        if kind == 0:
            t = e
        elif kind == 1:
            value, requires_grad, src, idx, vc, origin = e
            array = _array(_run_hook(unpack, value))
            if not reads_saved_memory(origin, value, array):  # (a copy: unchecked)
                vc = VersionCounter()
                if versions is not None:
                    versions[i] = 0
            t = _wrap(array, dev, requires_grad, src, idx, vc)
        else:
            t = e.tensor(dev)
        inputs.append(t)
    node.inputs = inputs = tuple(inputs)
    if versions is not None:
        node.versions = tuple(versions)
    node.outputs = outputs = None if outs is None else tuple(
        None if o is None else _unpacked_output(_array(_run_hook(unpack, o[0])), o)
        for o in outs)
    return inputs, outputs


def forget_unpacked(node: Node) -> None:
    """Drops what ``node``'s unpack hook gave back (after its backward ran under
    ``retain_graph``, or ``grad_fn._saved_*`` was read): the next read unpacks again, as
    PyTorch runs the unpack hook at each access, and memory the hook moved away (``save_on_cpu``)
    is not held twice while the graph lives."""
    if node.packed is not None:
        try:
            del node.inputs, node.outputs
        except AttributeError:  # (not unpacked since)
            pass


def _unpacked_output(array: Any, packed: tuple) -> tuple:
    """A node's saved output entry ``(array, counter, version)`` from its packed one."""
    from ember.tensor import VersionCounter

    value, origin, vc, version = packed
    return (array, vc, version) if reads_saved_memory(origin, value, array) else \
        (array, VersionCounter(), 0)


def _array(value: Any) -> Any:
    data = getattr(value, "_data", None)
    if data is None:
        raise GradError(f"saved_tensors_hooks: unpack_hook must return a tensor, got "
                        f"{type(value).__name__}")
    return data
