"""Resizing: ``interpolate`` (modes nearest, nearest-exact, linear, bilinear, trilinear, area)
and ``upsample``.

Every mode is separable: each spatial axis is resampled in turn with constant source indices
(and, for the linear modes, constant weights) computed with PyTorch's coordinate rules, in the
input's precision. The resampling itself is ``index_select`` (and a lerp), so gradients
scatter-add back through those rules and every derivative order works. ``area`` is adaptive
average pooling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.errors import ShapeError
from ember.ops.pool import _adaptive_avg_pool
from ember.tensor import Tensor, _wrap

__all__: list[str] = []

_SPATIAL = {"linear": 1, "bilinear": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area")


def _sizes(input: Tensor, size: Any, scale_factor: Any,
           recompute_scale_factor: bool | None) -> tuple[tuple[int, ...], tuple]:
    """Output sizes, and the scale factors the coordinate mapping uses (None: from sizes)."""
    nd = input.ndim - 2
    spatial = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size or scale_factor")
    if size is not None:
        out = (int(size),) * nd if isinstance(size, int) else tuple(int(s) for s in size)
        if len(out) != nd:
            raise ShapeError(f"interpolate: size {size!r} has {len(out)} entries but the input "
                             f"of shape {tuple(input.shape)} has {nd} spatial dimensions")
        return out, (None,) * nd
    scales = (float(scale_factor),) * nd if not isinstance(scale_factor, Sequence) else \
        tuple(float(s) for s in scale_factor)
    if len(scales) != nd:
        raise ShapeError(f"interpolate: scale_factor {scale_factor!r} has {len(scales)} "
                         f"entries but the input has {nd} spatial dimensions")
    out = tuple(math.floor(s * f) for s, f in zip(spatial, scales, strict=True))
    return out, ((None,) * nd if recompute_scale_factor else scales)


def _ratio(np_type: Any, size: int, out: int, scale: float | None) -> Any:
    """PyTorch's source-per-destination ratio: ``1 / scale_factor`` if given, else in/out."""
    if scale is not None and scale > 0:
        return np_type(1.0 / scale)
    return np_type(size) / np_type(out)


def _nearest_index(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    dst = np.arange(out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    elif out == size:
        return np.arange(out)
    src = np.floor(dst * _ratio(np.float32, size, out, scale)).astype(np.int64)
    return np.minimum(src, size - 1)


def _linear_weights(size: int, out: int, scale: float | None, align_corners: bool,
                    dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Left and right source indices and the right one's weight, per output position."""
    t = dtype.type
    dst = np.arange(out, dtype=dtype)
    if align_corners:
        ratio = t(size - 1) / t(out - 1) if out > 1 else t(0)
        src = dst * ratio
    else:
        src = np.maximum((dst + t(0.5)) * _ratio(t, size, out, scale) - t(0.5), t(0))
    left = src.astype(np.int64)
    right = np.minimum(left + 1, size - 1)
    lam = np.clip(src - left, 0, 1).astype(dtype)
    return left, right, lam


def _select(x: Tensor, axis: int, index: np.ndarray) -> Tensor:
    xp = x.device.xp
    return x.index_select(axis, _wrap(xp.asarray(index), x.device))


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resizes a (N, C, *spatial) input to ``size`` or by ``scale_factor``.

    Modes: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (3-D input), ``"bilinear"``
    (4-D), ``"trilinear"`` (5-D), ``"area"``. ``align_corners`` (linear modes only) maps the
    corner pixels' centres onto each other.

    Example:
        >>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)[0, 0, 0]
        tensor([1.0000, 1.3333, 1.6667, 2.0000])
    """
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported; expected one "
                                  f"of {', '.join(_MODES)}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if input.ndim < 3:
        raise ShapeError(f"interpolate: expected an (N, C, *spatial) input, got shape "
                         f"{tuple(input.shape)}")
    nd = input.ndim - 2
    linear = mode in _SPATIAL
    if linear and _SPATIAL[mode] != nd:
        raise ShapeError(f"interpolate: mode {mode!r} needs a {_SPATIAL[mode] + 2}-D input, "
                         f"got a {input.ndim}-D one of shape {tuple(input.shape)}")
    if align_corners is not None and not linear:
        raise ValueError("interpolate: align_corners can only be set with the interpolating "
                         "modes linear, bilinear and trilinear")
    out, scales = _sizes(input, size, scale_factor, recompute_scale_factor)
    if min(out, default=1) <= 0:
        raise ShapeError(f"interpolate: output size {out} must be positive (input shape "
                         f"{tuple(input.shape)})")
    if mode == "area":
        return _adaptive_avg_pool("interpolate", nd, input, out)
    if linear and not input.dtype.is_floating_point:
        raise TypeError(f"interpolate: mode {mode!r} needs a floating input, got "
                        f"{input.dtype.name}")

    y = input
    for i, (s, o, scale) in enumerate(zip(input.shape[2:], out, scales, strict=True)):
        axis = 2 + i
        if not linear:
            if o != s or mode == "nearest-exact":
                y = _select(y, axis, _nearest_index(s, o, scale, mode == "nearest-exact"))
            continue
        left, right, lam = _linear_weights(s, o, scale, bool(align_corners), input.dtype.np)
        a, b = _select(y, axis, left), _select(y, axis, right)
        weight = _wrap(y.device.xp.asarray(lam.reshape((o,) + (1,) * (nd - 1 - i))),
                       y.device)
        y = a + (b - a) * weight
    return y


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None,
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """The deprecated name of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)
