"""Resizing: ``interpolate`` (modes nearest, nearest-exact, linear, bilinear, bicubic,
trilinear, area) and its deprecated names ``upsample``, ``upsample_bilinear`` and
``upsample_nearest``.

Every mode is separable, so each spatial axis is resampled in turn by one linear primitive
pair: ``resample`` (output position o reads a weighted sum of a few taps ``x[index_o]``: one
for the nearest modes, ``(1 - λ_o)·x[left_o] + λ_o·x[right_o]`` for linear ones, four
cubic-convolution taps for bicubic, with PyTorch's source coordinates computed in the input's
precision, float32 for float16/bfloat16 as PyTorch's opmath) and ``resample_transpose`` (its
adjoint). Each is the other's vjp, so every derivative order works. The adjoint is one numba
pass (:mod:`ember.ops.resample_numba`) where numba runs; its NumPy twin uses that each tap's
source indices grow with o and sums contiguous runs with one ``add.reduceat`` per tap instead
of a scatter-add. ``area`` is adaptive average pooling. uint8 images resized bilinear, bicubic
or lanczos go through ``resample_uint8``, PyTorch's fixed-point (PIL-style) arithmetic, width
first, so the bytes equal PyTorch's: one numba pass per axis where numba runs (int32 sums over
whole rows; the width pass on transposed rows), else array ops per tap.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.errors import ArgumentError, ShapeError, refuse_non_tensor
from ember.ops.adaptive_avg_pool import adaptive_avg_pool
from ember.ops.channels_last_view import channels_back, pixels_first
from ember.ops.convert import HALF, float32_under_autocast
from ember.ops.int_args import as_float, as_int
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.resample_numba")

# the interpolating modes: their number of spatial dims and their kernel along each
_INTERPOLATING = {"linear": (1, "linear"), "bilinear": (2, "linear"), "bicubic": (2, "cubic"),
                  "trilinear": (3, "linear"), "lanczos": (2, "lanczos_aa")}
# (Resample's modes for PyTorch's rounding of 1-D and 3-D inputs' source indices)
NEAREST_1D_3D = {"nearest": "nearest-1d-3d", "nearest-exact": "nearest-exact-1d-3d"}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area",
          "lanczos")
# antialiased (area-weighted) kernels, by mode: their support in input pixels at scale 1
_ANTIALIASED = {"bilinear": ("linear_aa", 2), "bicubic": ("cubic_aa", 4),
                "lanczos": ("lanczos_aa", 6)}


def _sizes(input: Tensor, size: Any, scale_factor: Any,
           recompute_scale_factor: bool | None) -> tuple[tuple[int, ...], tuple]:
    """Output sizes, and the scale factors the coordinate mapping uses (None: from sizes)."""
    nd = input.ndim - 2
    spatial = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate: give exactly one of size or scale_factor")
    if size is not None:
        if recompute_scale_factor:
            raise ArgumentError("interpolate: recompute_scale_factor is not meaningful with an "
                                "explicit size; give scale_factor instead")
        out = tuple(as_int(s, "interpolate", "size") for s in
                    (size if isinstance(size, (tuple, list)) else (size,) * nd))
        if len(out) != nd:
            raise ShapeError(f"interpolate: size {size!r} has {len(out)} entries but the input "
                             f"of shape {tuple(input.shape)} has {nd} spatial dimensions")
        return out, (None,) * nd
    scales = tuple(as_float(s, "interpolate", "scale_factor") for s in
                   (scale_factor if isinstance(scale_factor, (tuple, list)) else
                    (scale_factor,) * nd))
    if len(scales) != nd:
        raise ShapeError(f"interpolate: scale_factor {scale_factor!r} has {len(scales)} "
                         f"entries but the input has {nd} spatial dimensions")
    if not all(math.isfinite(f) for f in scales):
        raise ArgumentError(f"interpolate: scale_factor must be finite, got {scale_factor!r}. "
                            "Hint: give the output size instead")
    out = tuple(math.floor(s * f) for s, f in zip(spatial, scales, strict=True))
    return out, ((None,) * nd if recompute_scale_factor else scales)


def _ratio(np_type: Any, size: int, out: int, scale: float | None) -> Any:
    """PyTorch's source-per-destination ratio: ``1 / scale_factor`` if given, else in/out."""
    if scale is not None and scale > 0:
        return np_type(1.0 / scale)
    return np_type(size) / np_type(out)


def _nearest_index(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    """PyTorch's nearest (``floor(o·ratio)``) and 2-D nearest-exact (``floor((o + 0.5)·ratio)``)
    source index, in float32."""
    dst = np.arange(out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    src = np.floor(dst * _ratio(np.float32, size, out, scale)).astype(np.int64)
    return np.minimum(src, size - 1)


def _index_1d_3d(size: int, out: int, scale: float | None, exact: bool,
                 dtype: np.dtype) -> np.ndarray:
    """PyTorch's nearest(-exact) source index of a 1-D or 3-D input (its 2-D kernel takes
    :func:`_nearest_index`'s): ``ratio·o``, or for nearest-exact the pixel-centre coordinate
    ``ratio·(o + 0.5) - 0.5`` rounded once (a fused multiply-add) and clamped at 0 plus 0.5,
    in the input's precision (float32 for half types), then rounded to float32 and floored.
    Where the coordinate is an integer in exact arithmetic (2 -> 41: o = 20 reads 1) the
    2-D rounding can read the pixel before."""
    t = np.float64 if dtype == np.float64 else np.float32
    ratio = _ratio(t, size, out, scale)
    if exact:
        centre = np.arange(out, dtype=np.longdouble) + 0.5
        src = np.maximum((np.longdouble(ratio) * centre - 0.5).astype(t), 0) + t(0.5)
    else:
        src = np.arange(out, dtype=t) * ratio
    return np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), size - 1)


def resample_shortcuts(kind: str, nd: int, scale: float | None) -> tuple[bool, bool]:
    """PyTorch's exceptions to resampling an axis by its scale, for ``resample``'s ``kind``
    over ``nd`` spatial dims: whether an axis whose size the output keeps is copied (always
    for linear, 2-D nearest and antialiased modes, so 6 * 1.1 -> 6 copies; else only where
    the scale is 1 or none), and whether an axis the output doubles reads ``i // 2`` whatever
    the scale (2-D nearest: 2 * 2.4 -> 4). Eager and the dynamic ONNX export both follow it;
    each is False where no size can need it, so that the graph carries no dead branch:
    floor(s * f) = s (s >= 1) needs 1 <= f < 2, and = 2s needs 2 <= f < 3 (exactly, also
    for the float64 product: below 1 or 2 it rounds under s or 2s), and with the scale 2 or
    none the ratio s / 2s already reads i // 2.
    """
    nearest_2d = kind == "nearest" and nd == 2
    copies = scale in (None, 1) or (1 < scale < 2 and (
        nearest_2d or kind == "linear" or kind.endswith("_aa")))
    return copies, nearest_2d and scale is not None and 2 < scale < 3


def _source(size: int, out: int, scale: float | None, align_corners: bool,
            dtype: Any) -> np.ndarray:
    """PyTorch's source coordinate of each output position, in ``dtype``: corner pixels'
    centres on each other with ``align_corners``, else pixel centres (not clamped)."""
    t = dtype.type
    dst = np.arange(out, dtype=dtype)
    if align_corners:
        return dst * (t(size - 1) / t(out - 1) if out > 1 else t(0))
    return (dst + t(0.5)) * _ratio(t, size, out, scale) - t(0.5)


def _linear_taps(size: int, out: int, scale: float | None, align_corners: bool,
                 dtype: Any) -> tuple[tuple, tuple]:
    """Left and right source indices per output position, and their weights."""
    src = np.maximum(_source(size, out, scale, align_corners, dtype), dtype.type(0))
    left = src.astype(np.int64)
    right = np.minimum(left + 1, size - 1)
    lam = np.clip(src - left, 0, 1).astype(dtype)
    return (left, right), (1 - lam, lam)


def _cubic_taps(size: int, out: int, scale: float | None, align_corners: bool,
                dtype: Any) -> tuple[tuple, tuple]:
    """Four source indices per output position (clamped into range at the borders), and
    their weights: Keys' cubic convolution with PyTorch's A = -0.75."""
    t = dtype.type
    src = _source(size, out, scale, align_corners, dtype)
    start = np.minimum(np.floor(src), size - 1)
    lam = np.clip(src - start, 0, 1).astype(dtype)
    a = t(-0.75)

    def near(d: np.ndarray) -> np.ndarray:  # |d| ≤ 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    first = start.astype(np.int64) - 1
    indices = tuple(np.clip(first + k, 0, size - 1) for k in range(4))
    return indices, (far(lam + 1), near(lam), near(1 - lam), far(2 - lam))


def _aa_filter(kind: str, x: np.ndarray, a: float = -0.5) -> np.ndarray:
    """The antialiasing kernels: a triangle, Keys' cubic with A = -0.5 (as PIL; the uint8
    path's plain bicubic passes PyTorch's -0.75), Lanczos-3."""
    x = np.abs(x)
    if kind == "linear_aa":
        return np.maximum(0, 1 - x)
    if kind == "cubic_aa":
        return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                        np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0))
    return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0)


def _aa_taps(size: int, out: int, scale: float | None, align_corners: bool, dtype: Any,
             kind: str, width: int) -> tuple[tuple, tuple]:
    """PyTorch's antialiased taps (PIL's resampling): when shrinking, the kernel is stretched
    by the scale so that every input pixel counts; each output position reads the input
    pixels its kernel covers, with the weights normalized to sum to one."""
    t = dtype.type
    if align_corners:
        ratio = t(size - 1) / t(out - 1) if out > 1 else t(0)
    else:
        ratio = _ratio(t, size, out, scale)
    support = t(width / 2) * ratio if ratio >= 1 else t(width / 2)
    stretch = t(1) / ratio if ratio >= 1 else t(1)
    centre = ratio * (np.arange(out, dtype=dtype) + t(0.5))
    first = np.maximum(np.trunc(centre - support + t(0.5)), 0).astype(np.int64)
    last = np.minimum(np.trunc(centre + support + t(0.5)).astype(np.int64), size)
    taps = np.arange(max(int((last - first).max()), 1))
    w = _aa_filter(kind, (taps + first[:, None] - centre[:, None] + t(0.5)) * stretch)
    w = np.where(taps < (last - first)[:, None], w, 0).astype(dtype)
    total = w.sum(1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    index = np.minimum(first[:, None] + taps, size - 1)
    return tuple(index.T), tuple(w.T)


@lru_cache(maxsize=256)
def _plan(size: int, out: int, scale: float | None, mode: str, align_corners: bool,
          dtype: np.dtype) -> tuple:
    """Per tap: the source index of each output position and its weight (no weights for the
    nearest modes, which read one tap as is), and for the adjoint each tap's runs of equal
    indices (indices grow with the output position) as (index, start of the run)."""
    if mode == "linear":
        indices, weights = _linear_taps(size, out, scale, align_corners, dtype)
    elif mode == "cubic":
        indices, weights = _cubic_taps(size, out, scale, align_corners, dtype)
    elif mode.endswith("_aa"):
        width = next(w for kind, w in _ANTIALIASED.values() if kind == mode)
        indices, weights = _aa_taps(size, out, scale, align_corners, dtype, mode, width)
    elif mode in NEAREST_1D_3D.values():
        indices, weights = (_index_1d_3d(size, out, scale, mode == NEAREST_1D_3D["nearest-exact"],
                                         dtype),), None
    else:
        indices, weights = (_nearest_index(size, out, scale, mode == "nearest-exact"),), None
    runs = []
    for index in indices:
        starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        runs.append((index[starts], starts))
    return indices, weights, runs


@lru_cache(maxsize=256)
def _table(size: int, out: int, scale: float | None, mode: str, align_corners: bool,
           dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_plan`'s taps as two (taps, out) arrays, the indices and the weights (ones for
    the nearest modes), as numba's adjoint takes them."""
    indices, weights, _ = _plan(size, out, scale, mode, align_corners, dtype)
    table = np.ascontiguousarray(np.stack(indices), dtype=np.int64)
    if weights is None:
        return table, np.ones(table.shape, dtype)
    return table, np.ascontiguousarray(np.stack(weights), dtype=dtype)


def _transposed_in_numba(xp: Any, g: Any, axis: int, p: dict) -> Any:
    """``resample_transpose`` by numba's one-pass kernel, or None where it does not run
    (another backend or dtype, numba off)."""
    if xp is not np or g.dtype not in (np.float32, np.float64) or g.size == 0 or \
            not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)
    if kernels is None:
        return None
    index, weight = _table(p["size"], p["out"], p["scale"], p["mode"], p["align_corners"],
                           g.dtype)
    lead, inner = math.prod(g.shape[:axis]), math.prod(g.shape[axis + 1:])
    rows = np.ascontiguousarray(g).reshape(lead, g.shape[axis], inner)
    out = np.zeros((lead, p["size"], inner), g.dtype)
    least = -(-(1 << 17) // max(g.shape[axis] * inner, 1))  # (elements a core takes at least)
    parallel.over_rows(kernels.resample_transpose, (rows, out), least, index, weight)
    return out.reshape(g.shape[:axis] + (p["size"],) + g.shape[axis + 1:])


def _uint8_rows(x: np.ndarray, axis: int) -> tuple[np.ndarray, Callable]:
    """``x`` as a contiguous ``(lead, size, run)`` array with ``axis`` in the middle, and the
    function putting a result of that layout back. The positions after the axis make the
    run (the inner loop, SIMD over contiguous bytes); where they are few (the width pass: 1,
    or channels-last: C) the axis before joins them, so a pass gathers whole rows."""
    size, inner = x.shape[axis], math.prod(x.shape[axis + 1:])
    mid = x.shape[axis - 1] if inner < 16 and axis > 0 else 1
    lead = math.prod(x.shape[:axis]) // max(mid, 1)
    rows = x.reshape(lead, mid, size, inner).transpose(0, 2, 1, 3)

    def back(y: np.ndarray) -> np.ndarray:
        y = y.reshape(lead, y.shape[1], mid, inner).transpose(0, 2, 1, 3)
        return np.ascontiguousarray(y).reshape(x.shape[:axis] + (y.shape[2],) +
                                               x.shape[axis + 1:])

    return np.ascontiguousarray(rows).reshape(lead, size, mid * inner), back


def _uint8_taps(xp: Any, x: Any, axis: int, first: np.ndarray, weights: np.ndarray,
                precision: int) -> Any:
    """The uint8 resampling in array ops: per tap, the inputs gathered, widened to int32 and
    weighted, then summed, rounded, shifted and saturated."""
    wide = x.astype(np.int32)  # once, not per tap
    acc = None
    for t in range(weights.shape[1]):
        index = xp.asarray(np.minimum(first + t, x.shape[axis] - 1))
        tap = xp.take(wide, index, axis=axis)
        tap *= _along(xp.asarray(weights[:, t]), axis, x.ndim)
        acc = tap if acc is None else xp.add(acc, tap, out=acc)
    acc += 1 << (precision - 1)
    acc >>= precision
    return xp.clip(acc, 0, 255, out=acc).astype(np.uint8)


def _along(lam: Any, axis: int, ndim: int) -> Any:
    """A per-position weight vector shaped to broadcast along ``axis``."""
    return lam.reshape((-1,) + (1,) * (ndim - 1 - axis))


class _Resampling(Primitive):
    save_inputs = False

    def plan(self, xp: Any, p: dict, dtype: Any) -> tuple:
        """The taps' indices and weights (None for nearest modes) as backend arrays, and
        their runs."""
        indices, weights, runs = _plan(p["size"], p["out"], p["scale"], p["mode"],
                                       p["align_corners"], np.dtype(dtype))
        if weights is not None:
            weights = [xp.asarray(w) for w in weights]
        return [xp.asarray(i) for i in indices], weights, runs


@primitive
class Resample(_Resampling):
    """Resamples one axis of size ``size`` to ``out`` positions: each reads a weighted sum of
    one (nearest), two (linear) or four (cubic) source positions."""

    name = "resample"

    @in_float32
    def forward(self, xp, x, *, axis, **p):
        indices, weights, _ = self.plan(xp, p, x.dtype)
        if weights is None:
            return xp.take(x, indices[0], axis=axis)
        out = None
        for index, w in zip(indices, weights, strict=True):
            tap = xp.take(x, index, axis=axis) * _along(w, axis, x.ndim)
            out = tap if out is None else xp.add(out, tap, out=out)
        return out

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

    @in_float32
    def forward(self, xp, g, *, axis, **p):
        looped = _transposed_in_numba(xp, g, axis, p)
        if looped is not None:
            return looped
        _, weights, runs = self.plan(xp, p, g.dtype)
        shape = g.shape[:axis] + (p["size"],) + g.shape[axis + 1:]
        out = xp.zeros(shape, dtype=g.dtype)
        where = (slice(None),) * axis
        for k, (sources, starts) in enumerate(runs):
            share = g if weights is None else g * _along(weights[k], axis, g.ndim)
            out[where + (sources,)] += xp.add.reduceat(share, starts, axis=axis)
        return out

    def infer(self, g, *, axis, size, **p):
        return TensorSpec(g.shape[:axis] + (size,) + g.shape[axis + 1:], g.dtype)

    def vjp(self, ctx, gg):
        return apply(Resample, gg, **ctx.params)

    def jvp(self, ctx, dg):
        return apply(ResampleTranspose, dg, **ctx.params)


def _plain_float_taps(size: int, out: int, scale: float | None, kind: str,
                      align_corners: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """Taps without antialiasing in float64, as PyTorch's uint8 path computes them: the float
    path's source index and fraction (the index floored in float32), the kernel's weights of
    the taps outside the image added to the border tap; and the largest partial sum."""
    width = 2 if kind == "linear" else 4
    src = _source(size, out, scale, align_corners, np.dtype(np.float64))
    if width == 2 and not align_corners:
        src = np.maximum(src, 0.0)
    index = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), size - 1)
    lam = np.clip(src - index, 0.0, 1.0)
    half = width // 2
    low = index - half + 1
    first = np.maximum(low, 0)
    count = np.clip(np.minimum(index + half + 1, size) - first, 0, width)
    w = np.zeros((out, width))
    rows = np.arange(out)
    slot = np.zeros(out, np.int64)
    largest = 0.0
    for t in range(width):
        slot = np.where(low + t <= 0, 0, np.where(low + t >= size - 1, count - 1, slot))
        w[rows, slot] += _aa_filter(f"{kind}_aa", (t + 1 - half) - lam, a=-0.75)
        largest = max(largest, float(w[rows, slot].max()))
        slot = slot + 1
    return first, w, largest


@lru_cache(maxsize=256)
def _int16_plan(size: int, out: int, scale: float | None, kind: str, align_corners: bool,
                antialias: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """PyTorch's fixed-point taps for uint8 (PIL's resampling): per output position its first
    source index and integer weights (zero past its taps), and their precision in bits: the
    float64 weights scaled by the largest power of two that keeps the largest within int16,
    rounded half away from zero."""
    if antialias:
        width = next(w for aa, w in _ANTIALIASED.values() if aa == f"{kind}_aa")
        indices, weights = _aa_taps(size, out, scale, align_corners, np.dtype(np.float64),
                                    f"{kind}_aa", width)
        first, w = indices[0], np.stack(weights, 1)
        largest = float(w.max(initial=0.0))
    else:
        first, w, largest = _plain_float_taps(size, out, scale, kind, align_corners)
    precision = 0
    while precision < 22 and int(0.5 + largest * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = w * (1 << precision)
    weights = np.trunc(np.where(scaled < 0, scaled - 0.5, scaled + 0.5)).astype(np.int32)
    return np.ascontiguousarray(first, np.int64), weights, precision


@primitive
class ResampleUint8(Primitive):
    """Resamples one uint8 axis as PyTorch's CPU kernels do (PIL's fixed-point arithmetic):
    each output sums its taps' integer weights times the inputs, plus a half, shifted right
    by the weights' precision and saturated to 0..255."""

    name = "resample_uint8"
    differentiable = False

    def forward(self, xp, x, *, axis, size, out, scale, kind, align_corners, antialias):
        first, weights, precision = _int16_plan(size, out, scale, kind, align_corners,
                                                antialias)
        numba = xp is np and x.size > 0 and compiled.numba_enabled()
        kernels = compiled.load(_KERNELS) if numba else None
        if kernels is None:
            return _uint8_taps(xp, x, axis, first, weights, precision)
        rows, back = _uint8_rows(x, axis)
        y = np.empty((rows.shape[0], out, rows.shape[2]), np.uint8)
        least = -(-(1 << 21) // max(out * rows.shape[2] * weights.shape[1], 1))  # taps a core
        parallel.over_rows(kernels.resample_uint8, (rows, y), least, first, weights, precision)
        return back(y)

    def infer(self, x, *, axis, out, **p):
        return TensorSpec(x.shape[:axis] + (out,) + x.shape[axis + 1:], x.dtype)


def _resize_uint8(input: Tensor, out: tuple[int, ...], scales: tuple, kind: str,
                  align_corners: bool, antialias: bool) -> Tensor:
    """A uint8 image resized as PyTorch's: width, then height (each rounded), kept sizes skipped."""
    moved = pixels_first(input)  # (H and W are axes 1 and 2 then)
    y, shift = (input, 0) if moved is None else (moved, 1)
    for axis in (3, 2):
        size, o = input.shape[axis], out[axis - 2]
        if o != size:
            y = apply(ResampleUint8, y, axis=axis - shift, size=size, out=o,
                      scale=scales[axis - 2], kind=kind, align_corners=align_corners,
                      antialias=antialias)
    y = y.clone() if y is input or y is moved else y  # (none resized: a new tensor, as torch)
    return y if moved is None else channels_back(y)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resizes a (N, C, *spatial) input to ``size`` or by ``scale_factor``.

    Modes: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (3-D input), ``"bilinear"``
    and ``"bicubic"`` (4-D), ``"trilinear"`` (5-D), ``"area"``, ``"lanczos"`` (4-D, with
    ``antialias``). ``align_corners`` (interpolating modes only) maps the corner pixels'
    centres onto each other. Bicubic is PyTorch's cubic convolution (A = -0.75, edges
    repeated); like it, it may overshoot the input's range. ``antialias=True`` (bilinear,
    bicubic, lanczos) widens the kernel when shrinking so that every input pixel counts, as
    PIL and PyTorch do (``transforms.Resize``'s default). A uint8 input stays uint8: nearest
    modes copy, bilinear, bicubic and lanczos use PyTorch's integer weights and rounding
    (equal to its output byte for byte). Nearest modes pick PyTorch 2.13's pixels, but for 2-D
    outputs whose sizes sum past 128, where its forward changes index formula and its backward
    does not (Ember keeps the backward's); 1-D/3-D gradients are the forward's exact adjoint,
    where PyTorch's backward uses its 2-D indices (a few boundary positions differ).

    Example:
        >>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)[0, 0, 0]
        tensor([1.0000, 1.3333, 1.6667, 2.0000])
    """
    if not isinstance(input, Tensor):  # (a foreign array's shape would be judged first)
        refuse_non_tensor("interpolate", "input", input)
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported; expected one "
                                  f"of {', '.join(_MODES)}")
    if antialias and (mode not in _ANTIALIASED or input.ndim != 4):
        raise ArgumentError(f"interpolate: antialias=True needs mode bilinear, bicubic or lanczos "
                            f"and a 4-D input, got mode {mode!r} and shape {tuple(input.shape)}")
    if mode == "lanczos" and not antialias:
        raise ArgumentError("interpolate: mode 'lanczos' needs antialias=True")
    if mode == "lanczos" and align_corners:
        raise ArgumentError("interpolate: mode 'lanczos' does not support align_corners=True")
    if input.ndim < 3:
        raise ShapeError(f"interpolate: expected an (N, C, *spatial) input, got shape "
                         f"{tuple(input.shape)}")
    nd = input.ndim - 2
    interpolating = mode in _INTERPOLATING
    if interpolating and _INTERPOLATING[mode][0] != nd:
        raise ShapeError(f"interpolate: mode {mode!r} needs a {_INTERPOLATING[mode][0] + 2}-D "
                         f"input, got a {input.ndim}-D one of shape {tuple(input.shape)}")
    if align_corners is not None and not interpolating:
        raise ArgumentError("interpolate: align_corners can only be set with the interpolating "
                            "modes linear, bilinear, bicubic, trilinear and lanczos")
    out, scales = _sizes(input, size, scale_factor, recompute_scale_factor)
    if mode == "area" and min(out) == 0 and min(input.shape[2:]) > 0:
        return _area(nd, input, out)  # empty, as PyTorch's
    if min(out + tuple(input.shape[2:])) <= 0:
        raise ShapeError(f"interpolate: input sizes {tuple(input.shape[2:])} and output sizes "
                         f"{out} should be greater than 0 (input shape {tuple(input.shape)})")
    if mode == "area":
        return _area(nd, input, out)
    if interpolating and not input.dtype.is_floating_point:
        if input.dtype.name == "uint8" and mode in _ANTIALIASED:
            return _resize_uint8(input, out, scales, _INTERPOLATING[mode][1].removesuffix("_aa"),
                                 bool(align_corners), antialias)
        raise TypeError(f"interpolate: mode {mode!r} needs a floating input (or uint8 for "
                        f"bilinear, bicubic and lanczos), got {input.dtype.name}")

    kind = _ANTIALIASED[mode][0] if antialias else \
        _INTERPOLATING[mode][1] if interpolating else \
        NEAREST_1D_3D.get(mode, mode) if nd != 2 else mode
    moved = pixels_first(input, (4, 5))  # (spatial axes from 1 then, and the result channels-last)
    y, first = (input, 2) if moved is None else (moved, 1)
    rounded = y.dtype if interpolating and nd > 1 and y.dtype in HALF else None
    y = y if rounded is None else y.float()  # (half: all axes in float32, one rounding: torch's)
    for i, (s, o, scale) in enumerate(zip(input.shape[2:], out, scales, strict=True)):
        copies, halves = resample_shortcuts(kind, nd, scale)
        if o == s and copies:
            continue
        if o == 2 * s and halves:
            scale = None  # (ratio s / o: i // 2)
        y = apply(Resample, y, axis=first + i, size=s, out=o, scale=scale, mode=kind,
                  align_corners=bool(align_corners))
    y = y.clone() if y is input or y is moved else y  # (none resized: a new tensor, as torch)
    return (y if moved is None else channels_back(y)).to(rounded or y.dtype)


def _area(nd: int, input: Tensor, out: tuple[int, ...]) -> Tensor:
    """``mode="area"``: the adaptive average pool to ``out``; of a 5-D input in float32
    under autocast, as PyTorch's (its adaptive_avg_pool3d is on the CPU float32 list)."""
    pool = _area_float32 if nd == 3 else adaptive_avg_pool
    return pool("interpolate", nd, input, out)


_area_float32 = float32_under_autocast(adaptive_avg_pool)


def _deprecated(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=3)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None,
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """The deprecated name of :func:`interpolate` (it warns, as PyTorch's does).

    Example:
        >>> F.upsample(ember.ones(1, 1, 2), scale_factor=2).shape
        ember.Size([1, 1, 4])
    """
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode="bilinear",
    align_corners=True)`` of a (N, C, H, W) input (it warns, as PyTorch's does).

    Example:
        >>> F.upsample_bilinear(ember.tensor([[[[0.0, 3.0]]]]), size=(1, 4))
        tensor([[[[0., 1., 2., 3.]]]])
    """
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode="nearest")`` (it warns, as
    PyTorch's does).

    Example:
        >>> F.upsample_nearest(ember.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")
