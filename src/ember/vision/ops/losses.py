"""Detection losses under torchvision's names: the focal loss and the IoU-family box losses
(each ``1 - overlap`` of paired boxes, made of Ember ops so they train by autograd)."""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, ShapeError
from ember.ops.forwarding import check_tensors
from ember.tensor import Tensor

__all__ = ["complete_box_iou_loss", "distance_box_iou_loss", "generalized_box_iou_loss",
           "sigmoid_focal_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduce(op: str, loss: Tensor, reduction: str, empty_mean: float = 0.0) -> Tensor:
    """``reduction`` of ``loss``; the mean of no elements is ``empty_mean`` (torchvision's box
    losses give 0, its focal loss NaN)."""
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: invalid reduction {reduction!r}; use one of {_REDUCTIONS}")
    if reduction == "mean":
        return loss.mean() if loss.numel() else loss.sum() * 0.0 + empty_mean
    return loss.sum() if reduction == "sum" else loss


def sigmoid_focal_loss(inputs: Tensor, targets: Tensor, alpha: float = 0.25,
                       gamma: float = 2.0, reduction: str = "none") -> Tensor:
    """The focal loss of RetinaNet: binary cross-entropy on logits, scaled by
    ``(1 - p_t) ** gamma`` to focus on hard examples and weighted by ``alpha`` for positives
    (``alpha < 0``: no weighting).

    Example:
        >>> sigmoid_focal_loss(ember.tensor([3.0, -1.0]), ember.tensor([1.0, 0.0]))
        tensor([2.7321e-05, 1.6994e-02])
    """
    check_tensors("sigmoid_focal_loss", inputs=inputs, targets=targets)
    if inputs.shape != targets.shape:
        raise ShapeError(f"sigmoid_focal_loss: inputs {tuple(inputs.shape)} and targets "
                         f"{tuple(targets.shape)} must have the same shape")
    p = inputs.sigmoid()
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return _reduce("sigmoid_focal_loss", loss, reduction, empty_mean=math.nan)


def _paired(op: str, boxes1: Tensor, boxes2: Tensor) -> tuple[Tensor, ...]:
    """Corners of paired boxes, and their intersections and unions."""
    check_tensors(op, boxes1=boxes1, boxes2=boxes2)
    if boxes1.shape != boxes2.shape or boxes1.shape[-1:] != (4,):
        raise ShapeError(f"{op}: boxes1 and boxes2 must both be (..., 4) and equal in shape, "
                         f"got {tuple(boxes1.shape)} and {tuple(boxes2.shape)}")
    # as torchvision: any dtype but float32/64 (half floats, integers) is computed in float32
    boxes1, boxes2 = (b if b.dtype in (ember.float32, ember.float64) else b.float()
                      for b in (boxes1, boxes2))
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    xk1, yk1 = ember.maximum(x1, x1g), ember.maximum(y1, y1g)
    xk2, yk2 = ember.minimum(x2, x2g), ember.minimum(y2, y2g)
    inter = ember.zeros_like(x1)
    inter = ember.where((yk2 > yk1) & (xk2 > xk1), (xk2 - xk1) * (yk2 - yk1), inter)
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
    return x1, y1, x2, y2, x1g, y1g, x2g, y2g, inter, union


def _hull(c: tuple) -> tuple[Tensor, Tensor]:
    """Width and height of the enclosing box of each pair."""
    x1, y1, x2, y2, x1g, y1g, x2g, y2g = c[:8]
    return (ember.maximum(x2, x2g) - ember.minimum(x1, x1g),
            ember.maximum(y2, y2g) - ember.minimum(y1, y1g))


def generalized_box_iou_loss(boxes1: Tensor, boxes2: Tensor, reduction: str = "none",
                             eps: float = 1e-7) -> Tensor:
    """``1 - GIoU`` of paired ``(x1, y1, x2, y2)`` boxes (``boxes1[i]`` with ``boxes2[i]``).

    Example:
        >>> generalized_box_iou_loss(ember.tensor([[0.0, 0.0, 1.0, 1.0]]),
        ...                          ember.tensor([[2.0, 0.0, 3.0, 1.0]]))
        tensor([1.3333])
    """
    c = _paired("generalized_box_iou_loss", boxes1, boxes2)
    inter, union = c[8], c[9]
    iou = inter / (union + eps)
    w, h = _hull(c)
    area = w * h
    return _reduce("generalized_box_iou_loss", 1 - (iou - (area - union) / (area + eps)),
                   reduction)


def _distance(c: tuple, eps: float) -> tuple[Tensor, Tensor]:
    """``(1 - DIoU, IoU)`` of paired boxes."""
    x1, y1, x2, y2, x1g, y1g, x2g, y2g, inter, union = c
    iou = inter / (union + eps)
    w, h = _hull(c)
    diagonal = w ** 2 + h ** 2 + eps
    dx = (x1 + x2) / 2 - (x1g + x2g) / 2
    dy = (y1 + y2) / 2 - (y1g + y2g) / 2
    return 1 - iou + (dx ** 2 + dy ** 2) / diagonal, iou


def distance_box_iou_loss(boxes1: Tensor, boxes2: Tensor, reduction: str = "none",
                          eps: float = 1e-7) -> Tensor:
    """``1 - DIoU`` of paired boxes: the IoU loss plus the centres' normalized distance.

    Example:
        >>> distance_box_iou_loss(ember.tensor([[0.0, 0.0, 2.0, 2.0]]),
        ...                       ember.tensor([[1.0, 0.0, 3.0, 2.0]]))
        tensor([0.7436])
    """
    loss, _ = _distance(_paired("distance_box_iou_loss", boxes1, boxes2), eps)
    return _reduce("distance_box_iou_loss", loss, reduction)


def complete_box_iou_loss(boxes1: Tensor, boxes2: Tensor, reduction: str = "none",
                          eps: float = 1e-7) -> Tensor:
    """``1 - CIoU`` of paired boxes: :func:`distance_box_iou_loss` plus an aspect-ratio term.
    As in torchvision, ``eps`` enters only the aspect-ratio weight; the distance part keeps its
    default ``1e-7``.

    Example:
        >>> complete_box_iou_loss(ember.tensor([[0.0, 0.0, 2.0, 1.0]]),
        ...                       ember.tensor([[0.0, 0.0, 1.0, 2.0]]))
        tensor([0.7629])
    """
    c = _paired("complete_box_iou_loss", boxes1, boxes2)
    loss, iou = _distance(c, 1e-7)
    x1, y1, x2, y2, x1g, y1g, x2g, y2g = c[:8]
    v = (4 / math.pi ** 2) * (ember.atan((x2g - x1g) / (y2g - y1g))
                              - ember.atan((x2 - x1) / (y2 - y1))) ** 2
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce("complete_box_iou_loss", loss + alpha * v, reduction)
