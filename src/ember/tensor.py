"""The :class:`Tensor`: a backend array, its device, and its place in the autograd tape.

A tensor's methods are the functional ops (``x.exp()`` is ``ember.exp(x)``); each op module
binds its functions here with :func:`method`, so this file stays the small core.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from math import prod
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import Device
from ember.backend.meta import no_data
from ember.dtypes import DType
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, GradError
from ember.grad_assign import SAME_DTYPE, check_assigned_grad, read_grad_dtype, set_grad_dtype
from ember.layouts import (
    check_format,
    contiguous_format,
    dense_in_order,
    layout,
    memory_format,
    strided,
    strides_key,
)
from ember.size import Size
from ember.version_counter import STRUCTURE, DataCounter, VersionCounter

_DTYPE_OF = {d.np: d for d in dtypes.ALL_DTYPES}


# PyTorch's words, so warning filters written for PyTorch's match
NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")


class Tensor:
    """An n-dimensional array that records the ops applied to it for autograd.

    Make one with :func:`ember.tensor`, :func:`ember.zeros`, :func:`ember.randn`, …

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4., 6.])
    """

    __slots__ = ("_data", "_device", "_requires_grad", "_grad", "_node", "_idx", "_vc", "_hooks",
                 "_retains", "_view", "__dict__", "__weakref__")  # (a __dict__ for the user's
    # own attributes, ``p.tag = 1``, as PyTorch's tensors take: made on the first one set)
    __array_priority__ = 1000  # NumPy defers to our reflected operators
    _grad_dtype: Any = SAME_DTYPE  # (one set goes in the instance's __dict__)
    grad_dtype = property(read_grad_dtype, set_grad_dtype)

    def __new__(cls, *data: Any, dtype: DType | None = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
        """As ``torch.Tensor``: ``Tensor([1, 2])`` copies data into the default float dtype,
        ``Tensor(2, 3)`` is uninitialised memory of that shape. Made here, not in an
        ``__init__``, so that a subclass's own ``__new__`` (``Tensor._make_subclass``) is not
        made over again, as with PyTorch's."""
        from ember.ops.creation import legacy_tensor

        made = legacy_tensor(data, dtype, device, requires_grad)
        out = object.__new__(cls)
        for slot in STATE_SLOTS:
            setattr(out, slot, getattr(made, slot))
        return out

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for hook in SUBCLASS_HOOKS:
            hook(cls)

    # -- properties --------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return _as_size(Size, self._data.shape)

    @property
    def dtype(self) -> DType:
        try:
            return _DTYPE_OF[self._data.dtype]
        except KeyError:
            return dtypes.from_numpy(self._data.dtype)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def grad(self) -> Tensor | None:
        """The gradient ``backward`` accumulated into this tensor (None before the first);
        assign a tensor of this one's shape, or None. Read on a non-leaf that retains none, it
        warns as PyTorch (backward fills only leaves' ``.grad``; ``retain_grad()`` keeps one)."""
        g = self._grad
        if g is None and self._node is not None and not self._retains:
            warnings.warn(NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor) and getattr(value, "layout", strided) is strided:
                raise TypeError(f"grad: expected a tensor or None, got {type(value).__name__}")
            check_assigned_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:  # (``del x.grad`` clears it, as PyTorch's)
        self._grad = None

    @property
    def data(self) -> Tensor:
        """The same storage, cut from the graph, with a version counter of its own."""
        return DataCounter.given_to(Tensor.detach(self))  # (as PyTorch's)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a tensor, got {type(value).__name__}. Hint: "
                            "ember.tensor(value) makes one")
        if self.requires_grad and value.dtype.category < dtypes.FLOAT:
            raise DTypeError(f"data: a tensor that requires grad cannot hold {value.dtype.name} "
                             "data; only floating and complex tensors can require grad")
        if _on_data_set is not None:
            _on_data_set(self, value)
        old, self._data = self._data, value._data
        old_device, self._device = self._device, value._device
        self._vc = self._vc.data_set()  # (writes through ``value`` move its counter, not ours)
        if old.shape != self._data.shape or old.dtype != self._data.dtype or \
                old_device is not self._device or \
                strides_key(old) != strides_key(self._data):
            STRUCTURE.value += 1  # (compiled functions look again at what they reach)

    @property
    def grad_fn(self) -> Any:
        if self._view is not None and self._view.version != self._vc.value:
            from ember.autograd.roots import refresh_stale  # (base written since: new history)
            refresh_stale(self)
        return self._node

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None  # (a view whose base was written since: of its new history)

    @property
    def _version(self) -> int:
        return self._vc.value

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        """Whether the tensor is on the meta device (a shape and dtype, no data).

        Example:
            >>> ember.empty(2, device="meta").is_meta
            True
        """
        return self._device.is_meta

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def size(self, dim: int | None = None) -> Size | int:
        """The shape, or the size of one dimension: ``x.size(-1)``."""
        return _as_size(Size, self._data.shape) if dim is None else _entry(self._data.shape,
                                                                           dim, "size")

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    def element_size(self) -> int:
        return self._data.itemsize

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """Strides in elements, as PyTorch reports them (a tensor without elements has
        PyTorch's too, where NumPy gives its array zero strides: :func:`_empty_strides`)."""
        a = self._data
        s = tuple(b // a.itemsize for b in a.strides) if a.size or not a.ndim else \
            _empty_strides(self)
        return s if dim is None else _entry(s, dim, "stride")

    def is_contiguous(self, memory_format: memory_format = contiguous_format) -> bool:
        """Whether the elements lie densely in memory in ``memory_format``'s order: C order
        by default, (N, H, W, C) for ``ember.channels_last`` (False unless 4-d).

        Example:
            >>> x = ember.zeros(2, 3).t()
            >>> x.is_contiguous(), x.contiguous().is_contiguous()
            (False, True)
        """
        fmt = check_format("is_contiguous", memory_format)
        if fmt.dims is None:
            return self._data.flags.c_contiguous
        return self._data.ndim == fmt.rank and dense_in_order(self._data.shape, self.stride(),
                                                              fmt.dims)

    @property
    def _base(self) -> Tensor | None:
        """The tensor whose memory this view shares (PyTorch's ``_base``); None when this
        tensor is no view.

        Example:
            >>> x = ember.ones(4)
            >>> x[1:]._base is x, x._base, x[1:].detach()._base
            (True, None, None)
        """
        return None if self._view is None else self._view.shown

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another one's memory (``_base`` is not None)."""
        return self._base is not None

    @property
    def layout(self) -> layout:
        """The kind of memory: ``ember.strided`` (sparse tensors are ``ember.sparse``'s
        :class:`SparseTensor`)."""
        return strided

    # -- leaving the graph and the framework ---------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shares memory on CPU). A tensor that requires grad is
        refused while grad mode is on (as in PyTorch: under ``no_grad`` it is read)."""
        if self.requires_grad and not force:
            from ember.autograd.grad_mode import GRAD  # (the autograd package imports this)

            if GRAD.enabled:
                if _on_value_read is not None:
                    _on_value_read(self, "numpy()")
                raise GradError("numpy(): the tensor requires grad; call "
                                "tensor.detach().numpy()")
        return self._host("numpy()")

    def _host(self, what: str, keep: bool = True) -> np.ndarray:
        """The data as a NumPy array, read for ``what``: on the CPU the very array. ``keep``:
        the caller may hold it and write to it, where no version counter sees (the memory is
        marked shared)."""
        if _on_value_read is not None:
            _on_value_read(self, what)
        if self._device.is_meta:
            no_data(what)
        if self._device.type != "cpu":
            return self._device.xp.asnumpy(self._data)
        self._vc.shared = self._vc.shared or keep
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # NumPy's protocol: copy=True (np.array) must give new memory, as PyTorch's does
        a = np.asarray(self._host("a NumPy conversion", keep=not copy))
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:  # (NumPy's own arrays refuse it so: the values must be copied)
                raise ArgumentError(f"np.array(copy=False): a {self.dtype.name} tensor as "
                                    f"{np.dtype(dtype)} needs a copy. Hint: copy=None "
                                    "(np.asarray) copies when needed")
            return a.astype(dtype)
        return a.copy() if copy else a

    def item(self) -> int | float | bool:
        """The value of a one-element tensor as a Python number."""
        if _on_value_read is not None:
            _on_value_read(self, "item()")
        if self._device.is_meta:
            no_data("item()")
        if self._data.size != 1:  # (inside an op, the error names it: argument_kind)
            from ember.ops.argument_kind import not_a_python_value  # (ops import this module)

            raise not_a_python_value(self, "number", ArgumentError(  # (a RuntimeError as torch)
                f"item(): a tensor with {self._data.size} elements cannot be converted to a "
                "Python scalar; index it first"))
        return self._data.reshape(()).item() if self.dtype is not dtypes.bfloat16 else \
            float(self._data.reshape(()))

    def tolist(self) -> Any:
        """The data as nested Python lists."""
        if _on_value_read is not None:
            _on_value_read(self, "tolist()")
        if self._device.is_meta:
            no_data("tolist()")
        if self.dtype is dtypes.bfloat16:
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def detach(self) -> Tensor:
        """The same storage, without history and not requiring grad."""
        out = _wrap(self._data, self._device, False, None, 0, self._vc)
        if _on_detach is not None:
            _on_detach(out, self)
        return out

    def detach_(self) -> Tensor:
        """Cuts this tensor from its history in place (a view cannot be: use :meth:`detach`)."""
        if self._view is not None:
            raise GradError(f"detach_: a view (shape {tuple(self.shape)}) cannot be detached "
                            "in place, as in PyTorch: its memory and history follow its base. "
                            "Hint: use .detach(), which returns a new tensor")
        self._node, self._idx, self._requires_grad = None, 0, False
        if _on_detach is not None:
            _on_detach(self, self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Marks a leaf tensor as needing a gradient, in place."""
        if type(requires_grad) is not bool:
            raise ArgumentTypeError(f"requires_grad must be a bool, got {requires_grad!r}. "
                                    "Hint: bool(value) converts it")
        if requires_grad and self.dtype.category < dtypes.FLOAT:
            raise DTypeError(f"requires_grad_: only floating and complex tensors can require "
                             f"grad, this one is {self.dtype.name}; convert it with .float()")
        node = self.grad_fn  # (of its new history, for a view whose base was written since)
        if node is not None and not requires_grad:
            raise GradError("requires_grad_(False) on a non-leaf tensor: you can only change "
                            "requires_grad flags of leaf variables; use .detach() instead")
        if requires_grad and self._vc.inference:
            from ember.autograd.grad_mode import refuse_inference_requires_grad
            refuse_inference_requires_grad(self)
        self._requires_grad = requires_grad
        if requires_grad and node is None:
            self._view = None  # a view made a leaf: its history is itself, not its base's
        return self

    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor are recorded for autograd; set it on a leaf only
        (example: ``w = ember.zeros(3); w.requires_grad = True``)."""
        view = self._view
        if not self._requires_grad and view is not None and view.version != self._vc.value:
            return view.base.requires_grad  # (its base written since: as PyTorch's view meta)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            raise GradError("requires_grad can only be set on a leaf tensor; for a computed "
                            "tensor that should not be differentiated, use .detach()")
        Tensor.requires_grad_(self, value)  # (a lazy parameter refuses its own methods)

    @property
    def retains_grad(self) -> bool:
        return bool(self._retains)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulates d(self)/d(leaf) into each leaf's ``.grad``.

        Example:
            >>> w = ember.tensor([1.0, 2.0], requires_grad=True)
            >>> (w * w).sum().backward()
            >>> w.grad
            tensor([2., 4.])
        """
        global _engine_backward
        if _engine_backward is None:  # (the engine builds on this module; an import per call
            from ember.autograd.engine import backward as _engine_backward  # cost ~1 µs)
        _engine_backward(self, gradient, retain_graph, create_graph, inputs)

    # -- Python protocol ---------------------------------------------------------------------
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self) -> bool:
        if _on_value_read is not None:
            _on_value_read(self, "bool()")
        if self._device.is_meta:
            no_data("bool()")
        if self._data.size != 1:
            from ember.ops.argument_kind import not_a_python_value

            raise not_a_python_value(self, "bool", RuntimeError(
                f"bool() of a tensor with {self._data.size} elements is ambiguous; use .any() "
                "or .all()"))
        return bool(self._data.reshape(()))

    # (int(), float(), complex(), operator.index and `in`: ops/number_protocol.py)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from ember.tensor_repr import tensor_repr

        if _on_value_read is not None and (shown := _on_value_read(self, "printing")):
            return shown  # (vmap: every sample, as torch's BatchedTensor repr)
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"``: a plain 0-d tensor formats as its Python number, as in PyTorch;
        other tensors as ``str``."""
        if self.ndim == 0 and type(self) is Tensor and not self._device.is_meta:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # (copy.copy, copy.deepcopy and pickling: :mod:`ember.tensor_copy` binds __copy__,
    # __deepcopy__ and __reduce__)


def _unpickled(array: np.ndarray, device: str, requires_grad: bool) -> Tensor:
    # (tensors pickled before :func:`ember.tensor_copy.pickled` name this function)
    from ember.backend import device as to_device

    dev = to_device(device)
    return _wrap(dev.xp.asarray(array), dev, requires_grad)


def _empty_strides(t: Tensor) -> tuple[int, ...]:
    """The strides PyTorch gives ``t``, a tensor without elements (NumPy gives new empty
    arrays zero strides, and views of them strides derived from those): for a view of a base
    without elements, those its chain of view primitives gives the base laid out as PyTorch
    lays it (``transpose(0, 1)`` of a (2, 3, 0) tensor: (1, 3, 1), not C order's (2, 1, 1));
    else its array's, or C order's where those are all zero."""
    a = t._data
    info = t._view
    if info is not None and not info.base._data.size:  # (a view of a base with elements has
        base = info.base  # the strides NumPy derived from the base's: right, mostly)
        b = base._data
        # (on a NumPy stand-in of no memory, whatever the device: meta's as the CPU's)
        laid = np.lib.stride_tricks.as_strided(np.zeros(1, b.dtype), b.shape,
                                               [s * b.itemsize for s in base.stride()])
        try:
            for prim, params in info.chain:
                laid = prim.forward(np, laid, **params)
        except (ValueError, TypeError, IndexError):  # (a base since resized in place)
            laid = None
        if laid is not None and laid.shape == a.shape and laid.itemsize == a.itemsize:
            return tuple(s // a.itemsize for s in laid.strides)
    if any(a.strides):
        return tuple(s // a.itemsize for s in a.strides)
    return tuple(prod(max(n, 1) for n in a.shape[i + 1:]) for i in range(a.ndim))


def _wrap(data: Any, device: Device, requires_grad: bool = False, node: Any = None,
          idx: int = 0, vc: VersionCounter | None = None) -> Tensor:
    """Makes a tensor around a backend array without copying or checking (the hot path)."""
    t = _new(Tensor)
    t._data = data
    t._device = device
    t._requires_grad = requires_grad
    t._grad = None
    t._node = node
    t._idx = idx
    t._vc = _new_counter() if vc is None else vc
    t._hooks = None
    t._retains = False
    t._view = None  # a ViewInfo when this tensor is a view of another one's memory
    if _on_wrap is not None:
        _on_wrap(t)
    return t


_on_wrap: Callable[[Tensor], None] | None = None
#: called with each new subclass of Tensor (``ember.tensor_sharing`` registers its pickling)
SUBCLASS_HOOKS: list[Callable[[type], None]] = []
_engine_backward: Callable[..., None] | None = None  # ember.autograd.engine.backward

#: the slots that make a tensor what it is (data, device, history, …): an object of another
#: class on the same tensor copies these (not its ``__dict__``, the user's attributes)
STATE_SLOTS = Tensor.__slots__[:-2]


_new_counter: Callable[[], VersionCounter] = VersionCounter


def set_counter_factory(factory: Callable[[], VersionCounter] | None) -> None:
    """Makes tensors on new memory take their version counter from ``factory()``
    (``VersionCounter`` when None): how ``inference_mode`` marks the memory made under it,
    without a cost to tensors made outside it."""
    global _new_counter
    _new_counter = VersionCounter if factory is None else factory


def counter_factory() -> Callable[[], VersionCounter]:
    """The factory new memory takes its version counter from now (see
    :func:`set_counter_factory`): a block that installs its own restores this one after.

    Example:
        >>> before = counter_factory()
    """
    return _new_counter


_on_value_read: Callable[[Tensor, str], str | None] | None = None
_on_detach: Callable[[Tensor, Tensor], None] | None = None
_on_data_set: Callable[[Tensor, Tensor], None] | None = None


def set_value_read_hook(hook: Callable[[Tensor, str], str | None] | None) -> None:
    """Makes ``hook(tensor, what)`` run before Python reads a tensor's values (``item()``,
    ``numpy()``, printing...): a transform (vmap) refuses what it cannot give, or returns the
    text to print. Set by the dispatch stack while a transform is active."""
    global _on_value_read
    _on_value_read = hook


def set_detach_hook(hook: Callable[[Tensor, Tensor], None] | None) -> None:
    """Makes ``hook(out, t)`` run when ``out = t.detach()`` is made (``out`` is ``t`` for
    ``t.detach_()``): a transform whose
    tensors stand for others (vmap's per-sample views of a batch) detaches those too. Set by
    the dispatch stack while a transform is active."""
    global _on_detach
    _on_detach = hook


def set_data_set_hook(hook: Callable[[Tensor, Tensor], None] | None) -> None:
    """Makes ``hook(t, value)`` run before ``t.data = value``: vmap refuses it for its
    per-sample tensors. Set by the dispatch stack while a transform is active."""
    global _on_data_set
    _on_data_set = hook


_wrap_hooks: list[Callable[[Tensor], None]] = []
_wrap_hooks_lock = threading.Lock()


def add_wrap_hook(hook: Callable[[Tensor], None]) -> None:
    """Makes ``hook(t)`` see every tensor made from now on, until :func:`remove_wrap_hook`:
    how :mod:`ember.memory` counts the bytes tensors hold and how a jit trace finds new
    tensors. Hooks stack in any order; with none, it costs one global check."""
    with _wrap_hooks_lock:  # (threads' traces and vmaps add and remove theirs at once)
        _wrap_hooks.append(hook)
        _set_on_wrap()


def remove_wrap_hook(hook: Callable[[Tensor], None]) -> None:
    """Removes a hook :func:`add_wrap_hook` added."""
    with _wrap_hooks_lock:
        _wrap_hooks.remove(hook)
        _set_on_wrap()


def _set_on_wrap() -> None:
    global _on_wrap
    hooks = tuple(_wrap_hooks)
    if len(hooks) > 1:
        def each(t: Tensor) -> None:
            for hook in hooks:
                hook(t)
    _on_wrap = None if not hooks else hooks[0] if len(hooks) == 1 else each


_new = object.__new__
_as_size = tuple.__new__  # (a NumPy shape is a tuple of ints already: no checks to pay for)


def _entry(values: tuple, dim: Any, op: str) -> int:
    """``values[dim]`` of ``x.size(dim)`` / ``x.stride(dim)``, else PyTorch's error."""
    if type(dim) is bool:
        raise TypeError(f"{op}(): argument 'dim' must be int, not bool")
    try:
        return values[dim]
    except (IndexError, TypeError):
        from ember.ops.dims import dim_error  # (ops builds on this module)

        raise dim_error(op, dim, len(values)) from None


def method(*names: str) -> Callable:
    """Binds a functional op as Tensor methods: ``@method("exp")`` makes ``x.exp()``.

    With no names, the function's own name is used.
    """
    def bind(fn: Callable) -> Callable:
        for name in names or (fn.__name__,):
            setattr(Tensor, name, fn)
        return fn
    return bind
