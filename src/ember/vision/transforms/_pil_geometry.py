"""The geometric functions of PIL images by Pillow, as torchvision's PIL path computes them:
``resize`` by ``Image.resize`` (nearest at pixel centres, premultiplied alpha), ``rotate`` by
``Image.rotate``, ``affine`` and ``perspective`` by ``Image.transform`` with torchvision's
coefficients and its fill rules. 16-bit images ("I;16") stay on the tensor code, whose
rotation is right where Pillow's is not."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.errors import ArgumentError
from ember.vision.transforms._image import PIL_RESAMPLING, InterpolationMode

Fill = float | Sequence[float] | None


def by_pillow(img: Any) -> bool:
    """Whether the geometric functions hand ``img`` (a PIL image) to Pillow."""
    return img.mode != "I;16"


def _resample(op: str, interpolation: Any) -> int:
    mode = InterpolationMode(interpolation)
    if op != "resize" and mode.value not in ("nearest", "bilinear", "bicubic"):
        raise ArgumentError(f"{op}: interpolation {mode.name} is not supported for a PIL image; "
                            f"use NEAREST, BILINEAR or BICUBIC")
    return PIL_RESAMPLING[mode.value]


def fill_colour(op: str, fill: Fill, img: Any) -> Any:
    """torchvision's fill for Pillow: one value per band (a single one repeated), integers
    except for "F" images."""
    bands = len(img.getbands())
    fill = 0 if fill is None else fill
    if isinstance(fill, (int, float)) and bands > 1:
        fill = [fill] * bands
    if isinstance(fill, (list, tuple)):
        fill = list(fill) * bands if len(fill) == 1 else list(fill)
        if len(fill) != bands:
            raise ArgumentError(f"{op}: fill {fill} has {len(fill)} values but the image has "
                                f"{bands} band(s); give one value, or one per band")
        return tuple(fill) if img.mode == "F" else tuple(int(v) for v in fill)
    return fill if img.mode == "F" else int(fill)


def resize_pil(img: Any, size: tuple[int, int], interpolation: Any) -> Any:
    """``img`` resized to ``size = (height, width)`` by Pillow."""
    if (size[1], size[0]) == img.size:
        return img
    return img.resize((size[1], size[0]), _resample("resize", interpolation))


def rotate_pil(img: Any, angle: float, interpolation: Any, expand: bool,
               center: Sequence[float] | None, fill: Fill) -> Any:
    """``img`` rotated by ``angle`` degrees counter-clockwise by Pillow."""
    return img.rotate(angle, _resample("rotate", interpolation), expand,
                      None if center is None else tuple(center),
                      fillcolor=fill_colour("rotate", fill, img))


def transform_pil(op: str, img: Any, kind: str, coefficients: Sequence[float],
                  interpolation: Any, fill: Fill) -> Any:
    """``img`` warped by Pillow's ``AFFINE`` or ``PERSPECTIVE`` transform with
    ``coefficients`` (output position to input position, in pixels)."""
    from PIL import Image

    method = Image.Transform.AFFINE if kind == "affine" else Image.Transform.PERSPECTIVE
    return img.transform(img.size, method, [float(c) for c in coefficients],
                         _resample(op, interpolation), fillcolor=fill_colour(op, fill, img))
