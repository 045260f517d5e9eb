"""The dtype and device conversions of :class:`~ember.nn.Module` (``to``, ``type``,
``float`` …, ``cpu``, ``cuda`` …, ``to_empty``), each through the module's ``_apply``.

``Module.to`` parses its arguments with ``Tensor.to``'s parser (``ember.ops.to_args``);
a ``copy`` flag is a TypeError, as PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from ember import dtypes
from ember.backend import Device
from ember.backend.device import KNOWN_TYPES
from ember.errors import ArgumentTypeError, DeviceError
from ember.ops.creation import empty_like
from ember.ops.to_args import parse_to
from ember.tensor import Tensor


def is_device_like(x: Any) -> bool:
    """Whether ``x`` names a device (a ``Device``, or a string such as ``"cpu"``, ``"cuda:0"``)."""
    if isinstance(x, Device):
        return True
    return isinstance(x, str) and x.split(":")[0] in KNOWN_TYPES


class ConversionMixin:
    """``Module``'s dtype and device conversions (it provides ``_apply``)."""

    _apply: Callable[..., Any]

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """Casts floating (and complex) parameters and buffers to a floating or complex dtype
        and/or moves them to a device, with ``Tensor.to``'s arguments (one parser):
        ``model.to(ember.float64)``, ``model.to("cpu")``, ``model.to(tensor)`` (its dtype and
        device), ``non_blocking`` after the target. Integer buffers keep their dtype.
        ``copy`` is refused, as PyTorch's. One leniency: ``model.to("cpu", True)`` reads the
        bool as ``non_blocking`` (PyTorch: a TypeError, the bool in the dtype's place).
        ``memory_format`` (e.g. ``ember.channels_last``) lays out the 4-d
        (``channels_last_3d``: 5-d) parameters and buffers. Returns ``self``.

        Example:
            >>> nn.Linear(2, 3).to(ember.float64).weight.dtype
            ember.float64
        """
        device, dtype, _, copy, memory_format = parse_to("nn.Module.to", args, kwargs,
                                                         flag_after_device=True)
        if copy is not None:
            raise ArgumentTypeError("nn.Module.to: does not accept a copy argument, as "
                                    "PyTorch's")
        if dtype is not None:
            dtype = dtypes.to_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            keep = not (t.dtype.is_floating_point or t.dtype.is_complex)
            out = t.to(dtype=None if keep else dtype, device=device)
            if memory_format is not None and t.ndim in (4, 5):
                out = out.contiguous(memory_format=memory_format)
            return out

        return self._apply(convert)

    def type(self, dst_type: Any) -> Self:
        """Casts every parameter and buffer to ``dst_type`` (integer ones too, unlike
        :meth:`to`), as PyTorch's ``Module.type``.

        Example:
            >>> nn.Linear(2, 3).type(ember.float64).weight.dtype
            ember.float64
        """
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device: Any, recurse: bool = True) -> Self:
        """Moves parameters and buffers to ``device`` without copying their values: each gets
        new, uninitialised memory of its shape and dtype. How a model built on the meta
        device gets real storage, to fill next with ``reset_parameters()`` or
        ``load_state_dict(sd, assign=True)``. Returns ``self``.

        Example:
            >>> with ember.device("meta"):
            ...     m = nn.Linear(2, 3)
            >>> m.to_empty(device="cpu").weight.device
            device(type='cpu')
        """
        return self._apply(lambda t: empty_like(t, device=device), recurse)

    def float(self) -> Self:  # (floating ones only: complex ones keep their dtype)
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self) -> Self:  # (floating ones only: complex ones keep their dtype)
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self) -> Self:  # (floating ones only: complex ones keep their dtype)
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self) -> Self:  # (floating ones only: complex ones keep their dtype)
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    def cpu(self) -> Self:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Self:
        return self._to_backend("cuda", device)

    def xpu(self, device: Any = None) -> Self:
        return self._to_backend("xpu", device)

    def mtia(self, device: Any = None) -> Self:
        return self._to_backend("mtia", device)

    def ipu(self, device: Any = None) -> Self:
        return self._to_backend("ipu", device)

    def _to_backend(self, kind: str, device: Any) -> Self:
        if isinstance(device, bool) or not (device is None or isinstance(device, int)
                                            or is_device_like(device)):
            raise ArgumentTypeError(f"nn.Module.{kind}: device must be a device, a string or "
                                    f"an int index, not {type(device).__name__}")
        if isinstance(device, int):
            device = f"{kind}:{device}"  # (an index, as PyTorch's module.cuda(0))
        if device is not None and str(device).split(":")[0] != kind:
            raise DeviceError(f"nn.Module.{kind}: invalid device {str(device)!r}, must be a "
                              f"{kind} device, as in PyTorch. Hint: module.to({str(device)!r})")
        return self.to(kind if device is None else device)
