"""The second stage of Faster, Mask and Keypoint R-CNN, as torchvision's ``RoIHeads``:
features pooled from each proposal, classified and refined into detections; with a mask
branch, a mask per detection; with a keypoint branch, keypoints per detection. Training
samples proposals against the ground truth and returns the losses."""

from __future__ import annotations

import math

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
from ember.vision.ops.boxes import box_iou, clip_boxes_to_image, remove_small_boxes
from ember.vision.ops.nms import batched_nms
from ember.vision.ops.roi import roi_align

__all__ = ["RoIHeads", "fastrcnn_loss", "heatmaps_to_keypoints", "keypointrcnn_inference",
           "keypointrcnn_loss", "keypoints_to_heatmap", "maskrcnn_inference", "maskrcnn_loss"]


def fastrcnn_loss(class_logits: Tensor, box_regression: Tensor, labels: list[Tensor],
                  regression_targets: list[Tensor]) -> tuple[Tensor, Tensor]:
    """Cross-entropy of the classes, and smooth-L1 (β = 1/9) of the true class's box deltas on
    the positive samples, summed and divided by the number of samples."""
    labels, regression_targets = ember.cat(labels), ember.cat(regression_targets)
    classification_loss = F.cross_entropy(class_logits, labels)
    pos = ember.where(labels > 0)[0]
    per_class = box_regression.reshape(class_logits.shape[0], -1, 4)
    box_loss = F.smooth_l1_loss(per_class[pos, labels[pos]], regression_targets[pos],
                                beta=1 / 9, reduction="sum")
    return classification_loss, box_loss / labels.numel()


def _project_masks_on_boxes(gt_masks: Tensor, boxes: Tensor, matched_idxs: Tensor,
                            size: int) -> Tensor:
    """Each box's ground-truth mask cropped to the box and resampled to ``size × size``."""
    rois = ember.cat([matched_idxs.to(boxes.dtype)[:, None], boxes], 1)
    return roi_align(gt_masks[:, None].to(boxes.dtype), rois, (size, size), 1.0)[:, 0]


def maskrcnn_loss(mask_logits: Tensor, proposals: list[Tensor], gt_masks: list[Tensor],
                  gt_labels: list[Tensor], mask_matched_idxs: list[Tensor]) -> Tensor:
    """Binary cross-entropy of each positive proposal's mask logits for its true class
    against its ground-truth mask cropped to the proposal."""
    size = mask_logits.shape[-1]
    labels = ember.cat([lab[idx] for lab, idx in zip(gt_labels, mask_matched_idxs)])
    targets = ember.cat([_project_masks_on_boxes(m, p, i, size)
                         for m, p, i in zip(gt_masks, proposals, mask_matched_idxs)])
    if targets.numel() == 0:
        return mask_logits.sum() * 0
    chosen = mask_logits[ember.arange(labels.shape[0]), labels]
    return F.binary_cross_entropy_with_logits(chosen, targets)


def maskrcnn_inference(x: Tensor, labels: list[Tensor]) -> list[Tensor]:
    """Per image: the ``(N, 1, M, M)`` mask probabilities of each detection's class."""
    prob = x.sigmoid()
    flat = ember.cat(labels)
    prob = prob[ember.arange(x.shape[0]), flat][:, None]
    return list(prob.split([len(lab) for lab in labels], 0))


def keypoints_to_heatmap(keypoints: Tensor, rois: Tensor, heatmap_size: int
                         ) -> tuple[Tensor, Tensor]:
    """Each ``(N, K, 3)`` keypoint ``(x, y, visibility)`` as the flat index of its cell in its
    RoI's ``heatmap_size²`` grid (a point on the RoI's right or bottom edge in the last cell),
    and whether it counts: visible and inside the RoI. Both ``(N, K)`` int64, the index 0
    where it does not count.

    Example:
        >>> keypoints_to_heatmap(ember.tensor([[[2.0, 5.0, 1.0], [9.0, 1.0, 1.0]]]),
        ...                      ember.tensor([[0.0, 0.0, 8.0, 8.0]]), 4)
        (tensor([[9, 0]]), tensor([[1, 0]]))
    """
    x0, y0 = rois[:, 0:1], rois[:, 1:2]
    scale_x = heatmap_size / (rois[:, 2:3] - x0)
    scale_y = heatmap_size / (rois[:, 3:4] - y0)
    x, y = keypoints[..., 0], keypoints[..., 1]
    last = heatmap_size - 1
    col = ember.where(x == rois[:, 2:3], last, ((x - x0) * scale_x).floor().to(ember.int64))
    row = ember.where(y == rois[:, 3:4], last, ((y - y0) * scale_y).floor().to(ember.int64))
    inside = (col >= 0) & (row >= 0) & (col < heatmap_size) & (row < heatmap_size)
    valid = (inside & (keypoints[..., 2] > 0)).to(ember.int64)
    return (row * heatmap_size + col) * valid, valid


def keypointrcnn_loss(keypoint_logits: Tensor, proposals: list[Tensor],
                      gt_keypoints: list[Tensor], keypoint_matched_idxs: list[Tensor]) -> Tensor:
    """Cross-entropy over each ``(H, W)`` heatmap of the positive proposals' keypoints against
    the cell of the matched ground-truth keypoint, averaged over the keypoints that count.

    Example:
        >>> keypointrcnn_loss(ember.zeros(1, 2, 4, 4), [ember.tensor([[0.0, 0.0, 8.0, 8.0]])],
        ...                   [ember.tensor([[[2.0, 5.0, 1.0], [1.0, 1.0, 0.0]]])],
        ...                   [ember.tensor([0])])  # one keypoint counts: log(16)
        tensor(2.7726)
    """
    n, k, h, w = keypoint_logits.shape
    if h != w:
        raise ArgumentError(f"keypointrcnn_loss: heatmaps must be square, got {h}x{w}")
    for keypoints in gt_keypoints:  # else the flat rows below would pair the wrong maps
        if keypoints.shape[1] != k:
            raise ArgumentError(f"keypointrcnn_loss: the targets have {keypoints.shape[1]} "
                                f"keypoints per box but the predictor makes {k} heatmaps. Hint: "
                                f"build the model with num_keypoints={keypoints.shape[1]}")
    heatmaps, valid = [], []
    for props, keypoints, matched in zip(proposals, gt_keypoints, keypoint_matched_idxs):
        cells, counts = keypoints_to_heatmap(keypoints[matched], props, h)
        heatmaps.append(cells.reshape(-1))
        valid.append(counts.reshape(-1))
    targets, rows = ember.cat(heatmaps), ember.where(ember.cat(valid) > 0)[0]
    if targets.numel() == 0 or rows.numel() == 0:
        return keypoint_logits.sum() * 0
    return F.cross_entropy(keypoint_logits.reshape(n * k, h * w)[rows], targets[rows])


def heatmaps_to_keypoints(maps: Tensor, rois: Tensor) -> tuple[Tensor, Tensor]:
    """``(N, K, M, M)`` heatmap logits of ``(N, 4)`` RoIs as ``(N, K, 3)`` keypoints ``(x, y,
    1)`` in the image and ``(N, K)`` scores: each map resized bicubically to its RoI's size in
    whole pixels (at least 1), its best cell's centre mapped back into the RoI, the logit
    there its score.

    Example:
        >>> maps = ember.zeros(1, 1, 4, 4)
        >>> maps[0, 0, 1, 2] = 5.0
        >>> heatmaps_to_keypoints(maps, ember.tensor([[0.0, 0.0, 4.0, 4.0]]))[0]
        tensor([[[2.5000, 1.5000, 1.0000]]])
    """
    x0, y0 = rois[:, 0], rois[:, 1]
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    num_keypoints = maps.shape[1]
    keypoints, scores = [], []
    for i in range(len(rois)):
        map_w, map_h = int(math.ceil(float(widths[i]))), int(math.ceil(float(heights[i])))
        roi_map = F.interpolate(maps[i][:, None], size=(map_h, map_w), mode="bicubic",
                                align_corners=False)[:, 0]
        best = roi_map.reshape(num_keypoints, -1).argmax(dim=1)
        col, row = best % map_w, ember.div(best, map_w, rounding_mode="floor")
        x = (col.to(maps.dtype) + 0.5) * (widths[i] / map_w) + x0[i]
        y = (row.to(maps.dtype) + 0.5) * (heights[i] / map_h) + y0[i]
        keypoints.append(ember.stack((x, y, ember.ones_like(x)), dim=1))
        scores.append(roi_map[ember.arange(num_keypoints), row, col])
    if not keypoints:
        return (ember.zeros(0, num_keypoints, 3, dtype=maps.dtype),
                ember.zeros(0, num_keypoints, dtype=maps.dtype))
    return ember.stack(keypoints), ember.stack(scores)


def keypointrcnn_inference(x: Tensor, boxes: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """Per image: the keypoints and scores of its detections' heatmaps (``x`` holds every
    image's, in order).

    Example:
        >>> boxes = ember.tensor([[0.0, 0.0, 4.0, 4.0], [2.0, 2.0, 6.0, 6.0]])
        >>> points, scores = keypointrcnn_inference(ember.zeros(2, 3, 4, 4), [boxes])
        >>> points[0].shape, scores[0].shape
        (ember.Size([2, 3, 3]), ember.Size([2, 3]))
    """
    keypoints, scores = [], []
    for maps, rois in zip(x.split([len(b) for b in boxes], 0), boxes):
        points, point_scores = heatmaps_to_keypoints(maps, rois)
        keypoints.append(points)
        scores.append(point_scores)
    return keypoints, scores


class RoIHeads(nn.Module):
    """Box branch: ``box_roi_pool`` → ``box_head`` → ``box_predictor`` (class logits and
    per-class deltas coded with ``bbox_reg_weights``, default ``(10, 10, 5, 5)``); detections
    are the class scores above ``score_thresh`` after per-class NMS at ``nms_thresh``, at most
    ``detections_per_img``. The optional mask branch (``mask_roi_pool``, ``mask_head``,
    ``mask_predictor``) adds ``"masks"`` / ``loss_mask``, the keypoint branch
    (``keypoint_roi_pool``, ``keypoint_head``, ``keypoint_predictor``) ``"keypoints"`` and
    ``"keypoints_scores"`` / ``loss_keypoint``. Training samples ``batch_size_per_image``
    proposals (``positive_fraction`` of them objects) per image, the ground-truth boxes among
    the proposals.
    """

    def __init__(self, box_roi_pool: nn.Module, box_head: nn.Module, box_predictor: nn.Module,
                 fg_iou_thresh: float, bg_iou_thresh: float, batch_size_per_image: int,
                 positive_fraction: float,
                 bbox_reg_weights: tuple[float, float, float, float] | None,
                 score_thresh: float, nms_thresh: float, detections_per_img: int,
                 mask_roi_pool: nn.Module | None = None, mask_head: nn.Module | None = None,
                 mask_predictor: nn.Module | None = None,
                 keypoint_roi_pool: nn.Module | None = None,
                 keypoint_head: nn.Module | None = None,
                 keypoint_predictor: nn.Module | None = None) -> None:
        super().__init__()
        self.box_similarity = box_iou
        self.proposal_matcher = Matcher(fg_iou_thresh, bg_iou_thresh,
                                        allow_low_quality_matches=False)
        self.fg_bg_sampler = BalancedPositiveNegativeSampler(batch_size_per_image,
                                                             positive_fraction)
        self.box_coder = BoxCoder(bbox_reg_weights or (10.0, 10.0, 5.0, 5.0))
        self.box_roi_pool, self.box_head, self.box_predictor = (box_roi_pool, box_head,
                                                                box_predictor)
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh
        self.detections_per_img = detections_per_img
        self.mask_roi_pool, self.mask_head = mask_roi_pool, mask_head
        self.mask_predictor = mask_predictor
        self.keypoint_roi_pool, self.keypoint_head = keypoint_roi_pool, keypoint_head
        self.keypoint_predictor = keypoint_predictor

    def has_mask(self) -> bool:
        return None not in (self.mask_roi_pool, self.mask_head, self.mask_predictor)

    def has_keypoint(self) -> bool:
        return None not in (self.keypoint_roi_pool, self.keypoint_head,
                            self.keypoint_predictor)

    def assign_targets_to_proposals(self, proposals: list[Tensor], gt_boxes: list[Tensor],
                                    gt_labels: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """Per image: each proposal's matched ground truth (clamped to 0 when unmatched) and
        its class label (0 background, -1 ignored)."""
        matched_idxs, labels = [], []
        for props, boxes, classes in zip(proposals, gt_boxes, gt_labels):
            if boxes.numel() == 0:
                matched_idxs.append(ember.zeros(len(props), dtype=ember.int64))
                labels.append(ember.zeros(len(props), dtype=ember.int64))
                continue
            matched = self.proposal_matcher(self.box_similarity(boxes, props))
            clamped = matched.clamp(min=0)
            label = classes[clamped].to(ember.int64)
            label = ember.where(matched == Matcher.BELOW_LOW_THRESHOLD, 0, label)
            labels.append(ember.where(matched == Matcher.BETWEEN_THRESHOLDS, -1, label))
            matched_idxs.append(clamped)
        return matched_idxs, labels

    def select_training_samples(self, proposals: list[Tensor],
                                targets: list[dict[str, Tensor]]) -> tuple:
        """The sampled proposals (ground truths added) with their matches, labels and
        regression targets."""
        gt_boxes = [t["boxes"].to(proposals[0].dtype) for t in targets]
        gt_labels = [t["labels"] for t in targets]
        proposals = [ember.cat((p, gt)) for p, gt in zip(proposals, gt_boxes)]
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
        pos_masks, neg_masks = self.fg_bg_sampler(labels)
        matched_boxes = []
        for i, (pos, neg) in enumerate(zip(pos_masks, neg_masks)):
            sampled = ember.where((pos | neg) > 0)[0]
            proposals[i], labels[i] = proposals[i][sampled], labels[i][sampled]
            matched_idxs[i] = matched_idxs[i][sampled]
            boxes = gt_boxes[i] if gt_boxes[i].numel() else ember.zeros(1, 4,
                                                                         dtype=gt_boxes[i].dtype)
            matched_boxes.append(boxes[matched_idxs[i]])
        regression_targets = self.box_coder.encode(matched_boxes, proposals)
        return proposals, matched_idxs, labels, regression_targets

    def postprocess_detections(self, class_logits: Tensor, box_regression: Tensor,
                               proposals: list[Tensor], image_shapes: list[tuple[int, int]]
                               ) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
        num_classes = class_logits.shape[-1]
        counts = [len(p) for p in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals).split(counts, 0)
        pred_scores = F.softmax(class_logits, -1).split(counts, 0)
        all_boxes, all_scores, all_labels = [], [], []
        for boxes, scores, shape in zip(pred_boxes, pred_scores, image_shapes):
            boxes = clip_boxes_to_image(boxes, shape)
            labels = ember.arange(num_classes).reshape(1, -1).expand(scores.shape)
            # every (proposal, object class) pair is a candidate; class 0 is background
            boxes = boxes[:, 1:].reshape(-1, 4)
            scores, labels = scores[:, 1:].reshape(-1), labels[:, 1:].reshape(-1)
            keep = ember.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = remove_small_boxes(boxes, 1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = batched_nms(boxes, scores, labels, self.nms_thresh)[:self.detections_per_img]
            all_boxes.append(boxes[keep])
            all_scores.append(scores[keep])
            all_labels.append(labels[keep])
        return all_boxes, all_scores, all_labels

    def _check_targets(self, targets: list[dict[str, Tensor]] | None) -> None:
        if targets is None:
            raise ArgumentError("RoIHeads: targets should not be None in training")
        for t in targets:
            if not t["boxes"].dtype.is_floating_point:
                raise TypeError(f"target boxes must be of float type, got {t['boxes'].dtype}")
            if t["labels"].dtype != ember.int64:
                raise TypeError(f"target labels must be of int64 type, got {t['labels'].dtype}")
            if self.has_mask() and "masks" not in t:
                raise ArgumentError("RoIHeads: targets need 'masks' to train the mask branch")
            if self.has_keypoint():
                keypoints = t.get("keypoints")
                if keypoints is None:
                    raise ArgumentError("RoIHeads: targets need 'keypoints' ((N, K, 3) float) to "
                                        "train the keypoint branch")
                if not keypoints.dtype.is_floating_point:
                    raise TypeError(f"target keypoints must be of float type, got "
                                    f"{keypoints.dtype}")
                if keypoints.ndim != 3 or keypoints.shape[-1] != 3 or (
                        keypoints.shape[0] != t["boxes"].shape[0]):
                    raise ArgumentError(f"target keypoints must be (N, K, 3) (x, y, visibility) "
                                        f"for the {t['boxes'].shape[0]} boxes, got "
                                        f"{tuple(keypoints.shape)}")

    def forward(self, features: dict[str, Tensor], proposals: list[Tensor],
                image_shapes: list[tuple[int, int]],
                targets: list[dict[str, Tensor]] | None = None
                ) -> tuple[list[dict[str, Tensor]], dict[str, Tensor]]:
        if self.training:
            self._check_targets(targets)
            proposals, matched_idxs, labels, regression_targets = \
                self.select_training_samples(proposals, targets)
        box_features = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(box_features)
        result: list[dict[str, Tensor]] = []
        losses: dict[str, Tensor] = {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels,
                                                          regression_targets)
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        else:
            boxes, scores, classes = self.postprocess_detections(class_logits, box_regression,
                                                                 proposals, image_shapes)
            result = [{"boxes": b, "labels": c, "scores": s}
                      for b, s, c in zip(boxes, scores, classes)]
        if self.training:  # the mask and keypoint branches learn from the positive samples
            positive = [ember.where(lab > 0)[0] for lab in labels]
            branch_proposals = [p[i] for p, i in zip(proposals, positive)]
            pos_matched_idxs = [m[i] for m, i in zip(matched_idxs, positive)]
        else:
            branch_proposals = [r["boxes"] for r in result]
        if self.has_mask():
            mask_logits = self.mask_predictor(self.mask_head(
                self.mask_roi_pool(features, branch_proposals, image_shapes)))
            if self.training:
                losses["loss_mask"] = maskrcnn_loss(
                    mask_logits, branch_proposals, [t["masks"] for t in targets],
                    [t["labels"] for t in targets], pos_matched_idxs)
            else:
                probs = maskrcnn_inference(mask_logits, [r["labels"] for r in result])
                for prob, r in zip(probs, result):
                    r["masks"] = prob
        if self.has_keypoint():
            keypoint_logits = self.keypoint_predictor(self.keypoint_head(
                self.keypoint_roi_pool(features, branch_proposals, image_shapes)))
            if self.training:
                losses["loss_keypoint"] = keypointrcnn_loss(
                    keypoint_logits, branch_proposals, [t["keypoints"] for t in targets],
                    pos_matched_idxs)
            else:
                points, scores = keypointrcnn_inference(keypoint_logits, branch_proposals)
                for point, score, r in zip(points, scores, result):
                    r["keypoints"], r["keypoints_scores"] = point, score
        return result, losses
