"""Non-maximum suppression, as torchvision's: greedy, highest score first, dropping every box
that overlaps a kept one by more than ``iou_threshold``."""

from __future__ import annotations

import numpy as np

import ember
from ember.errors import ShapeError
from ember.ops.forwarding import check_tensors
from ember.tensor import Tensor

__all__ = ["batched_nms", "nms"]


def _check(op: str, boxes: Tensor, scores: Tensor, idxs: Tensor | None = None) -> None:
    check_tensors(op, boxes=boxes, scores=scores)
    if idxs is not None:
        check_tensors(op, idxs=idxs)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ShapeError(f"{op}: boxes must have shape (N, 4), got {tuple(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise ShapeError(f"{op}: scores must have shape ({boxes.shape[0]},) to match the "
                         f"boxes, got {tuple(scores.shape)}")
    if boxes.dtype is not scores.dtype:
        raise ember.DTypeError(f"{op}: boxes and scores must have the same dtype, got "
                               f"{boxes.dtype} and {scores.dtype}")


def _by_score(scores: np.ndarray) -> np.ndarray:
    """Indices by descending score as torch's sort orders them: NaN first (it counts as the
    largest), ties in index order."""
    nan = np.isnan(scores)
    return np.lexsort((np.arange(len(scores)), np.where(nan, 0, -scores), ~nan))


def _greedy(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Kept indices, by descending score (ties: the earlier box first)."""
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = _by_score(scores)
    alive = np.ones(len(order), bool)
    keep = []
    for pos, i in enumerate(order):
        if not alive[pos]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0)
        inter = w * h
        overlap = inter / (areas[i] + areas[rest] - inter)  # (the kernel's operation order)
        # (in double, as torchvision's kernel: NumPy would compare float32 IoUs to the
        # threshold rounded to float32, so an IoU of exactly float32(0.3) would not exceed 0.3)
        alive[pos + 1:] &= ~(overlap.astype(np.float64) > iou_threshold)
    return np.asarray(keep, np.int64)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Indices (int64) of the ``(x1, y1, x2, y2)`` boxes kept by non-maximum suppression, in
    decreasing order of score.

    Example:
        >>> boxes = ember.tensor([[0.0, 0, 2, 2], [0.1, 0, 2, 2], [3.0, 3, 4, 4]])
        >>> nms(boxes, ember.tensor([0.9, 0.8, 0.7]), 0.5)
        tensor([0, 2])
    """
    _check("nms", boxes, scores)
    kept = _greedy(boxes.detach().numpy(), scores.detach().numpy(), iou_threshold)
    return ember.from_numpy(kept)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """:func:`nms` within each category ``idxs[i]`` (boxes of different categories never
    suppress each other); the kept indices in decreasing order of score.

    Example:
        >>> boxes = ember.tensor([[0.0, 0, 2, 2], [0.1, 0, 2, 2]])
        >>> batched_nms(boxes, ember.tensor([0.9, 0.8]), ember.tensor([0, 1]), 0.5)
        tensor([0, 1])
    """
    _check("batched_nms", boxes, scores, idxs)
    if idxs.shape != scores.shape:
        raise ShapeError(f"batched_nms: idxs must have the shape of scores "
                         f"{tuple(scores.shape)}, got {tuple(idxs.shape)}")
    b, s = boxes.detach().numpy(), scores.detach().numpy()
    groups = idxs.detach().numpy()
    kept = [np.flatnonzero(groups == g)[_greedy(b[groups == g], s[groups == g], iou_threshold)]
            for g in np.unique(groups)]
    # in one score order over all categories, ties in index order (as torchvision's one sort)
    kept = np.sort(np.concatenate(kept)) if kept else np.zeros(0, np.int64)
    return ember.from_numpy(kept[_by_score(s[kept])].astype(np.int64))
