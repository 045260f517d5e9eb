"""Devices: where a tensor's memory lives and which array namespace computes on it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ember.errors import DeviceError


class Device:
    """A place tensors live: ``ember.device("cpu")``, ``ember.device("meta")`` (shapes and
    dtypes, no data), later ``ember.device("cuda:0")``.

    Devices are singletons, so ``a.device is b.device`` is the cheap same-device test.

    Example:
        >>> ember.device("cpu")
        device(type='cpu')
    """

    __slots__ = ("type", "index", "xp", "_zero_view", "is_meta")

    def __init__(self, type: str, index: int | None, xp: ModuleType,
                 zero_view: Callable | None = None, is_meta: bool = False) -> None:
        self.type = type
        self.index = index
        self.xp = xp  # the array namespace primitives compute with (numpy, later cupy)
        self._zero_view = zero_view
        # the meta device holds no data: ops compute output specs from ``infer``, no kernel
        self.is_meta = is_meta

    def zero_view(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A read-only array of ``shape`` whose memory is one zero element (broadcast): what
        autograd keeps in place of an input whose values a rule never reads."""
        if self._zero_view is not None:
            return self._zero_view(shape, dtype)
        return self.xp.broadcast_to(self.xp.zeros((), dtype), shape)

    def __enter__(self) -> Device:
        """``with ember.device("meta"):`` makes this the default device of the factories
        (``ember.empty``, a module's parameters) inside the block, in this thread only, as
        PyTorch's does."""
        _entered.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _entered.stack.pop()

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self) -> tuple:
        return (device, (str(self),))


_registry: dict[str, Device] = {}
_backends: dict[str, callable] = {}


def register_backend(type: str, make: callable) -> None:
    """Registers a device type; ``make(index)`` returns its :class:`Device` (or raises)."""
    _backends[type] = make


def device(spec: str | Device | None = None) -> Device:
    """Returns the :class:`Device` for ``"cpu"``, ``"cuda"``, ``"cuda:1"``… (``None``: default).

    Example:
        >>> ember.device("cpu").type
        'cpu'
    """
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return get_default_device()
    if not isinstance(spec, str):
        raise DeviceError(f"device: expected a string like 'cpu' or 'cuda:0', got {spec!r}")
    found = _registry.get(spec)
    if found is not None:
        return found
    type, _, index = spec.partition(":")
    if type not in _backends:
        raise DeviceError(f"device: unknown device type {type!r}; this build knows "
                          + ", ".join(sorted(_backends)))
    dev = _backends[type](int(index) if index else None)
    _registry[spec] = dev
    return dev


_default: list[Device] = []


class _Entered(threading.local):
    """The devices of this thread's open ``with device`` blocks, innermost last."""

    def __init__(self) -> None:
        self.stack: list[Device] = []


_entered = _Entered()


def get_default_device() -> Device:
    """The device new tensors are created on: the innermost ``with device`` block's in this
    thread, else the one ``set_default_device`` set (cpu unless changed)."""
    stack = _entered.stack
    return stack[-1] if stack else _default[0]


def set_default_device(spec: str | Device) -> None:
    """Sets the device new tensors are created on.

    Example:
        >>> ember.set_default_device("meta"); ember.zeros(2).is_meta
        True
        >>> ember.set_default_device("cpu")
    """
    _default[0] = device(spec)
