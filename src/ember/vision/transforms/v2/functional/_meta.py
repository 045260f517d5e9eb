"""Sizes of inputs, and the box format conversion and clamping, as ``v2.functional``
functions."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision import tv_tensors
from ember.vision.ops import box_convert, clip_boxes_to_image
from ember.vision.transforms.v2.functional._rotated_clamp import clamp_rotated_corners
from ember.vision.transforms.v2.functional._type_conversion import to_pure_tensor
from ember.vision.transforms.v2.functional._utils import (
    _dispatch,
    _register_kernel_internal,
    is_pure_tensor,
)
from ember.vision.tv_tensors import (
    BoundingBoxes,
    BoundingBoxFormat,
    Image,
    Mask,
    Video,
    is_rotated_bounding_format,
)
from ember.vision.tv_tensors._bounding_boxes import _format, check_clamping_mode

__all__ = ["clamp_bounding_boxes", "convert_bounding_box_format", "get_dimensions",
           "sanitize_bounding_boxes",
           "get_num_channels", "get_size"]


def get_dimensions(inpt: Tensor) -> list[int]:
    """``[channels, height, width]`` of an image or video.

    Example:
        >>> get_dimensions(ember.zeros(3, 4, 5))
        [3, 4, 5]
    """
    return _dispatch(get_dimensions, inpt)


def get_num_channels(inpt: Tensor) -> int:
    """The number of channels of an image or video.

    Example:
        >>> get_num_channels(ember.zeros(3, 4, 5))
        3
    """
    return _dispatch(get_num_channels, inpt)


def get_size(inpt: Tensor) -> list[int]:
    """``[height, width]`` of an image, video or mask, or the canvas of boxes.

    Example:
        >>> get_size(tv_tensors.BoundingBoxes([0, 0, 1, 1], format="XYXY", canvas_size=(6, 7)))
        [6, 7]
    """
    return _dispatch(get_size, inpt)


@_register_kernel_internal(get_dimensions, Tensor, Image, Video, tv_tensor_wrapper=False)
def _dimensions_image(image: Tensor) -> list[int]:
    if image.ndim < 2:
        raise TypeError(f"get_dimensions: expected an image (..., C, H, W), got shape "
                        f"{tuple(image.shape)}")
    return [1 if image.ndim == 2 else image.shape[-3], *image.shape[-2:]]


@_register_kernel_internal(get_num_channels, Tensor, Image, Video, tv_tensor_wrapper=False)
def _channels_image(image: Tensor) -> int:
    return _dimensions_image(image)[0]


@_register_kernel_internal(get_size, Tensor, Image, Video, Mask, tv_tensor_wrapper=False)
def _size_image(image: Tensor) -> list[int]:
    return _dimensions_image(image)[1:]


@_register_kernel_internal(get_dimensions, np.ndarray, tv_tensor_wrapper=False)
def _dimensions_array(image: np.ndarray) -> list[int]:
    return [image.shape[2] if image.ndim == 3 else 1, *image.shape[:2]]


@_register_kernel_internal(get_num_channels, np.ndarray, tv_tensor_wrapper=False)
def _channels_array(image: np.ndarray) -> int:
    return _dimensions_array(image)[0]


@_register_kernel_internal(get_size, np.ndarray, tv_tensor_wrapper=False)
def _size_array(image: np.ndarray) -> list[int]:
    return _dimensions_array(image)[1:]


@_register_kernel_internal(get_size, BoundingBoxes, tv_tensor_wrapper=False)
def _size_boxes(boxes: BoundingBoxes) -> list[int]:
    return list(boxes.canvas_size)


def _to_xyxy(boxes: Tensor, fmt: BoundingBoxFormat) -> Tensor:
    """Boxes as floating XYXY corners (a plain tensor)."""
    if not boxes.is_floating_point():
        boxes = boxes.to(ember.get_default_dtype())
    return box_convert(boxes, fmt.value.lower(), "xyxy")


def _from_xyxy(xyxy: Tensor, fmt: BoundingBoxFormat, dtype: ember.DType) -> Tensor:
    out = box_convert(xyxy, "xyxy", fmt.value.lower())
    return out if dtype.is_floating_point else out.to(dtype)  # truncated, as torchvision


def _convert_integer(boxes: Tensor, old: BoundingBoxFormat, new: BoundingBoxFormat) -> Tensor:
    """Integer boxes converted as torchvision 0.28 does: from centres through float32 and
    truncated, ``x1 = trunc(cx - w / 2)``, ``x2 = trunc(cx - w / 2 + w)`` (``w = x2 - x1``);
    to centres in integers, ``cx = floor(x1 + w / 2)``."""
    low, size = boxes[..., :2], boxes[..., 2:]
    if old is BoundingBoxFormat.CXCYWH:
        start = low.float() - size.float() / 2
        low = start.to(boxes.dtype)
        size = (start + size.float()).to(boxes.dtype) - low
    elif old is BoundingBoxFormat.XYXY:
        size = size - low
    if new is BoundingBoxFormat.CXCYWH:
        low = (low * 2 + size).div(2, rounding_mode="floor")
    elif new is BoundingBoxFormat.XYXY:
        size = low + size
    return ember.cat((low, size), dim=-1)


def _boxes_args(op: str, inpt: Tensor, given: dict[str, Any]) -> dict[str, Any]:
    """The metadata a box function reads: from a ``BoundingBoxes`` (then not to be given
    again), or as given for a pure tensor (then required)."""
    if isinstance(inpt, BoundingBoxes):
        passed = [k for k, v in given.items() if v is not None]
        if passed:
            raise ArgumentError(f"{op}: for BoundingBoxes inputs, {passed} must not be passed; "
                                "they come from the boxes")
        return {k: getattr(inpt, k) for k in given}
    if not is_pure_tensor(inpt):
        raise TypeError(f"{op}: expected BoundingBoxes or a pure tensor, got "
                        f"{type(inpt).__name__}")
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise ArgumentError(f"{op}: for pure tensor inputs, {missing} must be passed")
    return given


def _convert(boxes: Tensor, old: BoundingBoxFormat, new: BoundingBoxFormat) -> Tensor:
    """Plain boxes from format ``old`` to ``new`` (a copy)."""
    if old == new:
        return boxes.clone()
    if is_rotated_bounding_format(old) != is_rotated_bounding_format(new):
        raise ArgumentError(f"convert_bounding_box_format: cannot convert between rotated and "
                            f"axis-aligned boxes ({old.name} to {new.name}), as in torchvision")
    if is_rotated_bounding_format(old):
        if not boxes.is_floating_point():
            raise ArgumentError(f"convert_bounding_box_format: rotated boxes should be floating "
                                f"point, got {boxes.dtype}")
        return box_convert(boxes, old.value.lower(), new.value.lower())
    if boxes.is_floating_point():
        return _from_xyxy(_to_xyxy(boxes, old), new, boxes.dtype)
    return _convert_integer(boxes, old, new)


def convert_bounding_box_format(inpt: Tensor, old_format: BoundingBoxFormat | str | None = None,
                                new_format: BoundingBoxFormat | str | None = None,
                                inplace: bool = False) -> Tensor:
    """Boxes in ``new_format``; ``old_format`` is given for a pure tensor only. Rotated
    formats convert among themselves (not to the axis-aligned ones, as in torchvision).

    Example:
        >>> b = tv_tensors.BoundingBoxes([1, 1, 2, 4], format="CXCYWH", canvas_size=(8, 8),
        ...                              dtype=ember.float32)
        >>> convert_bounding_box_format(b, new_format="XYXY").tolist()
        [[0.0, -1.0, 2.0, 3.0]]
        >>> r = tv_tensors.BoundingBoxes([4, 4, 2, 2, 90], format="CXCYWHR", canvas_size=(8, 8),
        ...                              dtype=ember.float64)
        >>> convert_bounding_box_format(r, new_format="XYXYXYXY").round().tolist()
        [[3.0, 5.0, 3.0, 3.0, 5.0, 3.0, 5.0, 5.0]]
    """
    if new_format is None:
        raise TypeError("convert_bounding_box_format: missing the new_format argument")
    old = _format(_boxes_args("convert_bounding_box_format", inpt,
                              {"format": old_format})["format"])
    new = _format(new_format)
    out = _convert(to_pure_tensor(inpt), old, new)
    if inplace and out.shape == inpt.shape:
        inpt.copy_(out)
        out = to_pure_tensor(inpt)
    if isinstance(inpt, BoundingBoxes):
        return tv_tensors.wrap(out, like=inpt, format=new)
    return out


def _clamp(boxes: Tensor, fmt: BoundingBoxFormat, canvas_size: tuple[int, int],
           clamping_mode: str | None = "soft") -> Tensor:
    """Plain boxes clamped to the canvas: axis-aligned ones with every corner moved inside
    (``"soft"`` and ``"hard"`` alike), rotated ones as :mod:`._rotated_clamp`; a copy,
    unclamped, for mode None."""
    if clamping_mode is None or boxes.numel() == 0:
        return boxes.clone()
    if not is_rotated_bounding_format(fmt):
        xyxy = clip_boxes_to_image(_to_xyxy(boxes.reshape(-1, 4), fmt), canvas_size)
        return _from_xyxy(xyxy, fmt, boxes.dtype).reshape(boxes.shape)
    corners = _convert(boxes, fmt, BoundingBoxFormat.XYXYXYXY).reshape(-1, 8)
    clamped = clamp_rotated_corners(corners, canvas_size, clamping_mode)
    return _convert(clamped, BoundingBoxFormat.XYXYXYXY, fmt).reshape(boxes.shape)


def clamp_bounding_boxes(inpt: Tensor, format: BoundingBoxFormat | str | None = None,
                         canvas_size: tuple[int, int] | None = None,
                         clamping_mode: str | None = "auto") -> Tensor:
    """Boxes clamped to the canvas: ``"soft"``, ``"hard"`` (see
    :class:`~ember.vision.tv_tensors.BoundingBoxes`), ``None`` (a copy), or ``"auto"``, the
    boxes' own mode. ``format``, ``canvas_size`` and a mode other than ``"auto"`` are given
    for a pure tensor (all three required, as in torchvision), not for ``BoundingBoxes``.

    Example:
        >>> b = tv_tensors.BoundingBoxes([-2, 1, 9, 3], format="XYXY", canvas_size=(4, 6))
        >>> clamp_bounding_boxes(b).tolist()
        [[0, 1, 6, 3]]
        >>> clamp_bounding_boxes(ember.tensor([[-2, 1, 9, 3]]), format="XYXY",
        ...                      canvas_size=(4, 6), clamping_mode=None).tolist()
        [[-2, 1, 9, 3]]
    """
    check_clamping_mode("clamp_bounding_boxes", clamping_mode, ("soft", "hard", "auto", None))
    args = _boxes_args("clamp_bounding_boxes", inpt,
                       {"format": format, "canvas_size": canvas_size})
    if isinstance(inpt, BoundingBoxes):
        clamping_mode = inpt.clamping_mode if clamping_mode == "auto" else clamping_mode
    elif clamping_mode == "auto":
        raise ArgumentError("clamp_bounding_boxes: for pure tensor inputs, clamping_mode must be "
                            "passed ('soft', 'hard' or None)")
    out = _clamp(to_pure_tensor(inpt), _format(args["format"]), tuple(args["canvas_size"]),
                 clamping_mode)
    return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, BoundingBoxes) else out


def sanitize_bounding_boxes(bounding_boxes: Tensor,
                            format: BoundingBoxFormat | str | None = None,
                            canvas_size: tuple[int, int] | None = None, min_size: float = 1.0,
                            min_area: float = 1.0) -> tuple[Tensor, Tensor]:
    """``(kept, valid)``: the boxes at least ``min_size`` on each side and ``min_area`` in
    area that lie within the canvas, and the boolean mask that selects them (to subset labels
    or masks with), as torchvision's. ``format`` and ``canvas_size`` are given for a pure
    tensor only.

    Example:
        >>> b = tv_tensors.BoundingBoxes([[0, 0, 4, 4], [1, 1, 1, 3]], format="XYXY",
        ...                              canvas_size=(8, 8))
        >>> kept, valid = sanitize_bounding_boxes(b)
        >>> kept.tolist(), valid.tolist()
        ([[0, 0, 4, 4]], [True, False])
    """
    args = _boxes_args("sanitize_bounding_boxes", bounding_boxes,
                       {"format": format, "canvas_size": canvas_size})
    plain = to_pure_tensor(bounding_boxes)
    widths, heights, corners = _sides_and_corners(plain, _format(args["format"]))
    height, width = args["canvas_size"]
    valid = ((widths >= min_size) & (heights >= min_size) & (widths * heights >= min_area)
             & (corners >= 0).all(dim=-1) & (corners[:, 0::2] <= width).all(dim=-1)
             & (corners[:, 1::2] <= height).all(dim=-1))
    kept = plain[valid]
    if isinstance(bounding_boxes, BoundingBoxes):
        kept = tv_tensors.wrap(kept, like=bounding_boxes)
    return kept, valid


def _sides_and_corners(boxes: Tensor, fmt: BoundingBoxFormat) -> tuple[Tensor, Tensor, Tensor]:
    """Each box's width and height, and its corners (``XYXY``, or ``XYXYXYXY`` if rotated).
    A rotated box's height is the length of its side from corner 2 to corner 3 (torchvision
    0.29 mixes the coordinates of two sides there, see docs/vision.md)."""
    if not is_rotated_bounding_format(fmt):
        xyxy = _to_xyxy(boxes, fmt)
        return xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1], xyxy
    corners = _convert(boxes, fmt, BoundingBoxFormat.XYXYXYXY)
    x, y = corners[:, 0::2], corners[:, 1::2]
    side_x, side_y = x[:, 1:3] - x[:, 0:2], y[:, 1:3] - y[:, 0:2]
    lengths = (side_x ** 2 + side_y ** 2).sqrt()
    return lengths[:, 0], lengths[:, 1], corners
