"""``nn.Parameter`` (a tensor a module trains), ``nn.Buffer`` (a tensor it keeps but does not
train), and ``nn.UninitializedParameter`` / ``nn.UninitializedBuffer`` (those of a lazy module,
shape still unknown; :func:`is_lazy` tells them apart).

A :class:`Parameter` is a :class:`~ember.Tensor` subclass with no extra state, so it is a leaf
tensor in every op; the ops themselves return plain tensors.
"""

from __future__ import annotations

import weakref
from multiprocessing.reduction import ForkingPickler
from types import MethodType
from typing import Any

import numpy as np

from ember.errors import UninitializedError
from ember.tensor import STATE_SLOTS, Tensor
from ember.tensor_sharing import reduce_shared


def _share(cls: type, data: Tensor | None, requires_grad: bool) -> Any:
    """A ``cls`` object sharing ``data``'s memory and version counter, with no history."""
    if data is None:
        from ember.ops.creation import empty

        data = empty(0)
    if not isinstance(data, Tensor):
        hint = ("; sparse parameters are not supported: keep the sparse tensor as a plain "
                "attribute, or use nn.Embedding(sparse=True) for sparse gradients"
                if getattr(data, "is_sparse", False) else "")
        raise TypeError(f"{cls.__name__}: expected a tensor, got {type(data).__name__}{hint}")
    out = object.__new__(cls)
    for slot in STATE_SLOTS:
        setattr(out, slot, getattr(data, slot))
    out._node, out._idx, out.grad, out._hooks, out._retains, out._view = (None, 0, None, None,
                                                                          False, None)
    out._requires_grad = False
    if requires_grad:
        Tensor.requires_grad_(out, True)  # (an uninitialized parameter refuses its methods)
    return out


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a module attribute registers it.

    It shares memory with ``data`` and requires grad unless told otherwise.

    Example:
        >>> p = nn.Parameter(ember.zeros(3))
        >>> p.requires_grad, isinstance(p, ember.Tensor)
        (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        return _share(cls, data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self) -> Any:  # (with the user's attributes, as PyTorch's)
        return Parameter, (self.detach(), self.requires_grad), self.__dict__ or None

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        from ember.autograd.grad_mode import no_grad

        with no_grad():  # (without .grad, as PyTorch's: a deep-copied model has none)
            out = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out


class Buffer(Tensor):
    """Marks a tensor as a module buffer: ``self.stats = nn.Buffer(t, persistent=False)``
    registers it as :meth:`Module.register_buffer` would. The module stores a plain tensor
    sharing ``data``'s memory, not the marker (as PyTorch does).

    Example:
        >>> m = nn.Module(); m.count = nn.Buffer(ember.zeros(()))
        >>> list(dict(m.named_buffers()))
        ['count']
    """

    __slots__ = ("persistent",)

    def __new__(cls, data: Tensor, *, persistent: bool = True) -> Buffer:
        out = _share(cls, data, False)
        out._requires_grad = data.requires_grad
        out.persistent = persistent
        return out

    def unwrap(self) -> Tensor:
        """The plain tensor this marker stands for."""
        from ember.tensor import _wrap

        return _wrap(self._data, self._device, self.requires_grad, None, 0, self._vc)


# the ids of the UninitializedBuffer objects made with persistent=False (an entry goes when
# its buffer is collected, so an id is never mistaken for a later object's)
_NON_PERSISTENT: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

_USE_HINT = ("This error happens when you are using a `LazyModule` or explicitly manipulating "
             "`ember.nn.parameter.UninitializedParameter` objects. When using LazyModules call "
             "`forward` with a dummy batch to initialize the parameters before calling ember "
             "functions")


class _Unmaterialized(np.ndarray):
    """The empty array of an uninitialized parameter or buffer: computing with it or writing
    to it raises (its shape and dtype stay readable for Ember's bookkeeping)."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise UninitializedError(f"Attempted to use an uninitialized parameter in "
                                 f"{ufunc.__name__}. {_USE_HINT}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise UninitializedError(f"Attempted to use an uninitialized parameter in "
                                 f"{func.__name__}. {_USE_HINT}")

    def __setitem__(self, key: Any, value: Any) -> None:
        # (every in-place write: fill_, init.normal_, … would be lost when it materializes)
        raise UninitializedError(f"Attempted to write to an uninitialized parameter. "
                                 f"{_USE_HINT}")


def _placeholder(device: Any, dtype: Any) -> Tensor:
    """An empty tensor whose values cannot be computed with (on the CPU backend)."""
    from ember.ops.creation import empty

    t = empty(0, dtype=dtype, device=device)
    if isinstance(t._data, np.ndarray):
        t._data = t._data.view(_Unmaterialized)
    return t


# the Tensor methods an uninitialized parameter or buffer answers, as PyTorch's
_ALLOWED_METHODS = frozenset({
    "size", "copy_", "is_complex", "is_floating_point", "half", "float", "double", "char",
    "short", "int", "long", "cuda", "cpu", "to", "get_device"})


class UninitializedTensorMixin:
    """What :class:`UninitializedParameter` and :class:`UninitializedBuffer` share, as
    PyTorch's: no shape yet (reading ``.shape`` raises a ``RuntimeError``; ``size()`` is
    ``(0,)``); its properties (``dtype``, ``device``, ``requires_grad``, ``data``, ``ndim``)
    answer, and so do the conversion methods (``to``, ``float``, ``cpu``, …, ``copy_``), but
    calling any other tensor method, or computing with it, raises
    :class:`~ember.errors.UninitializedError` (a ``ValueError``). ``materialize`` gives it a
    shape and turns it into ``cls_to_become``, the same object."""

    __slots__ = ()
    cls_to_become: type

    @property
    def shape(self) -> Any:
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to load "
                           "an uninitialized parameter into an initialized one. Call `forward` "
                           "to initialize the parameters before accessing their attributes.")

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if (name[0] == "_" or name in _ALLOWED_METHODS or type(value) is not MethodType
                or not hasattr(Tensor, name)):
            return value
        return _refusal(name)

    def materialize(self, shape: int | tuple[int, ...], device: Any = None, dtype: Any = None
                    ) -> None:
        """Allocates ``shape`` (uninitialized values, on ``device`` in ``dtype``, by default
        its own) and becomes ``cls_to_become``."""
        from ember.ops.creation import empty

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = empty(shape, dtype=dtype or self.dtype, device=device or self.device)
        _NON_PERSISTENT.pop(id(self), None)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce__(self) -> Any:
        return type(self), (self.requires_grad,)  # (as PyTorch: a fresh one, default dtype)


def refuse_lazy(op: str) -> None:
    """Raises PyTorch's error for computing ``op`` with an uninitialized parameter."""
    raise UninitializedError(f"Attempted to use an uninitialized parameter in {op}. {_USE_HINT}")


def _refusal(name: str) -> Any:
    """What an uninitialized parameter's method ``name`` is: a function that raises."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        refuse_lazy(name)
    refuse.__name__ = name
    return refuse


# (Python looks these up on the type, past ``__getattribute__``)
for _name in ("__len__", "__bool__", "__getitem__", "__setitem__", "__iter__", "__float__",
              "__int__", "__index__", "__complex__"):
    setattr(UninitializedTensorMixin, _name, _refusal(_name))


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer (of a lazy module).

    Example:
        >>> nn.parameter.is_lazy(nn.UninitializedParameter()), nn.parameter.is_lazy(ember.ones(1))
        (True, False)
    """
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (a lazy module's, until its first call);
    ``materialize`` gives it one and turns it into a plain :class:`Parameter`, the same
    object (so an optimizer holding it keeps working).

    Example:
        >>> p = nn.UninitializedParameter()
        >>> p + 1
        Traceback (most recent call last):
        ...
        ember.errors.UninitializedError: Attempted to use an uninitialized parameter in add...
        >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
        ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None
                ) -> UninitializedParameter:
        return _share(cls, _placeholder(device, dtype), requires_grad)

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (it holds no elements); ``materialize`` gives
    it one and turns it into a plain :class:`~ember.Tensor`, the same object. Assigned to a
    module attribute, it registers as a buffer (``persistent=False`` keeps it out of the
    state dict), as :class:`~ember.nn.Buffer` does.

    Example:
        >>> b = nn.UninitializedBuffer()
        >>> b.materialize((2,)); type(b).__name__, tuple(b.shape)
        ('Tensor', (2,))
    """

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        out = _share(cls, _placeholder(device, dtype), requires_grad)
        if not persistent:
            _NON_PERSISTENT[id(out)] = out
        return out

    @property
    def persistent(self) -> bool:
        """Whether a module that registers this buffer saves it in its state dict."""
        return id(self) not in _NON_PERSISTENT

    def __deepcopy__(self, memo: dict) -> UninitializedBuffer:
        if id(self) not in memo:
            memo[id(self)] = UninitializedBuffer(self.requires_grad, self.device, self.dtype,
                                                 self.persistent)
        return memo[id(self)]


ForkingPickler.register(Parameter, reduce_shared)  # (sent to a process: shares its memory)
