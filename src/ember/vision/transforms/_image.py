"""What the image functions share: the image types, the interpolation modes, taking NumPy
arrays as tensors, checks, and the conversions between uint8 and float that torchvision's
tensor code makes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from functools import wraps
from typing import Any

import numpy as np

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, DTypeError
from ember.ops.select import zero_grad_from
from ember.tensor import Tensor

Image = Tensor | np.ndarray


class InterpolationMode(Enum):
    """Resampling kernels, as torchvision's enum. ``BOX``, ``HAMMING`` and ``LANCZOS`` are
    Pillow's, for PIL images only. Pillow's integer constants name the modes too, as
    torchvision takes them: ``InterpolationMode(2)`` is ``BILINEAR``."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"

    @classmethod
    def _missing_(cls, value: object) -> InterpolationMode | None:
        if isinstance(value, int) and not isinstance(value, bool) and value in _PIL_CONSTANTS:
            return cls(_PIL_CONSTANTS[value])
        return None


# Pillow's resampling constants (Image.Resampling) and the modes they name
_PIL_CONSTANTS = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box",
                  5: "hamming"}
PIL_RESAMPLING = {"nearest": 0, "nearest-exact": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3,
                  "box": 4, "hamming": 5}


def _tensor_op(fn: Callable) -> Callable:
    """Lets ``fn`` (written for ``(..., C, H, W)`` tensors) take ``(H, W[, C])`` arrays too."""

    @wraps(fn)
    def run(img: Image, *args: Any, **kwargs: Any) -> Image:
        if isinstance(img, Tensor):
            return fn(img, *args, **kwargs)
        if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
            raise TypeError(f"{fn.__name__}: img should be a tensor (..., C, H, W) or an "
                            f"(H, W[, C]) array, got {type(img).__name__}")
        chw = img[None] if img.ndim == 2 else img.transpose(2, 0, 1)
        out = fn(ember.from_numpy(np.ascontiguousarray(chw)), *args, **kwargs).numpy()
        if img.ndim == 2 and out.shape[0] == 1:  # (grayscale to 3 channels gives (H, W, 3))
            return out[0]
        return np.ascontiguousarray(out.transpose(1, 2, 0))

    return run


def _flat_as_one_channel(fn: Callable) -> Callable:
    """Lets ``fn`` take an ``(H, W)`` tensor as one channel, as torchvision's brightness,
    saturation, hue and gamma functions do; the result is ``(H, W)`` again."""

    @wraps(fn)
    def run(img: Image, *args: Any, **kwargs: Any) -> Image:
        if isinstance(img, Tensor) and img.ndim == 2:
            return fn(img.unsqueeze(0), *args, **kwargs).squeeze(0)
        return fn(img, *args, **kwargs)

    return run


def _images(x: Tensor) -> Tensor:
    """``x`` (``(..., C, H, W)``) as one ``(N, C, H, W)`` batch; an empty image keeps its
    sizes (``reshape(-1, ...)`` cannot tell N when an image has no pixels)."""
    return x.reshape(int(np.prod(x.shape[:-3])), *x.shape[-3:])


def _check_image(op: str, img: Tensor, channels: tuple[int, ...] = (),
                 any_int: bool = False) -> None:
    """Raises for what ``op`` cannot take: uint8 and float images; with ``any_int`` every
    integer dtype too (the resampling functions, resampled in float and rounded back as
    torchvision's tensor path does, so 16-bit and 32-bit PIL images, "I;16" and "I", take
    that way; the colour functions, whose range is ``[0, max]`` of the dtype)."""
    if img.ndim < 3:
        raise ArgumentError(f"{op}: expected an image (..., C, H, W), got shape {tuple(img.shape)}")
    if channels and img.shape[-3] not in channels:
        raise ArgumentError(f"{op}: expected {' or '.join(map(str, channels))} channels, got "
                            f"{img.shape[-3]} (shape {tuple(img.shape)})")
    if img.dtype is ember.uint8 or img.dtype.is_floating_point or \
            (any_int and img.dtype is not ember.bool):
        return
    kinds = "an integer or floating" if any_int else "a uint8 or floating"
    raise DTypeError(f"{op}: expected {kinds} image, got {img.dtype}")


def _bound(img: Tensor) -> float:
    """The full intensity: an integer dtype's maximum (255 for uint8), 1 for floats."""
    return 1.0 if img.dtype.is_floating_point else float(ember.iinfo(img.dtype).max)


def _to_float(img: Tensor) -> Tensor:
    """A float image to compute with: float32, or float64 for integers wider than float32
    holds exactly (32-bit "I" images)."""
    if img.dtype.is_floating_point:
        return img
    wide = img.dtype is not ember.bool and ember.iinfo(img.dtype).bits > 16
    return img.to(ember.float64 if wide else ember.float32)


def _back(img: Tensor, dtype: ember.DType, rounded: bool) -> Tensor:
    """A float result in the input's dtype; integers rounded (or truncated) and clamped to
    the dtype's range."""
    if dtype.is_floating_point:
        return img
    if rounded:
        img = img.round()
    info = ember.iinfo(dtype)
    return img.clamp(info.min, info.max).to(dtype)


def _unit(img: Tensor) -> Tensor:
    """Intensities in ``[0, 1]``: an integer image divided by its dtype's maximum (255 for
    uint8), a float one as it is."""
    return img if img.dtype.is_floating_point else _to_float(img) / _bound(img)


def _from_unit(img: Tensor, dtype: ember.DType) -> Tensor:
    """Back from ``[0, 1]`` as torchvision's ``convert_image_dtype``: integers scale by
    ``max + 1 - 1e-3`` and truncate, so that a value that went through :func:`_unit` comes
    back unchanged despite rounding (in float64 where the float dtype cannot hold that
    factor to the thousandth: uint16 and wider); bool's top is 1. Floats are cast."""
    if dtype.is_floating_point:
        return img.to(dtype)
    factor = (1 if dtype is ember.bool else ember.iinfo(dtype).max) + 1.0 - 1e-3
    if factor * ember.finfo(img.dtype).eps > 1e-3:
        img = img.to(ember.float64)
    return (img * factor).to(dtype)


def _grid_transform(img: Tensor, grid: Tensor, interpolation: Any,
                    fill: float | Sequence[float] | None, op: str) -> Tensor:
    """torchvision's grid transform: ``img`` (cast to the grid's dtype) sampled with
    ``grid_sample`` at ``grid`` (``(1, H_out, W_out, 2)``, normalized, ``align_corners=False``,
    zeros outside); with ``fill``, the pixels the image does not cover are blended towards it
    (bilinear) or replaced by it (nearest). Integer results are rounded back."""
    mode = InterpolationMode(interpolation).value
    if mode not in ("nearest", "bilinear"):
        raise ArgumentError(f"{op}: interpolation must be NEAREST or BILINEAR for a tensor image, "
                            f"got {mode}")
    h, w = img.shape[-2:]
    x = img.to(grid.dtype)
    c = x.shape[-3]
    flat = _images(x)
    out_h, out_w = grid.shape[1:3]
    if flat.numel() == 0 or out_h * out_w == 0:
        blank = img.new_zeros((*x.shape[:-2], out_h, out_w))  # (img's dtype and device)
        return zero_grad_from(img.sum(), blank)  # (in img's graph, as torchvision's v2)
    grid = grid.expand(flat.shape[0], out_h, out_w, 2)
    if fill is None:
        out = F.grid_sample(flat, grid, mode=mode, padding_mode="zeros", align_corners=False)
    else:
        fills = [float(fill)] if isinstance(fill, (int, float)) else [float(f) for f in fill]
        if len(fills) not in (1, c):
            raise ArgumentError(f"{op}: fill {fill} has {len(fills)} values but the image has {c} "
                                "channel(s); give one value, or one per channel")
        ones = ember.ones(flat.shape[0], 1, h, w, dtype=x.dtype)
        sampled = F.grid_sample(ember.cat((flat, ones), 1), grid, mode=mode,
                                padding_mode="zeros", align_corners=False)
        out, covered = sampled[:, :c], sampled[:, c:]
        back = ember.tensor(fills * (c // len(fills)), dtype=x.dtype).reshape(1, c, 1, 1)
        if mode == "nearest":
            out = ember.where(covered < 0.5, back.expand_as(out), out)
        else:
            out = out * covered + (1.0 - covered) * back
    out = out.reshape(*x.shape[:-2], out_h, out_w)
    return _back(out, img.dtype, rounded=True).to(img.dtype)
