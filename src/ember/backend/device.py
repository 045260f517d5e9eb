"""Devices: where a tensor's memory lives and which array namespace computes on it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ember.errors import DeviceError, type_name


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

    @property
    def has_backend(self) -> bool:
        """Whether this build can allocate and compute here (False for ``cuda`` made without
        a CUDA backend, which only names the place)."""
        return not isinstance(self.xp, _NoBackend)

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


# PyTorch's device types: one this build has no backend for is still a device (as PyTorch
# makes ``torch.device("cuda")`` without CUDA), whose every use raises
KNOWN_TYPES = frozenset({
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone"})


class DeviceUnavailableError(DeviceError, AssertionError):
    """Memory or computation asked of a device this build has no backend for (``cuda``,
    ``mps`` …): an ``AssertionError`` as PyTorch's "Torch not compiled with CUDA enabled", and
    a ``RuntimeError`` as its message for the other types."""


class _NoBackend:
    """The array namespace of a device without a backend: any use of it raises."""

    __slots__ = ("_spec",)

    def __init__(self, spec: str) -> None:
        self._spec = spec

    def __getattr__(self, name: str) -> Any:
        raise no_backend_error(self._spec)


def no_backend_error(spec: str, op: str = "") -> DeviceUnavailableError:
    """The error for allocating or computing on the backend-less device ``spec`` (in ``op``)."""
    type = spec.partition(":")[0]
    check = ("ember.cuda.is_available()" if type == "cuda" else
             f"ember.{type}.is_available()" if type in ("mps", "xpu") else
             "ember.accelerator.is_available()")
    return DeviceUnavailableError(
        f"{op + ': ' if op else ''}device {spec!r}: this build of Ember has no {type} backend "
        f"(it computes on the CPU), so no tensor can be allocated or computed there, as "
        f"PyTorch without {type} raises 'Torch not compiled with {type.upper()} enabled'. "
        f"Hint: choose the device with `'{type}' if {check} else 'cpu'`")


def _parse(spec: Any, index: int | None) -> tuple[str, int | None]:
    """``(type, index)`` of ``"cuda:1"`` or of ``("cuda", 1)``."""
    if not isinstance(spec, str):
        hint = (f" ({type_name(spec)}). Hint: pass Ember's, the string {str(spec)!r} or "
                f"ember.device({str(spec)!r})" if spec.__class__.__module__ == "torch" else "")
        raise DeviceError(f"device: expected a string like 'cpu' or 'cuda:0', got {spec!r}"
                          + hint)
    type, colon, written = spec.partition(":")
    if colon and index is not None:
        raise DeviceError(f"device: type {spec!r} must not include an index because index "
                          f"{index} was passed explicitly")
    if colon:
        if not written.isdigit():
            raise DeviceError(f"device: invalid device string {spec!r}. Hint: write it as "
                              "'cpu', 'cuda' or 'cuda:0'")
        index = int(written)
    if index is not None and (not isinstance(index, int) or index < 0):
        raise DeviceError(f"device: the index must be a non-negative int, got {index!r}")
    if type not in _backends and type not in KNOWN_TYPES:
        raise DeviceError(f"device: unknown device type {type!r}; expected one of "
                          + ", ".join(sorted(KNOWN_TYPES)))
    return type, index


def _lookup(spec: str | Device | None = None, index: int | None = None) -> Device:
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return get_default_device()
    found = _registry.get(spec) if index is None else None
    if found is not None:
        return found
    type, index = _parse(spec, index)
    name = type if index is None else f"{type}:{index}"
    dev = _registry.get(name)
    if dev is None:
        dev = _backends[type](index) if type in _backends else Device(type, index,
                                                                       _NoBackend(name))
        _registry[name] = dev
    return dev


class _DeviceKind(type):
    """Makes :class:`device` a function (returning the one :class:`Device` for a spec) that is
    also the type of those devices, as ``torch.device`` is: ``isinstance(d, ember.device)``."""

    def __call__(cls, spec: str | Device | None = None, index: int | None = None) -> Device:
        return _lookup(spec, index)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Device)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, Device)


class device(metaclass=_DeviceKind):  # noqa: N801 - PyTorch's name
    """Returns the :class:`Device` for ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or ``("cuda", 1)``
    (``None``: the default one); ``isinstance(d, ember.device)`` tells a device.

    A device type this build has no backend for (``cuda``, ``mps`` …) still makes a device,
    with its ``type``, ``index`` and comparisons, as in PyTorch; allocating or computing on it
    raises :class:`DeviceUnavailableError`.

    Example:
        >>> ember.device("cpu").type
        'cpu'
        >>> ember.device("cuda", 0)
        device(type='cuda', index=0)
    """


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
