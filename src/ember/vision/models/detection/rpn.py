"""The region proposal network of Faster R-CNN (Ren et al., 2015), as torchvision's: an
objectness score and box deltas per anchor, decoded, filtered and suppressed into proposals,
and trained on a balanced sample of anchors."""

from __future__ import annotations

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models.detection._utils import (
    BalancedPositiveNegativeSampler,
    BoxCoder,
    Matcher,
)
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.image_list import ImageList
from ember.vision.ops.boxes import box_iou, clip_boxes_to_image, remove_small_boxes
from ember.vision.ops.layers import Conv2dNormActivation
from ember.vision.ops.nms import batched_nms

__all__ = ["RPNHead", "RegionProposalNetwork", "concat_box_prediction_layers"]


class RPNHead(nn.Module):
    """``conv_depth`` shared 3×3 convolutions (with ReLU), then per anchor one objectness
    logit (``cls_logits``) and four box deltas (``bbox_pred``), on every feature level.

    Example:
        >>> logits, deltas = RPNHead(8, 3)([ember.randn(1, 8, 4, 4)])
        >>> logits[0].shape, deltas[0].shape
        (ember.Size([1, 3, 4, 4]), ember.Size([1, 12, 4, 4]))
    """

    def __init__(self, in_channels: int, num_anchors: int, conv_depth: int = 1) -> None:
        super().__init__()
        self.conv = nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, 3,
                                                         norm_layer=None)
                                    for _ in range(conv_depth)])
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, 1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, 1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, std=0.01)
                nn.init.constant_(m.bias, 0)

    def forward(self, x: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        logits, deltas = [], []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            deltas.append(self.bbox_pred(t))
        return logits, deltas


def _flatten(layer: Tensor, channels: int) -> Tensor:
    """``(N, A·C, H, W)`` → ``(N, H·W·A, C)``: position-major, as the anchors are laid out."""
    n, _, h, w = layer.shape
    return layer.reshape(n, -1, channels, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, channels)


def concat_box_prediction_layers(box_cls: list[Tensor], box_regression: list[Tensor]
                                 ) -> tuple[Tensor, Tensor]:
    """Per-level ``(N, A·C, H, W)`` scores and ``(N, A·4, H, W)`` deltas as one
    ``(N·ΣHWA, C)`` and one ``(N·ΣHWA, 4)`` tensor, in the anchors' order."""
    scores, deltas = [], []
    for cls, reg in zip(box_cls, box_regression):
        anchors = reg.shape[1] // 4
        scores.append(_flatten(cls, cls.shape[1] // anchors))
        deltas.append(_flatten(reg, 4))
    return ember.cat(scores, 1).flatten(0, -2), ember.cat(deltas, 1).reshape(-1, 4)


class RegionProposalNetwork(nn.Module):
    """Proposals from anchors: the ``pre_nms_top_n`` best-scoring anchors of each level
    (decoded, clipped, small and low-scoring boxes dropped), non-maximum suppression per
    level at ``nms_thresh``, the ``post_nms_top_n`` best kept. ``pre_nms_top_n`` and
    ``post_nms_top_n`` are dicts with a ``"training"`` and a ``"testing"`` entry. In training
    it also returns ``loss_objectness`` and ``loss_rpn_box_reg``.

    Example:
        >>> rpn = RegionProposalNetwork(AnchorGenerator(((16,),), ((1.0,),)), RPNHead(4, 1),
        ...     0.7, 0.3, 8, 0.5, {"training": 10, "testing": 5}, {"training": 10,
        ...     "testing": 5}, 0.7).eval()
        >>> boxes, _ = rpn(ImageList(ember.zeros(1, 3, 32, 32), [(32, 32)]),
        ...                {"0": ember.randn(1, 4, 4, 4)})
        >>> boxes[0].shape[1], len(boxes[0]) <= 5
        (4, True)
    """

    def __init__(self, anchor_generator: AnchorGenerator, head: nn.Module,
                 fg_iou_thresh: float, bg_iou_thresh: float, batch_size_per_image: int,
                 positive_fraction: float, pre_nms_top_n: dict[str, int],
                 post_nms_top_n: dict[str, int], nms_thresh: float,
                 score_thresh: float = 0.0) -> None:
        super().__init__()
        self.anchor_generator, self.head = anchor_generator, head
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.box_similarity = box_iou
        self.proposal_matcher = Matcher(fg_iou_thresh, bg_iou_thresh,
                                        allow_low_quality_matches=True)
        self.fg_bg_sampler = BalancedPositiveNegativeSampler(batch_size_per_image,
                                                             positive_fraction)
        self._pre_nms_top_n, self._post_nms_top_n = pre_nms_top_n, post_nms_top_n
        self.nms_thresh, self.score_thresh = nms_thresh, score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self) -> int:
        return self._pre_nms_top_n["training" if self.training else "testing"]

    def post_nms_top_n(self) -> int:
        return self._post_nms_top_n["training" if self.training else "testing"]

    def assign_targets_to_anchors(self, anchors: list[Tensor], targets: list[dict[str, Tensor]]
                                  ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image: anchor labels (1 object, 0 background, -1 ignored) and matched boxes."""
        labels, matched_boxes = [], []
        for anchors_in_image, target in zip(anchors, targets):
            gt_boxes = target["boxes"]
            if gt_boxes.numel() == 0:
                matched_boxes.append(ember.zeros(anchors_in_image.shape,
                                                 dtype=anchors_in_image.dtype))
                labels.append(ember.zeros(len(anchors_in_image)))
                continue
            matched = self.proposal_matcher(self.box_similarity(gt_boxes, anchors_in_image))
            matched_boxes.append(gt_boxes[matched.clamp(min=0)])
            label = (matched >= 0).float()
            label = ember.where(matched == Matcher.BELOW_LOW_THRESHOLD, 0.0, label)
            labels.append(ember.where(matched == Matcher.BETWEEN_THRESHOLDS, -1.0, label))
        return labels, matched_boxes

    def _top_n_per_level(self, objectness: Tensor, num_anchors_per_level: list[int]) -> Tensor:
        picked, offset = [], 0
        for level in objectness.split(num_anchors_per_level, 1):
            count = level.shape[1]
            picked.append(level.topk(min(self.pre_nms_top_n(), count), dim=1)[1] + offset)
            offset += count
        return ember.cat(picked, 1)

    def filter_proposals(self, proposals: Tensor, objectness: Tensor,
                         image_shapes: list[tuple[int, int]], num_anchors_per_level: list[int]
                         ) -> tuple[list[Tensor], list[Tensor]]:
        num_images = proposals.shape[0]
        objectness = objectness.detach().reshape(num_images, -1)
        levels = ember.cat([ember.full((n,), i, dtype=ember.int64)
                            for i, n in enumerate(num_anchors_per_level)])
        levels = levels.reshape(1, -1).expand(objectness.shape)
        top = self._top_n_per_level(objectness, num_anchors_per_level)
        rows = ember.arange(num_images)[:, None]
        objectness, levels = objectness[rows, top], levels[rows, top]
        proposals = proposals[rows, top]
        final_boxes, final_scores = [], []
        for boxes, scores, lvl, shape in zip(proposals, objectness.sigmoid(), levels,
                                             image_shapes):
            boxes = clip_boxes_to_image(boxes, shape)
            keep = remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = ember.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = batched_nms(boxes, scores, lvl, self.nms_thresh)[:self.post_nms_top_n()]
            final_boxes.append(boxes[keep])
            final_scores.append(scores[keep])
        return final_boxes, final_scores

    def compute_loss(self, objectness: Tensor, pred_bbox_deltas: Tensor, labels: list[Tensor],
                     regression_targets: list[Tensor]) -> tuple[Tensor, Tensor]:
        """Binary cross-entropy of the sampled anchors' objectness, and smooth-L1 (β = 1/9)
        of the sampled positives' deltas summed over the sample's size."""
        pos_masks, neg_masks = self.fg_bg_sampler(labels)
        pos = ember.where(ember.cat(pos_masks))[0]
        neg = ember.where(ember.cat(neg_masks))[0]
        sampled = ember.cat([pos, neg])
        labels, targets = ember.cat(labels), ember.cat(regression_targets)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[pos], targets[pos], beta=1 / 9,
                                    reduction="sum") / sampled.numel()
        objectness_loss = F.binary_cross_entropy_with_logits(objectness.flatten()[sampled],
                                                             labels[sampled])
        return objectness_loss, box_loss

    def forward(self, images: ImageList, features: dict[str, Tensor],
                targets: list[dict[str, Tensor]] | None = None
                ) -> tuple[list[Tensor], dict[str, Tensor]]:
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_anchors_per_level = [o.shape[1] * o.shape[2] * o.shape[3] for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors)
        proposals = proposals.reshape(len(anchors), -1, 4)
        boxes, _ = self.filter_proposals(proposals, objectness, images.image_sizes,
                                         num_anchors_per_level)
        losses = {}
        if self.training:
            if targets is None:
                raise ArgumentError("RegionProposalNetwork: targets should not be None in training")
            labels, matched_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = self.box_coder.encode(matched_boxes, anchors)
            loss_objectness, loss_rpn_box_reg = self.compute_loss(
                objectness, pred_bbox_deltas, labels, regression_targets)
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses
