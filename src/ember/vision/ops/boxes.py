"""Box geometry under torchvision's names: areas, overlaps (IoU and its generalized, distance
and complete variants), format conversion, clipping and filtering.

Boxes are ``(N, 4)`` tensors of ``(x1, y1, x2, y2)`` corners with ``0 <= x1 < x2`` and
``0 <= y1 < y2`` unless said otherwise. Every function is made of Ember ops, so gradients flow
through the overlaps (what the IoU losses train with).
"""

from __future__ import annotations

import math

import ember
from ember.errors import ArgumentError, ShapeError
from ember.ops.forwarding import check_tensors
from ember.tensor import Tensor
from ember.vision.ops._rotated_boxes import ROTATED_FORMATS, convert_rotated

__all__ = ["box_area", "box_convert", "box_iou", "clip_boxes_to_image", "complete_box_iou",
           "distance_box_iou", "generalized_box_iou", "masks_to_boxes", "remove_small_boxes"]

_FORMATS = ("xyxy", "xywh", "cxcywh")


def _check(op: str, boxes: Tensor, name: str = "boxes") -> None:
    check_tensors(op, **{name: boxes})
    if boxes.ndim < 1 or boxes.shape[-1] != 4:
        raise ShapeError(f"{op}: {name} must have shape (..., 4), got {tuple(boxes.shape)}")


def _upcast(t: Tensor) -> Tensor:
    """``t`` in a type whose products do not overflow: half floats to float32, small integers
    to int32 (torchvision's rule, so results carry its dtypes)."""
    if t.dtype.is_floating_point:
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _check_fmt(op: str, fmt: str) -> None:
    if fmt not in _FORMATS:
        raise ArgumentError(f"{op}: unsupported box format {fmt!r}; the axis-aligned formats are "
                            f"{_FORMATS} (rotated boxes are not built)")


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """Areas of ``(..., 4)`` boxes in ``fmt`` (``"xyxy"``, ``"xywh"`` or ``"cxcywh"``); half
    floats come back float32 and small integers int32, as in torchvision.

    Example:
        >>> box_area(ember.tensor([[0.0, 0.0, 2.0, 3.0]]))
        tensor([6.])
    """
    _check_fmt("box_area", fmt)
    _check("box_area", boxes)
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _corners(boxes: Tensor, fmt: str) -> tuple[Tensor, Tensor]:
    """Top-left and bottom-right corners ``(..., 2)`` of boxes in ``fmt``."""
    if fmt == "xyxy":
        return boxes[..., :2], boxes[..., 2:]
    if fmt == "xywh":
        return boxes[..., :2], boxes[..., :2] + boxes[..., 2:]
    return boxes[..., :2] - boxes[..., 2:] / 2, boxes[..., :2] + boxes[..., 2:] / 2


def _overlap(op: str, boxes1: Tensor, boxes2: Tensor,
             fmt: str = "xyxy") -> tuple[Tensor, Tensor]:
    """The ``(..., N, M)`` intersections and unions of every pair."""
    _check_fmt(op, fmt)
    _check(op, boxes1, "boxes1")
    _check(op, boxes2, "boxes2")
    lo1, hi1 = _corners(boxes1, fmt)
    lo2, hi2 = _corners(boxes2, fmt)
    lo = ember.maximum(lo1[..., None, :], lo2[..., None, :, :])
    hi = ember.minimum(hi1[..., None, :], hi2[..., None, :, :])
    wh = _upcast(hi - lo).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = box_area(boxes1, fmt)[..., None] + box_area(boxes2, fmt)[..., None, :] - inter
    return inter, union


def _enclosing(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Width and height of the smallest box around each pair, ``(..., N, M, 2)``."""
    lo = ember.minimum(boxes1[..., None, :2], boxes2[..., None, :, :2])
    hi = ember.maximum(boxes1[..., None, 2:], boxes2[..., None, :, 2:])
    return _upcast(hi - lo).clamp(min=0)


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    """Intersection over union of every pair of ``(..., N, 4)`` and ``(..., M, 4)`` boxes in
    ``fmt``: ``(..., N, M)``.

    Example:
        >>> box_iou(ember.tensor([[0.0, 0.0, 2.0, 2.0]]), ember.tensor([[1.0, 0.0, 3.0, 2.0]]))
        tensor([[0.3333]])
    """
    inter, union = _overlap("box_iou", boxes1, boxes2, fmt)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """IoU minus the share of the enclosing box that neither box covers: in ``[-1, 1]``,
    informative even for boxes that do not overlap; ``(..., N, M)``.

    Example:
        >>> generalized_box_iou(ember.tensor([[0.0, 0.0, 1.0, 1.0]]),
        ...                     ember.tensor([[2.0, 0.0, 3.0, 1.0]]))
        tensor([[-0.3333]])
    """
    inter, union = _overlap("generalized_box_iou", boxes1, boxes2)
    wh = _enclosing(boxes1, boxes2)
    hull = wh[..., 0] * wh[..., 1]
    return inter / union - (hull - union) / hull


def _centre_penalty(boxes1: Tensor, boxes2: Tensor, eps: float) -> Tensor:
    """Squared distance of the centres over the squared diagonal of the enclosing box."""
    wh = _enclosing(boxes1, boxes2)
    diagonal = wh[..., 0] ** 2 + wh[..., 1] ** 2 + eps
    c1 = (boxes1[..., :2] + boxes1[..., 2:]) / 2
    c2 = (boxes2[..., :2] + boxes2[..., 2:]) / 2
    d = _upcast(c1[..., :, None, :] - c2[..., None, :, :])
    return (d[..., 0] ** 2 + d[..., 1] ** 2) / diagonal


def distance_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """IoU minus the centres' squared distance over the enclosing box's squared diagonal;
    ``(..., N, M)``.

    Example:
        >>> distance_box_iou(ember.tensor([[0.0, 0.0, 2.0, 2.0]]),
        ...                  ember.tensor([[0.0, 0.0, 2.0, 2.0]]))
        tensor([[1.]])
    """
    _check("distance_box_iou", boxes1, "boxes1")
    _check("distance_box_iou", boxes2, "boxes2")
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    return box_iou(boxes1, boxes2) - _centre_penalty(boxes1, boxes2, eps)


def complete_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """:func:`distance_box_iou` minus a term for differing aspect ratios; ``(..., N, M)``.

    Example:
        >>> complete_box_iou(ember.tensor([[0.0, 0.0, 2.0, 1.0]]),
        ...                  ember.tensor([[0.0, 0.0, 1.0, 2.0]]))
        tensor([[0.2371]])
    """
    _check("complete_box_iou", boxes1, "boxes1")
    _check("complete_box_iou", boxes2, "boxes2")
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    iou = box_iou(boxes1, boxes2)
    w1, h1 = boxes1[..., 2] - boxes1[..., 0], boxes1[..., 3] - boxes1[..., 1]
    w2, h2 = boxes2[..., 2] - boxes2[..., 0], boxes2[..., 3] - boxes2[..., 1]
    v = (4 / math.pi ** 2) * (ember.atan(w1 / h1)[..., :, None]
                              - ember.atan(w2 / h2)[..., None, :]) ** 2
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return iou - _centre_penalty(boxes1, boxes2, eps) - alpha * v


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Converts between ``"xyxy"`` (corners), ``"xywh"`` (corner and size) and ``"cxcywh"``
    (centre and size), or between the rotated formats ``"xywhr"``, ``"cxcywhr"`` (the same with
    an angle in degrees, counter-clockwise) and ``"xyxyxyxy"`` (the four corners).

    Example:
        >>> box_convert(ember.tensor([[1.0, 1.0, 2.0, 4.0]]), "cxcywh", "xyxy")
        tensor([[ 0., -1.,  2.,  3.]])
    """
    every = _FORMATS + ROTATED_FORMATS
    for fmt in (in_fmt, out_fmt):
        if fmt not in every:
            raise ArgumentError(f"box_convert: unknown box format {fmt!r}; the formats are {every}")
    if (in_fmt in _FORMATS) != (out_fmt in _FORMATS):
        raise NotImplementedError(f"box_convert: no conversion between the axis-aligned and "
                                  f"rotated formats ({in_fmt!r} to {out_fmt!r}), as in "
                                  "torchvision")
    check_tensors("box_convert", boxes=boxes)
    width = {"xywhr": 5, "cxcywhr": 5, "xyxyxyxy": 8}.get(in_fmt, 4)
    if boxes.ndim < 1 or boxes.shape[-1] != width:
        raise ShapeError(f"box_convert: {in_fmt!r} boxes must have shape (..., {width}), got "
                         f"{tuple(boxes.shape)}")
    if in_fmt == out_fmt:
        return boxes.clone()
    if in_fmt in ROTATED_FORMATS:
        return convert_rotated(boxes, in_fmt, out_fmt)
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - c / 2, b - d / 2, a + c / 2, b + d / 2
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return ember.stack((a, b, c, d), dim=-1)


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Boxes clipped to an image of ``size = (height, width)``.

    Example:
        >>> clip_boxes_to_image(ember.tensor([[-1.0, 2.0, 9.0, 5.0]]), (4, 8))
        tensor([[0., 2., 8., 4.]])
    """
    _check("clip_boxes_to_image", boxes)
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((x, y), dim=-1).reshape(boxes.shape)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the boxes whose width and height are both at least ``min_size`` (for
    ``(..., 4)`` boxes, the first-dimension indices of the kept boxes, as torchvision).

    Example:
        >>> remove_small_boxes(ember.tensor([[0.0, 0.0, 1.0, 5.0], [0.0, 0.0, 3.0, 3.0]]), 2)
        tensor([1])
    """
    _check("remove_small_boxes", boxes)
    w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    return ember.where((w >= min_size) & (h >= min_size))[0]


def masks_to_boxes(masks: Tensor) -> Tensor:
    """The tight ``(x1, y1, x2, y2)`` box of the nonzero pixels of each ``(H, W)`` mask of an
    ``(N, H, W)`` batch, float32; an empty mask gives ``[0, 0, 0, 0]``, as in torchvision.

    Example:
        >>> m = ember.zeros(1, 4, 5, dtype=ember.bool)
        >>> m[0, 1:3, 2:4] = True
        >>> masks_to_boxes(m)
        tensor([[2., 1., 3., 2.]])
    """
    check_tensors("masks_to_boxes", masks=masks)
    if masks.numel() == 0:  # (as torchvision: no pixels at all, no boxes at all)
        return ember.zeros(0, 4, dtype=ember.float32, device=masks.device)
    if masks.ndim != 3:
        raise ShapeError(f"masks_to_boxes: masks must have shape (N, H, W), got "
                         f"{tuple(masks.shape)}")
    nonzero = masks != 0
    rows, cols = nonzero.any(2), nonzero.any(1)
    ys, xs = ember.arange(masks.shape[1]), ember.arange(masks.shape[2])
    big = max(masks.shape[1], masks.shape[2])
    x1 = ember.where(cols, xs, big).min(1).values
    x2 = ember.where(cols, xs, -1).max(1).values
    y1 = ember.where(rows, ys, big).min(1).values
    y2 = ember.where(rows, ys, -1).max(1).values
    boxes = ember.stack((x1, y1, x2, y2), dim=1).float()
    return ember.where(rows.any(1)[:, None], boxes, ember.zeros(()))
