"""The bookkeeping detectors share, as torchvision's ``detection._utils``: box deltas
(:class:`BoxCoder`, and FCOS's :class:`BoxLinearCoder`), ground-truth assignment
(:class:`Matcher`, SSD's :class:`SSDMatcher`) and the sampling of training examples
(:class:`BalancedPositiveNegativeSampler`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.ops.nms import batched_nms

__all__ = ["BalancedPositiveNegativeSampler", "BoxCoder", "BoxLinearCoder", "Matcher",
           "SSDMatcher", "retrieve_out_channels"]


class BalancedPositiveNegativeSampler:
    """Picks up to ``batch_size_per_image`` examples per image at random, at most a
    ``positive_fraction`` of them positive (label ``>= 1``) and the rest negative (label 0);
    label ``-1`` is never picked. Returns per-image uint8 masks of the positives and of the
    negatives.

    Example:
        >>> pos, neg = BalancedPositiveNegativeSampler(2, 0.5)([ember.tensor([1, 0, -1, 0])])
        >>> int(pos[0].sum()), int(neg[0].sum()), int(pos[0][0])
        (1, 1, 1)
    """

    def __init__(self, batch_size_per_image: int, positive_fraction: float) -> None:
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        pos_masks, neg_masks = [], []
        for labels in matched_idxs:
            positive = ember.where(labels >= 1)[0]
            negative = ember.where(labels == 0)[0]
            num_pos = min(positive.numel(), int(self.batch_size_per_image
                                                * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            pos = positive[ember.randperm(positive.numel())[:num_pos]]
            neg = negative[ember.randperm(negative.numel())[:num_neg]]
            for chosen, masks in ((pos, pos_masks), (neg, neg_masks)):
                mask = ember.zeros(labels.shape, dtype=ember.uint8)
                mask[chosen] = 1
                masks.append(mask)
        return pos_masks, neg_masks


class BoxCoder:
    """Encodes boxes as deltas ``(dx, dy, dw, dh)`` from reference boxes (centre shifts in
    units of the reference's size, log size ratios; each times its ``weights``) and decodes
    them back, the size deltas clamped at ``bbox_xform_clip``.

    Example:
        >>> coder = BoxCoder((1.0, 1.0, 1.0, 1.0))
        >>> anchors = [ember.tensor([[0.0, 0.0, 4.0, 4.0]])]
        >>> deltas = coder.encode([ember.tensor([[1.0, 1.0, 5.0, 5.0]])], anchors)[0]
        >>> deltas
        tensor([[0.2500, 0.2500, 0.0000, 0.0000]])
        >>> coder.decode(deltas, anchors)
        tensor([[[1., 1., 5., 5.]]])
    """

    def __init__(self, weights: tuple[float, float, float, float],
                 bbox_xform_clip: float = math.log(1000.0 / 16)) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes: list[Tensor], proposals: list[Tensor]) -> list[Tensor]:
        """Per image: the deltas that move each of ``proposals`` onto its
        ``reference_boxes`` row."""
        counts = [len(b) for b in reference_boxes]
        deltas = self.encode_single(ember.cat(reference_boxes), ember.cat(proposals))
        return list(deltas.split(counts, 0))

    def encode_single(self, reference_boxes: Tensor, proposals: Tensor) -> Tensor:
        wx, wy, ww, wh = self.weights
        pw, ph = proposals[:, 2] - proposals[:, 0], proposals[:, 3] - proposals[:, 1]
        px, py = proposals[:, 0] + 0.5 * pw, proposals[:, 1] + 0.5 * ph
        gw = reference_boxes[:, 2] - reference_boxes[:, 0]
        gh = reference_boxes[:, 3] - reference_boxes[:, 1]
        gx, gy = reference_boxes[:, 0] + 0.5 * gw, reference_boxes[:, 1] + 0.5 * gh
        return ember.stack((wx * (gx - px) / pw, wy * (gy - py) / ph,
                            ww * ember.log(gw / pw), wh * ember.log(gh / ph)), dim=1)

    def decode(self, rel_codes: Tensor, boxes: list[Tensor]) -> Tensor:
        """The boxes the ``(sum N, 4 K)`` deltas make of the per-image reference ``boxes``:
        ``(sum N, K, 4)``."""
        reference = ember.cat(boxes)
        total = len(reference)
        if total > 0:
            rel_codes = rel_codes.reshape(total, -1)
        decoded = self.decode_single(rel_codes, reference)
        # (with no boxes too: an image without proposals still yields (0, K, 4))
        return decoded.reshape(total, decoded.shape[-1] // 4, 4)

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        """``(N, 4 K)`` deltas applied to ``(N, 4)`` boxes: ``(N, 4 K)`` corners."""
        boxes = boxes.to(rel_codes.dtype)
        wx, wy, ww, wh = self.weights
        widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        cx, cy = boxes[:, 0] + 0.5 * widths, boxes[:, 1] + 0.5 * heights
        dx, dy = rel_codes[:, 0::4] / wx, rel_codes[:, 1::4] / wy
        dw = (rel_codes[:, 2::4] / ww).clamp(max=self.bbox_xform_clip)
        dh = (rel_codes[:, 3::4] / wh).clamp(max=self.bbox_xform_clip)
        x = dx * widths[:, None] + cx[:, None]
        y = dy * heights[:, None] + cy[:, None]
        half_w = 0.5 * ember.exp(dw) * widths[:, None]
        half_h = 0.5 * ember.exp(dh) * heights[:, None]
        return ember.stack((x - half_w, y - half_h, x + half_w, y + half_h), dim=2).flatten(1)


class Matcher:
    """Assigns each prediction (a column of the ``(M ground truths, N predictions)`` quality
    matrix) its best ground truth, or ``BELOW_LOW_THRESHOLD`` (-1) when the best quality is
    under ``low_threshold``, ``BETWEEN_THRESHOLDS`` (-2) when under ``high_threshold``. With
    ``allow_low_quality_matches`` every ground truth also keeps the predictions it overlaps
    best, however low.

    Example:
        >>> Matcher(0.7, 0.3)(ember.tensor([[0.9, 0.5, 0.1]]))
        tensor([ 0, -2, -1])
    """

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold: float, low_threshold: float,
                 allow_low_quality_matches: bool = False) -> None:
        if low_threshold > high_threshold:
            raise ArgumentError(f"Matcher: low_threshold {low_threshold} must not exceed "
                                f"high_threshold {high_threshold}")
        self.high_threshold, self.low_threshold = high_threshold, low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        if match_quality_matrix.numel() == 0:
            if match_quality_matrix.shape[0] == 0:
                raise ArgumentError("No ground-truth boxes available for one of the images "
                                    "during training")
            raise ArgumentError("No proposal boxes available for one of the images during "
                                "training")
        best, matches = match_quality_matrix.max(dim=0)
        below = best < self.low_threshold
        between = (best >= self.low_threshold) & (best < self.high_threshold)
        result = ember.where(below, self.BELOW_LOW_THRESHOLD,
                             ember.where(between, self.BETWEEN_THRESHOLDS, matches))
        if self.allow_low_quality_matches:
            # the predictions that tie for a ground truth's best overlap keep their match
            best_per_gt = match_quality_matrix.max(dim=1).values
            rescued = (match_quality_matrix == best_per_gt[:, None]).any(0)
            result = ember.where(rescued, matches, result)
        return result


class SSDMatcher(Matcher):
    """:class:`Matcher` with one threshold, where each ground truth also claims the
    prediction it overlaps best (SSD's assignment), whatever the overlap.

    Example:
        >>> SSDMatcher(0.5)(ember.tensor([[0.2, 0.1, 0.6]]))
        tensor([-1, -1,  0])
        >>> SSDMatcher(0.5)(ember.tensor([[0.2, 0.1, 0.3]]))
        tensor([-1, -1,  0])
    """

    def __init__(self, threshold: float) -> None:
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        matches = super().__call__(match_quality_matrix)
        best_prediction = match_quality_matrix.max(dim=1).indices
        matches[best_prediction] = ember.arange(len(best_prediction))
        return matches


class BoxLinearCoder:
    """FCOS's box code: the distances ``(left, top, right, bottom)`` from each reference box's
    centre to the box's sides, divided by the reference's width and height when
    ``normalize_by_size``.

    Example:
        >>> coder = BoxLinearCoder(normalize_by_size=True)
        >>> anchors = ember.tensor([[0.0, 0.0, 4.0, 4.0]])
        >>> codes = coder.encode(anchors, ember.tensor([[1.0, 0.0, 5.0, 6.0]]))
        >>> codes
        tensor([[0.2500, 0.5000, 0.7500, 1.0000]])
        >>> coder.decode(codes, anchors)
        tensor([[1., 0., 5., 6.]])
    """

    def __init__(self, normalize_by_size: bool = True) -> None:
        self.normalize_by_size = normalize_by_size

    def _centres_and_scale(self, boxes: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        cx = (boxes[..., 0] + boxes[..., 2]) * 0.5
        cy = (boxes[..., 1] + boxes[..., 3]) * 0.5
        if not self.normalize_by_size:
            return cx, cy, ember.ones_like(boxes)
        width, height = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
        return cx, cy, ember.stack((width, height, width, height), dim=-1)

    def encode(self, reference_boxes: Tensor, boxes: Tensor) -> Tensor:
        """The ``(..., 4)`` distances from ``reference_boxes``' centres to ``boxes``' sides."""
        cx, cy, scale = self._centres_and_scale(reference_boxes)
        distances = ember.stack((cx - boxes[..., 0], cy - boxes[..., 1],
                                 boxes[..., 2] - cx, boxes[..., 3] - cy), dim=-1)
        return distances / scale

    def decode(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        """The ``(..., 4)`` boxes whose sides lie ``rel_codes`` from ``boxes``' centres."""
        boxes = boxes.to(rel_codes.dtype)
        cx, cy, scale = self._centres_and_scale(boxes)
        d = rel_codes * scale
        return ember.stack((cx - d[..., 0], cy - d[..., 1], cx + d[..., 2], cy + d[..., 3]),
                           dim=-1)


def top_candidates(scores: Tensor, score_thresh: float, topk: int
                   ) -> tuple[Tensor, Tensor, Tensor]:
    """One level's best ``(anchors, classes)`` scores for the one-stage detectors: the at most
    ``topk`` above ``score_thresh``, best first, with their anchor rows and class labels."""
    num_classes = scores.shape[-1]
    flat = scores.flatten()
    candidates = ember.where(flat > score_thresh)[0]
    best, order = flat[candidates].topk(min(candidates.numel(), topk))
    candidates = candidates[order]
    return best, ember.div(candidates, num_classes, rounding_mode="floor"), (
        candidates % num_classes)


def anchors_per_level(total: int, features: list[Tensor]) -> list[int]:
    """How many of ``total`` anchors (or head-output rows) belong to each level: ``H·W·A``,
    the ``features`` maps giving ``H·W``."""
    positions = [f.shape[2] * f.shape[3] for f in features]
    return [n * (total // sum(positions)) for n in positions]


def split_by_level(head_outputs: dict[str, Tensor], anchors: list[Tensor],
                   features: list[Tensor]) -> tuple[dict[str, list[Tensor]], list[list[Tensor]]]:
    """Head outputs ``(N, ΣHWA, C)`` and per-image anchors ``(ΣHWA, 4)`` cut at the levels'
    boundaries."""
    counts = anchors_per_level(len(anchors[0]), features)
    return ({k: list(v.split(counts, 1)) for k, v in head_outputs.items()},
            [list(a.split(counts)) for a in anchors])


def match_targets(anchors: list[Tensor], targets: list[dict[str, Tensor]],
                  match: Callable[[Tensor, Tensor], Tensor]) -> list[Tensor]:
    """Per image, ``match(target_boxes, anchors)``: each anchor's ground-truth index, or -1
    for every anchor of an image without boxes."""
    matched = []
    for anchors_in_image, target in zip(anchors, targets):
        if target["boxes"].numel() == 0:
            matched.append(ember.full((len(anchors_in_image),), -1, dtype=ember.int64))
        else:
            matched.append(match(target["boxes"], anchors_in_image))
    return matched


def best_after_nms(boxes: list[Tensor], scores: list[Tensor], labels: list[Tensor],
                   nms_thresh: float, detections_per_img: int) -> dict[str, Tensor]:
    """One image's detections: the candidates (lists of pieces) after per-class NMS, the
    ``detections_per_img`` best."""
    boxes, scores, labels = ember.cat(boxes), ember.cat(scores), ember.cat(labels)
    keep = batched_nms(boxes, scores, labels, nms_thresh)[:detections_per_img]
    return {"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]}


def retrieve_out_channels(model: nn.Module, size: tuple[int, int]) -> list[int]:
    """The channels of each feature map ``model`` returns for one image of ``size`` (width,
    height, as torchvision's), found by running it once (in eval mode, without gradients).

    Example:
        >>> retrieve_out_channels(nn.Conv2d(3, 5, 1), (8, 6))
        [5]
    """
    was_training = model.training
    model.eval()
    with ember.no_grad():
        features = model(ember.zeros(1, 3, size[1], size[0]))
    model.train(was_training)
    if isinstance(features, Tensor):
        features = {"0": features}
    return [int(f.shape[1]) for f in features.values()]


def kaiming_init_convs(module: nn.Module) -> None:
    """Initialises every ``Conv2d`` in ``module`` as torchvision's detection heads do:
    Kaiming-normal weights (fan out, ReLU gain), zero biases.

    Example:
        >>> head = nn.Sequential(nn.Conv2d(4, 4, 3), nn.ReLU())
        >>> kaiming_init_convs(head)
        >>> head[0].bias.abs().sum().item()
        0.0
    """
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
