"""Conversions between torchvision's rotated box formats: ``"xywhr"`` (top-left corner, size,
angle), ``"cxcywhr"`` (centre, size, angle) and ``"xyxyxyxy"`` (the four corners, clockwise
from the top left). Angles are degrees counter-clockwise about the centre; integer boxes are
computed in float and rounded back, as in torchvision."""

from __future__ import annotations

import math

import ember
from ember.tensor import Tensor

ROTATED_FORMATS = ("xywhr", "cxcywhr", "xyxyxyxy")


def _radians(r: Tensor) -> tuple[Tensor, Tensor]:
    angle = r * math.pi / 180.0
    return ember.cos(angle), ember.sin(angle)


def _cxcywhr_to_xywhr(boxes: Tensor) -> Tensor:
    cx, cy, w, h, r = boxes.unbind(-1)
    cos, sin = _radians(r)
    return ember.stack((cx - w / 2 * cos - h / 2 * sin, cy - h / 2 * cos + w / 2 * sin,
                        w, h, r), dim=-1)


def _xywhr_to_cxcywhr(boxes: Tensor) -> Tensor:
    x1, y1, w, h, r = boxes.unbind(-1)
    cos, sin = _radians(r)
    return ember.stack((x1 + w / 2 * cos + h / 2 * sin, y1 - w / 2 * sin + h / 2 * cos,
                        w, h, r), dim=-1)


def _xywhr_to_xyxyxyxy(boxes: Tensor) -> Tensor:
    x1, y1, w, h, r = boxes.unbind(-1)
    cos, sin = _radians(r)
    x2, y2 = x1 + w * cos, y1 - w * sin
    return ember.stack((x1, y1, x2, y2, x2 + h * sin, y2 + h * cos, x1 + h * sin, y1 + h * cos),
                       dim=-1)


def _xyxyxyxy_to_xywhr(boxes: Tensor) -> Tensor:
    x1, y1, x2, y2, x3, y3, _, _ = boxes.unbind(-1)
    r = ember.atan2(y1 - y2, x2 - x1) * 180 / math.pi
    w = ((x2 - x1) ** 2 + (y1 - y2) ** 2).sqrt()
    h = ((x3 - x2) ** 2 + (y3 - y2) ** 2).sqrt()
    return ember.stack((x1, y1, w, h, r), dim=-1)


_STEPS = {("cxcywhr", "xywhr"): [_cxcywhr_to_xywhr], ("xywhr", "cxcywhr"): [_xywhr_to_cxcywhr],
          ("xywhr", "xyxyxyxy"): [_xywhr_to_xyxyxyxy], ("xyxyxyxy", "xywhr"): [_xyxyxyxy_to_xywhr],
          ("cxcywhr", "xyxyxyxy"): [_cxcywhr_to_xywhr, _xywhr_to_xyxyxyxy],
          ("xyxyxyxy", "cxcywhr"): [_xyxyxyxy_to_xywhr, _xywhr_to_cxcywhr]}


def convert_rotated(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """``boxes`` from one rotated format to another (both in :data:`ROTATED_FORMATS`)."""
    for step in _STEPS[(in_fmt, out_fmt)]:
        out = step(boxes if boxes.dtype.is_floating_point else boxes.float())
        # torchvision computes integer boxes in float32 and rounds them back after each step
        boxes = out if boxes.dtype.is_floating_point else out.round().to(boxes.dtype)
    return boxes
