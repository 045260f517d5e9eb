"""Warps by a sampling grid: ``perspective`` (four corners moved) and ``elastic_transform``
(a per-pixel displacement field), computed as torchvision's tensor code computes them
(``grid_sample`` at pixel centres, zeros outside, then ``fill``); re-exported by
:mod:`ember.vision.transforms.functional`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms._image import (
    InterpolationMode,
    _check_image,
    _grid_transform,
    _tensor_op,
    _to_float,
)

__all__ = ["elastic_transform", "perspective"]

Points = Sequence[Sequence[float]]


def _perspective_coeffs(startpoints: Points, endpoints: Points) -> list[float]:
    """torchvision's eight coefficients ``(a, b, c, d, e, f, g, h)`` of the map from an output
    position ``(x, y)`` to its source ``((a x + b y + c) / (g x + h y + 1), (d x + e y + f) /
    (g x + h y + 1))`` that takes each end point to its start point: a least-squares solve in
    float64, rounded to float32 as torchvision rounds it."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ArgumentError(f"perspective: please provide exactly four corners, got "
                            f"{len(startpoints)} startpoints and {len(endpoints)} endpoints.")
    rows, rhs = [], []
    for (ex, ey), (sx, sy) in zip(endpoints, startpoints, strict=True):
        rows.append([ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey])
        rows.append([0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey])
        rhs += [sx, sy]
    solution = np.linalg.lstsq(np.array(rows, np.float64), np.array(rhs, np.float64),
                               rcond=None)[0]
    return solution.astype(np.float32).tolist()


def _perspective_grid(coeffs: Sequence[float], w: int, h: int, dtype: ember.DType) -> Tensor:
    """The normalized sampling grid ``(1, h, w, 2)`` of the pixel centres' sources, computed
    in ``dtype`` in torchvision's order (so that nearest sampling breaks ties alike)."""
    t = dtype.np.type
    a, b, c, d, e, f, g, k = (t(v) for v in coeffs)
    xs, ys = np.meshgrid(np.arange(w, dtype=dtype.np) + t(0.5),
                         np.arange(h, dtype=dtype.np) + t(0.5))
    half_w, half_h = t(0.5 * w), t(0.5 * h)
    den = g * xs + k * ys + t(1)
    src_x = (a / half_w * xs + b / half_w * ys + c / half_w) / den
    src_y = (d / half_h * xs + e / half_h * ys + f / half_h) / den
    return ember.from_numpy(np.stack([src_x, src_y], -1)[None] - t(1))


@_tensor_op
def perspective(img: Tensor, startpoints: Points, endpoints: Points,
                interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                fill: float | Sequence[float] | None = None) -> Tensor:
    """The perspective warp that moves the corners ``startpoints`` (top-left, top-right,
    bottom-right, bottom-left, as ``[x, y]``) to ``endpoints``; uncovered pixels are 0, or
    ``fill`` (one value, or one per channel). Bilinear or nearest.

    Example:
        >>> corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
        >>> x = ember.arange(16.0).reshape(1, 4, 4)
        >>> bool((perspective(x, corners, corners) == x).all())
        True
    """
    _check_image("perspective", img, any_int=True)
    coeffs = _perspective_coeffs(startpoints, endpoints)
    h, w = img.shape[-2:]
    grid = _perspective_grid(coeffs, w, h, _to_float(img).dtype)
    return _grid_transform(img, grid, interpolation, fill, "perspective")


@_tensor_op
def elastic_transform(img: Tensor, displacement: Tensor,
                      interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                      fill: float | Sequence[float] | None = None) -> Tensor:
    """Moves each pixel's sampling position by ``displacement`` (``(1, H, W, 2)``, x then y, in
    grid units: 2 spans the image), as torchvision's ``elastic_transform``. Differentiable in
    the image and in the displacement.

    Example:
        >>> x = ember.arange(6.0).reshape(1, 2, 3)
        >>> elastic_transform(x, ember.zeros(1, 2, 3, 2)).tolist()
        [[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]]
    """
    if not isinstance(displacement, Tensor):
        raise TypeError(f"elastic_transform: displacement should be a tensor, got "
                        f"{type(displacement).__name__}")
    _check_image("elastic_transform", img, any_int=True)
    h, w = img.shape[-2:]
    if tuple(displacement.shape) != (1, h, w, 2):
        raise ArgumentError(f"elastic_transform: displacement shape should be {(1, h, w, 2)} for "
                            f"an image of shape {tuple(img.shape)}, got "
                            f"{tuple(displacement.shape)}")
    if h * w == 0:
        return img.clone()
    ys, xs = (ember.linspace((1 - s) / s, (s - 1) / s, s) for s in (h, w))
    identity = ember.stack((xs.expand(h, w), ys[:, None].expand(h, w)), -1)[None]
    return _grid_transform(img, identity + displacement, interpolation, fill,
                           "elastic_transform")
