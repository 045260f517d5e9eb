"""Resizing: ``interpolate`` (modes nearest, nearest-exact, linear, bilinear, trilinear, area)
and ``upsample``.

Every mode is separable, so each spatial axis is resampled in turn by one linear primitive
pair: ``resample`` (output position o reads ``(1 - λ_o)·x[left_o] + λ_o·x[right_o]``, with
PyTorch's source coordinates computed in the input's precision; nearest modes have λ = 0) and
``resample_transpose`` (its adjoint). Each is the other's vjp, so every derivative order
works. Source indices grow with o, so the adjoint sums contiguous runs with one
``add.reduceat`` instead of a scatter-add. ``area`` is adaptive average pooling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ember.errors import ShapeError
from ember.ops.pool import _adaptive_avg_pool
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

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


@lru_cache(maxsize=256)
def _plan(size: int, out: int, scale: float | None, mode: str, align_corners: bool,
          dtype: np.dtype) -> tuple:
    """``(left, right, λ)`` per output position (``right, λ`` None for nearest modes), and
    for the adjoint the start of each run of equal ``left`` (and ``right``) indices."""
    if mode == "linear":
        left, right, lam = _linear_weights(size, out, scale, align_corners, dtype)
    else:
        left, right, lam = _nearest_index(size, out, scale, mode == "nearest-exact"), None, None

    def runs(index: np.ndarray | None) -> tuple | None:
        if index is None:
            return None
        starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        return index[starts], starts

    return left, right, lam, runs(left), runs(right)


def _along(lam: Any, axis: int, ndim: int) -> Any:
    """A per-position weight vector shaped to broadcast along ``axis``."""
    return lam.reshape((-1,) + (1,) * (ndim - 1 - axis))


class _Resampling(Primitive):
    save_inputs = False

    def plan(self, xp: Any, p: dict, dtype: Any) -> tuple:
        left, right, lam, left_runs, right_runs = _plan(
            p["size"], p["out"], p["scale"], p["mode"], p["align_corners"], np.dtype(dtype))
        if lam is None:
            return xp.asarray(left), None, None, left_runs, None
        return xp.asarray(left), xp.asarray(right), xp.asarray(lam), left_runs, right_runs


@primitive
class Resample(_Resampling):
    """Resamples one axis of size ``size`` to ``out`` positions."""

    name = "resample"

    def forward(self, xp, x, *, axis, **p):
        left, right, lam, _, _ = self.plan(xp, p, x.dtype)
        picked = xp.take(x, left, axis=axis)
        if lam is None:
            return picked
        lam = _along(lam, axis, x.ndim)
        return picked * (1 - lam) + xp.take(x, right, axis=axis) * lam

    def infer(self, x, *, axis, out, **p):
        return TensorSpec(x.shape[:axis] + (out,) + x.shape[axis + 1:], x.dtype)

    def vjp(self, ctx, g):
        return apply(ResampleTranspose, g, **ctx.params)

    def jvp(self, ctx, dx):
        return apply(Resample, dx, **ctx.params)


@primitive
class ResampleTranspose(_Resampling):
    """The adjoint of ``resample``: sums each output position's share back into its sources."""

    name = "resample_transpose"

    def forward(self, xp, g, *, axis, **p):
        _, _, lam, left_runs, right_runs = self.plan(xp, p, g.dtype)
        shape = g.shape[:axis] + (p["size"],) + g.shape[axis + 1:]
        out = xp.zeros(shape, dtype=g.dtype)
        where = (slice(None),) * axis
        if lam is None:
            shares = ((g, left_runs),)
        else:
            lam = _along(lam, axis, g.ndim)
            shares = ((g * (1 - lam), left_runs), (g * lam, right_runs))
        for share, (sources, starts) in shares:
            out[where + (sources,)] += xp.add.reduceat(share, starts, axis=axis)
        return out

    def infer(self, g, *, axis, size, **p):
        return TensorSpec(g.shape[:axis] + (size,) + g.shape[axis + 1:], g.dtype)

    def vjp(self, ctx, gg):
        return apply(Resample, gg, **ctx.params)

    def jvp(self, ctx, dg):
        return apply(ResampleTranspose, dg, **ctx.params)


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

    kind = "linear" if linear else mode
    y = input
    for i, (s, o, scale) in enumerate(zip(input.shape[2:], out, scales, strict=True)):
        if o == s and mode == "nearest":
            continue  # the identity
        y = apply(Resample, y, axis=2 + i, size=s, out=o, scale=scale, mode=kind,
                  align_corners=bool(align_corners))
    return y


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None,
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """The deprecated name of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)
