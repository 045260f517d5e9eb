"""``copy.copy``, ``copy.deepcopy`` and pickling of tensors (:meth:`ember.Tensor.__copy__`,
``__deepcopy__``, ``__reduce__``), as PyTorch's: a shallow copy shares the memory, a deep copy
copies it once for the tensors that shared it, and a pickle keeps the strides; each keeps the
tensor's class and attributes."""

from __future__ import annotations

import copy
import copyreg
import pickle
from typing import Any

import numpy as np

from ember.errors import GradError
from ember.hooks import warn_if_has_hooks
from ember.tensor import STATE_SLOTS, Tensor, _wrap

__all__ = ["copied", "deep", "own_attributes", "pickled", "rebuilt", "shallow", "with_class"]


def _root(a: np.ndarray) -> np.ndarray:
    """The array at the end of NumPy's ``base`` chain: the memory block ``a`` lies in."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _offset(a: np.ndarray, root: np.ndarray) -> int:
    return a.__array_interface__["data"][0] - root.__array_interface__["data"][0]


def copied(t: Tensor, memo: dict) -> Tensor:
    """A new tensor, no history, with the values of ``t`` for ``deepcopy``. As PyTorch copies a
    storage once per ``memo``, Ember copies the memory block a CPU array lives in (the array at
    the end of NumPy's ``base`` chain) once, keyed by its id, and makes ``t``'s array again at
    the same place in the copy: tensors copied together (a tensor, its slices, its
    ``view(dtype)``) share the copy's memory and version counter as they shared theirs."""
    a = t._data
    root = _root(a) if isinstance(a, np.ndarray) else a
    if not isinstance(a, np.ndarray) or not (root.flags.c_contiguous or root.flags.f_contiguous):
        data = memo.get(id(a))  # (another device's array, or an odd block: by array)
        if data is None:
            data = memo[id(a)] = t.detach().clone()._data
        return _wrap(data, t._device)
    copy_ = memo.get(id(root))
    if copy_ is None:
        copy_ = memo[id(root)] = root.copy(order="A")
    block = copy_.reshape(-1, order="A").view(np.uint8)
    data = _read_only_if_expanded(np.ndarray(a.shape, a.dtype, buffer=block,
                                             offset=_offset(a, root), strides=a.strides))
    key = ("ember version counter", id(root))  # (one for the tensors copied from one block)
    out = _wrap(data, t._device, vc=memo.get(key))
    memo.setdefault(key, out._vc)
    return out


def _read_only_if_expanded(array: np.ndarray) -> np.ndarray:
    """``array``, read-only where a stride of 0 spans several elements (an expanded tensor:
    a write would reach one memory cell through many, as ``expand``'s refuses)."""
    if array.size and any(not s and n > 1 for s, n in zip(array.strides, array.shape)):
        array.flags.writeable = False
    return array


def with_class(out: Tensor, cls: type, attributes: dict | None) -> Tensor:
    """``out`` (a new leaf) as an object of class ``cls``, with ``attributes`` (a subclass's
    own, in its ``__dict__`` or its slots: kept by a copy as PyTorch keeps them)."""
    if cls is not Tensor:
        made = object.__new__(cls)
        for slot in STATE_SLOTS:
            object.__setattr__(made, slot, getattr(out, slot))
        out = made
    for name, value in (attributes or {}).items():  # (a subclass's slots among them)
        object.__setattr__(out, name, value)
    return out


def own_attributes(t: Tensor) -> dict | None:
    """``t``'s own attributes: its ``__dict__`` and the slots a subclass declares (as
    PyTorch's copies keep them, through ``copyreg``'s slot names), None where there are
    none."""
    found = dict(getattr(t, "__dict__", None) or {})
    cls = type(t)
    if cls is not Tensor:
        found.update((name, getattr(t, name)) for name in copyreg._slotnames(cls)
                     if name not in _TENSOR_SLOTS and hasattr(t, name))
    return found or None


_TENSOR_SLOTS = frozenset(Tensor.__slots__)


def shallow(t: Tensor) -> Tensor:
    """``copy.copy(t)`` (``Tensor.__copy__``): a new leaf on ``t``'s memory (same strides,
    version counter, ``requires_grad``, class and attributes), as PyTorch's shares the storage:
    writes to one show in the other.

    Example:
        >>> import copy
        >>> x = ember.zeros(2)
        >>> y = copy.copy(x)
        >>> _ = y.fill_(1.0)
        >>> x
        tensor([1., 1.])
    """
    warn_if_has_hooks(t)
    out = _wrap(t._data, t._device, t.requires_grad, vc=t._vc)
    return with_class(out, type(t), dict(own_attributes(t) or {}))


def deep(t: Tensor, memo: dict) -> Tensor:
    """``copy.deepcopy(t)`` (``Tensor.__deepcopy__``): a leaf with its own copy of the data
    (once per ``memo`` for tensors sharing memory: a tensor and its views, copied together,
    share the copy's memory as they did), ``requires_grad``, a copy of ``.grad``, its class
    and attributes; a tensor with history is refused, as PyTorch's.

    Example:
        >>> import copy
        >>> w = ember.ones(2, requires_grad=True)
        >>> kept = copy.deepcopy({"w": w})   # a model.state_dict() kept while training
        >>> kept["w"] is w, kept["w"].requires_grad
        (False, True)
    """
    if id(t) not in memo:
        if t._node is not None:
            raise GradError("deepcopy: only a leaf tensor (made, not computed from tensors "
                            "that require grad) can be deep-copied, as in PyTorch. Hint: "
                            "copy tensor.detach()")
        out = with_class(copied(t, memo), type(t), deep_attributes(t, memo))
        out._requires_grad = t.requires_grad
        out._grad = None if t._grad is None else t._grad.__deepcopy__(memo)
        memo[id(t)] = out
    return memo[id(t)]


def deep_attributes(t: Tensor, memo: dict) -> dict | None:
    """A deep copy of ``t``'s own attributes (for ``deepcopy`` of a subclass)."""
    attributes = own_attributes(t)
    return None if attributes is None else copy.deepcopy(attributes, memo)


def pickled(t: Tensor, protocol: int = 4) -> tuple:
    """``(rebuilt, args)`` that pickle ``t`` (``Tensor.__reduce__``: multiprocessing): the
    bytes its elements span (a slice or a channels-last tensor keeps its strides, as PyTorch's
    pickle does; a meta tensor pickles its shape and strides), its device, ``requires_grad``,
    class and attributes; the copy is a leaf (history stays behind). Files are better written
    with ``ember.save``, which stores no code."""
    warn_if_has_hooks(t)
    if t._device.is_meta:
        return rebuilt, (t._data, str(t._device), t.requires_grad, None, type(t),
                         own_attributes(t))
    a = t._host("pickling", keep=False)
    root = _root(a)
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or any(
            s % a.itemsize for s in a.strides):  # (or a structured array's field)
        a = np.array(a)  # (an odd memory block: the values, in their order)
        root = a
    low = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0) + a.itemsize
    start = _offset(a, root)
    block = root.reshape(-1, order="A").view(np.uint8)
    span = block[start + low:start + high] if a.size else block[:0]
    layout = (a.dtype, a.shape, a.strides, -low if a.size else 0)
    if protocol >= 5:  # (names and bytes only: a file holding an allowed subclass loads
        layout = (a.dtype.name, *layout[1:])  # weights-only, naming no NumPy code; an
        span = pickle.PickleBuffer(span)  # ndarray below 5 loads without a copy)
    return rebuilt, (span, str(t._device), t.requires_grad, layout, type(t), own_attributes(t))


def _reduce_ex(t: Tensor, protocol: int) -> tuple:
    """pickle's entry: :func:`pickled` for ``protocol``, or a subclass's own ``__reduce__``."""
    reduce = type(t).__reduce__
    return pickled(t, protocol) if reduce is pickled else reduce(t)


def rebuilt(array: Any, device: str, requires_grad: bool, layout: tuple | None = None,
            cls: type = Tensor, attributes: dict | None = None) -> Tensor:
    """The tensor :func:`pickled` describes."""
    from ember.backend import device as to_device

    if layout is not None:
        dtype, shape, strides, offset = layout
        array = bytearray(array) if isinstance(array, bytes) else array  # (writable, as torch's)
        array = _read_only_if_expanded(
            np.ndarray(shape, dtype, buffer=array, offset=offset, strides=strides))
    dev = to_device(device)
    return with_class(_wrap(dev.xp.asarray(array), dev, requires_grad), cls, attributes)


Tensor.__copy__ = shallow  # type: ignore[method-assign]
Tensor.__deepcopy__ = deep  # type: ignore[method-assign]
Tensor.__reduce__ = pickled  # type: ignore[method-assign]
Tensor.__reduce_ex__ = _reduce_ex  # type: ignore[method-assign]
