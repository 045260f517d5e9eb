"""Geometry of rotated boxes (formats ``XYWHR``, ``CXCYWHR``, ``XYXYXYXY``), as torchvision's
(0.23+): flips mirror a box and its angle; the other warps map its four corners and make the
mapped parallelogram a rectangle again (torchvision's construction)."""

from __future__ import annotations

import math

import ember
from ember.tensor import Tensor
from ember.vision.tv_tensors import BoundingBoxFormat

__all__ = ["flip_rotated", "rectangle_from_parallelogram", "shift_rotated"]

_XYXYXYXY = BoundingBoxFormat.XYXYXYXY


def rectangle_from_parallelogram(corners: Tensor) -> Tensor:
    """``(..., 8)`` parallelogram corners made a rectangle that keeps the centre and the
    corners 1 and 3 (torchvision's ``_parallelogram_to_bounding_boxes``): a rectangle stays
    itself.

    Example:
        >>> rectangle_from_parallelogram(ember.tensor([0.0, 0.0, 4.0, 0.0, 5.0, 2.0, 1.0, 2.0]))
        tensor([0., 0., 5., 0., 5., 2., 0., 2.])
    """
    if corners.dtype not in (ember.float32, ember.float64):
        return rectangle_from_parallelogram(corners.to(ember.float32)).to(corners.dtype)
    x1, y1, x2, y2, x3, y3, x4, y4 = corners.unbind(-1)
    cx, cy = (x1 + x3) / 2, (y1 + y3) / 2
    side1 = ((x2 - x1) ** 2 + (y2 - y1) ** 2).sqrt()
    side2 = ((x4 - x1) ** 2 + (y4 - y1) ** 2).sqrt()
    r12 = ember.atan2(y1 - y2, x2 - x1)
    r14 = ember.atan2(y1 - y4, x4 - x1)
    between = r12 - r14
    sign = ember.where(between > math.pi / 2, -1.0, 1.0).to(corners.dtype)
    cos, sin = between.cos(), between.sin()
    w = ember.where(side1 < side2, side1 * sin, side1 + side2 * cos * sign)
    h = ember.where(side1 > side2, side2 * sin, side2 + side1 * cos * sign)
    angle = ember.where(side2 > side1, r14 + math.pi / 2, r12)
    cos, sin = angle.cos(), angle.sin()
    dx_w, dy_w, dx_h, dy_h = w / 2 * cos, w / 2 * sin, h / 2 * sin, h / 2 * cos
    return ember.stack((cx - dx_w - dx_h, cy - dy_h + dy_w, cx + dx_w - dx_h, cy - dy_h - dy_w,
                        cx + dx_w + dx_h, cy + dy_h - dy_w, cx - dx_w + dx_h, cy + dy_h + dy_w),
                       dim=-1)


def flip_rotated(boxes: Tensor, fmt: BoundingBoxFormat, extent: int, horizontal: bool) -> Tensor:
    """Rotated ``(..., K)`` boxes mirrored on a canvas ``extent`` wide (``horizontal``) or high:
    the corners are mirrored and renumbered (``XYXYXYXY``), or the anchor moved and the angle
    mirrored (``-r`` left-right, ``180 - r`` top-bottom)."""
    shape, boxes = boxes.shape, boxes.reshape(-1, boxes.shape[-1])
    axis = 0 if horizontal else 1
    out = boxes.clone()
    if fmt is _XYXYXYXY:
        out[:, axis::2] = extent - boxes[:, axis::2]
        return out[:, [2, 3, 0, 1, 6, 7, 4, 5]].reshape(shape)
    r = boxes[:, 4]
    if fmt is BoundingBoxFormat.XYWHR:  # the anchor becomes the mirrored top-right corner
        radians = r * math.pi / 180
        out[:, 0] = boxes[:, 0] + boxes[:, 2] * radians.cos()
        out[:, 1] = boxes[:, 1] - boxes[:, 2] * radians.sin()
    out[:, axis] = extent - out[:, axis]
    out[:, 4] = -r if horizontal else 180 - r
    return out.reshape(shape)


def shift_rotated(boxes: Tensor, fmt: BoundingBoxFormat, dx: float, dy: float) -> Tensor:
    """Rotated boxes moved by ``(dx, dy)`` (every corner, or the anchor)."""
    offset = [dx, dy] * 4 if fmt is _XYXYXYXY else [dx, dy, 0, 0, 0]
    return boxes + ember.tensor(offset, dtype=boxes.dtype)
