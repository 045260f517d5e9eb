"""``custom_fwd`` / ``custom_bwd``: how a custom ``autograd.Function`` meets autocast, as
``torch.amp.custom_fwd`` / ``custom_bwd``; and ``is_autocast_available``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from ember.amp.autocast_mode import _eligible, autocast, get_autocast_dtype, is_autocast_enabled
from ember.dtypes import DType
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["custom_fwd", "custom_bwd", "is_autocast_available"]

# the device types PyTorch knows (it raises for any other name); Ember autocasts two of them
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


def is_autocast_available(device_type: str) -> bool:
    """Whether :class:`~ember.autocast` works for ``device_type``: ``"cpu"`` and
    ``"cuda"``.

    Example:
        >>> ember.amp.is_autocast_available("cpu"), ember.amp.is_autocast_available("meta")
        (True, False)
    """
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {device_type}")
    return device_type in ("cpu", "cuda")


def _check_device_type(device_type: Any) -> None:
    if not isinstance(device_type, str):
        raise ArgumentError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _cast(value: Any, device_type: str, dtype: DType) -> Any:
    """``value`` with its floating tensors on ``device_type`` (float64 aside) in ``dtype``,
    through lists, tuples and dicts."""
    if isinstance(value, Tensor):
        eligible = _eligible(value) and value.device.type == device_type
        return value.to(dtype) if eligible else value
    if isinstance(value, Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: DType | None = None) -> Callable:
    """Decorates the ``forward`` of a custom :class:`~ember.autograd.Function`. Under
    autocast, with ``cast_inputs`` (a dtype) the forward runs with autocast off and its
    floating inputs cast to ``cast_inputs``; without, it runs under the surrounding autocast.
    Either way :func:`custom_bwd` then runs backward under the same autocast state.

    Example:
        >>> from ember.amp import custom_fwd, custom_bwd
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     @custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> x = ember.ones(2, dtype=ember.bfloat16, requires_grad=True)
        >>> with ember.autocast("cpu"):
        ...     y = Square.apply(x)
        >>> y.dtype
        ember.float32
    """
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        autocasting = is_autocast_enabled(device_type)
        if cast_inputs is None or not autocasting:
            ctx._fwd_used_autocast = autocasting and cast_inputs is None
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorates the ``backward`` of a custom :class:`~ember.autograd.Function` whose
    ``forward`` has :func:`custom_fwd`: backward runs under the autocast state (on or off, and
    its dtype) that forward ran in.

    Example:
        >>> from ember.amp import custom_bwd
        >>> decorate = custom_bwd(device_type="cpu")
    """
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, dtype=ctx._dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd
