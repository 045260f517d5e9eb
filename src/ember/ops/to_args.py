"""The one parser of ``to``'s arguments, shared by ``Tensor.to`` and ``nn.Module.to``.

PyTorch's three forms: ``to(device=None, dtype=None, non_blocking=False, copy=False)``,
``to(dtype, non_blocking=False, copy=False)`` and ``to(tensor, non_blocking=False,
copy=False)``, each with a keyword-only ``memory_format``. An argument given both by position
and by keyword, an unknown keyword, a target in a flag's place or a flag that is not a bool
is a TypeError, as PyTorch's. A string is always a device: one naming a dtype (``"float64"``)
raises with a hint to pass the dtype (PyTorch: "Invalid device string"). One leniency:
``Module.to(device, True)`` reads the bool as ``non_blocking`` (``flag_after_device``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentTypeError, DeviceError, DTypeError
from ember.tensor import Tensor

_DEVICE_FORM = ("device", "dtype", "non_blocking", "copy")
_DTYPE_FORM = ("dtype", "non_blocking", "copy")
_TENSOR_FORM = ("tensor", "non_blocking", "copy")
_LENIENT_FORM = ("device", "non_blocking", "copy")
_TARGETS = frozenset(("device", "dtype"))
_FORMS = ("to(device=None, dtype=None, non_blocking=False, copy=False), to(dtype, "
          "non_blocking=False, copy=False) or to(tensor, non_blocking=False, copy=False)")


def parse_to(op: str, args: tuple, kwargs: dict,
             flag_after_device: bool = False) -> tuple[Any, Any, bool, bool | None, Any]:
    """``(device, dtype, non_blocking, copy, memory_format)`` of a ``to`` call (None where not
    given; ``copy`` None when not given, so ``Module.to`` can refuse it even when False).

    Example:
        >>> parse_to("to", (ember.float64,), {})
        (None, ember.float64, False, None, None)
    """
    if not kwargs and len(args) == 1 and type(args[0]) is not bool:  # (the usual calls)
        first = args[0]
        if isinstance(first, Tensor):
            return first.device, first.dtype, False, None, None
        if first is not None and is_dtype(first):
            return None, first, False, None, None
        _refuse_dtype_name(op, first)
        return first, None, False, None, None
    if not args and kwargs.keys() <= _TARGETS:  # (to(dtype=..., device=...))
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        _check_target(op, args, kwargs, device, dtype)
        return device, dtype, False, None, None
    if args:
        first = args[0]
        if type(first) is bool:  # (PyTorch reads to(True) as a bool dtype: no silent cast)
            raise ArgumentTypeError(f"{op}: a positional flag ({first!r}) before the target; "
                                    "flags (non_blocking, copy) follow it: to(dtype, "
                                    "non_blocking), and a bool tensor is to(ember.bool)")
        form = _TENSOR_FORM if isinstance(first, Tensor) else \
            _DEVICE_FORM if first is None or not is_dtype(first) else _DTYPE_FORM
        if (flag_after_device and form is _DEVICE_FORM and first is not None
                and len(args) > 1 and type(args[1]) is bool):
            form = _LENIENT_FORM
        if len(args) > len(form):
            raise _wrong(op, args, kwargs, f"too many positional arguments ({len(args)})")
        got = dict(zip(form, args))
    else:
        form, got = (_TENSOR_FORM if "tensor" in kwargs else _DEVICE_FORM), {}
    memory_format = None
    for key, value in kwargs.items():
        if key == "memory_format":
            memory_format = value
        elif key in got:
            raise _wrong(op, args, kwargs, f"got multiple values for argument '{key}'")
        elif key in form or (key == "dtype" and form is _LENIENT_FORM):
            got[key] = value
        else:
            raise _wrong(op, args, kwargs, f"got an unexpected keyword argument '{key}'")
    device, dtype = got.get("device"), got.get("dtype")
    if form is _TENSOR_FORM:
        other = got.get("tensor")
        if not isinstance(other, Tensor):
            raise _wrong(op, args, kwargs, f"tensor must be a Tensor, not {type(other).__name__}")
        device, dtype = other.device, other.dtype
    else:
        _check_target(op, args, kwargs, device, dtype)
    non_blocking, copy = got.get("non_blocking", False), got.get("copy")
    for name, flag in (("non_blocking", non_blocking), ("copy", copy)):
        if (flag is not None or name in got) and type(flag) is not bool:
            raise _wrong(op, args, kwargs, f"{name} must be a bool, not {type(flag).__name__}")
    return device, dtype, non_blocking, copy, memory_format


def _check_target(op: str, args: tuple, kwargs: dict, device: Any, dtype: Any) -> None:
    """A TypeError unless ``dtype`` is None or a dtype and ``device`` None or not a dtype."""
    if dtype is not None and (type(dtype) is bool or isinstance(dtype, Tensor)
                              or not is_dtype(dtype)):
        named = isinstance(dtype, str) and _is_dtype_name(dtype)
        hint = f" (pass ember.{dtypes.to_dtype(dtype).name}, not a string)" if named else ""
        raise _wrong(op, args, kwargs, f"dtype must be a dtype, not "
                     f"{type(dtype).__name__}{hint}")
    _refuse_dtype_name(op, device)
    if device is not None and not isinstance(device, str) and (
            type(device) is bool or isinstance(device, Tensor) or is_dtype(device)):
        raise _wrong(op, args, kwargs, f"device must be a device, not {type(device).__name__}")


def _refuse_dtype_name(op: str, device: Any) -> None:
    """A DeviceError when a device string names a dtype: ``to("float64")``."""
    if isinstance(device, str) and _is_dtype_name(device):
        raise DeviceError(f"{op}: {device!r} is a dtype name, not a device. Hint: pass the "
                          f"dtype itself, to(ember.{dtypes.to_dtype(device).name})")


def _wrong(op: str, args: tuple, kwargs: dict, why: str) -> ArgumentTypeError:
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}"
                                                         for k, v in kwargs.items()])
    return ArgumentTypeError(f"{op}: {why}; got ({got}), expected one of {_FORMS}")


def is_dtype(target: Any) -> bool:
    """Whether a positional argument of ``to`` is a dtype (else a device or a tensor; a
    string is a device, as PyTorch's)."""
    if isinstance(target, str):
        return False
    # (a torch.dtype or quantized dtype: to_dtype refuses it with a hint, rather than the
    # device parser; np.dtype('float16') reads as NumPy's float16 type does)
    return isinstance(target, (DType, type, np.dtype)) or type(target).__name__ == "dtype" \
        or hasattr(type(target), "__ember_dtype__")


@functools.lru_cache(maxsize=64)
def _is_dtype_name(s: str) -> bool:
    # (cached: x.to("cpu") in a training loop would pay a DTypeError, ~2.5 µs, on every call)
    try:
        dtypes.to_dtype(s)
        return True
    except DTypeError:
        return False
