"""FCOS (Tian et al., 2019) under torchvision's names: an anchor-free one-stage detector. Each
feature-map position inside a ground-truth box near its centre, at the level suited to the
box's size, predicts the class (focal loss), the distances to the box's sides (GIoU loss)
and its centerness (binary cross-entropy); the ``fcos_resnet50_fpn`` builder.

Example:
    >>> backbone = nn.Sequential(nn.Conv2d(3, 32, 3, stride=4, padding=1))
    >>> backbone.out_channels = 32
    >>> anchors = AnchorGenerator(((16,),), ((1.0,),))
    >>> head = FCOSHead(32, 1, 3, num_convs=1)
    >>> model = FCOS(backbone, 3, min_size=64, max_size=64, anchor_generator=anchors, head=head)
    >>> sorted(model.eval()([ember.rand(3, 64, 64)])[0])
    ['boxes', 'labels', 'scores']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models._api import make_builder
from ember.vision.models.detection._dense import DenseDetector
from ember.vision.models.detection._utils import (
    BoxLinearCoder,
    anchors_per_level,
    match_targets,
    top_candidates,
)
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.generalized_rcnn import FPN_LEGACY_KEYS
from ember.vision.models.detection.retinanet import _resnet50_fpn_p3_p7
from ember.vision.models.detection.rpn import _flatten
from ember.vision.ops.losses import generalized_box_iou_loss, sigmoid_focal_loss

__all__ = ["FCOS", "FCOSClassificationHead", "FCOSHead", "FCOSRegressionHead",
           "fcos_resnet50_fpn"]


def _tower(in_channels: int, num_convs: int,
           norm_layer: Callable[..., nn.Module] | None) -> nn.Sequential:
    """``num_convs`` × (3×3 convolution, ``norm_layer`` (default a 32-group GroupNorm), ReLU),
    flat as torchvision's."""
    norm_layer = norm_layer or partial(nn.GroupNorm, 32)
    layers = []
    for _ in range(num_convs):
        layers += [nn.Conv2d(in_channels, in_channels, 3, stride=1, padding=1),
                   norm_layer(in_channels), nn.ReLU()]
    return nn.Sequential(*layers)


def _normal_init(*modules: nn.Module) -> None:
    for module in modules:
        for m in module.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, std=0.01)
                nn.init.zeros_(m.bias)


class FCOSClassificationHead(nn.Module):
    """Per position (and anchor) and class, a logit, ``(N, ΣHWA, num_classes)``; the bias
    starts where the sigmoid gives ``prior_probability``; ``norm_layer`` (default a 32-group
    GroupNorm) follows each tower convolution.

    Example:
        >>> FCOSClassificationHead(32, 1, 3, num_convs=1)([ember.randn(1, 32, 4, 4)]).shape
        ember.Size([1, 16, 3])
    """

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int,
                 num_convs: int = 4, prior_probability: float = 0.01,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.num_classes, self.num_anchors = num_classes, num_anchors
        self.conv = _tower(in_channels, num_convs, norm_layer)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, 3, 1, 1)
        _normal_init(self.conv, self.cls_logits)
        nn.init.constant_(self.cls_logits.bias,
                          -math.log((1 - prior_probability) / prior_probability))

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat([_flatten(self.cls_logits(self.conv(f)), self.num_classes)
                          for f in x], 1)


class FCOSRegressionHead(nn.Module):
    """Per position (and anchor): four non-negative side distances (in units of the anchor's
    size), ``(N, ΣHWA, 4)``, and a centerness logit, ``(N, ΣHWA, 1)``.

    Example:
        >>> deltas, ctrness = FCOSRegressionHead(32, 1, num_convs=1)([ember.randn(1, 32, 4, 4)])
        >>> deltas.shape, ctrness.shape
        (ember.Size([1, 16, 4]), ember.Size([1, 16, 1]))
    """

    def __init__(self, in_channels: int, num_anchors: int, num_convs: int = 4,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.conv = _tower(in_channels, num_convs, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, 3, 1, 1)
        self.bbox_ctrness = nn.Conv2d(in_channels, num_anchors, 3, 1, 1)
        _normal_init(self.conv, self.bbox_reg, self.bbox_ctrness)

    def forward(self, x: list[Tensor]) -> tuple[Tensor, Tensor]:
        deltas, ctrness = [], []
        for features in x:
            shared = self.conv(features)
            deltas.append(_flatten(F.relu(self.bbox_reg(shared)), 4))
            ctrness.append(_flatten(self.bbox_ctrness(shared), 1))
        return ember.cat(deltas, 1), ember.cat(ctrness, 1)


def centerness(distances: Tensor) -> Tensor:
    """FCOS's centerness of ``(..., 4)`` side distances ``(l, t, r, b)``:
    ``sqrt(min(l, r)/max(l, r) · min(t, b)/max(t, b))``, 1 at a box's centre.

    Example:
        >>> centerness(ember.tensor([[1.0, 2.0, 1.0, 2.0], [1.0, 1.0, 3.0, 1.0]]))
        tensor([1.0000, 0.5774])
    """
    left_right, top_bottom = distances[..., 0::2], distances[..., 1::2]
    return ((left_right.amin(-1) / left_right.amax(-1))
            * (top_bottom.amin(-1) / top_bottom.amax(-1))).sqrt()


class FCOSHead(nn.Module):
    """The classification and regression heads, run on every level, and FCOS's losses.

    Example:
        >>> out = FCOSHead(32, 1, 3, num_convs=1)([ember.randn(1, 32, 4, 4)])
        >>> [tuple(out[k].shape) for k in ("cls_logits", "bbox_regression", "bbox_ctrness")]
        [(1, 16, 3), (1, 16, 4), (1, 16, 1)]
    """

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int,
                 num_convs: int | None = 4) -> None:
        super().__init__()
        self.box_coder = BoxLinearCoder(normalize_by_size=True)
        self.classification_head = FCOSClassificationHead(in_channels, num_anchors,
                                                          num_classes, num_convs)
        self.regression_head = FCOSRegressionHead(in_channels, num_anchors, num_convs)

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     anchors: list[Tensor], matched_idxs: list[Tensor]) -> dict[str, Tensor]:
        """Over all images, each divided by the number of matched positions: the focal loss
        of every position's classes, and on the matched ones the GIoU loss of the decoded
        boxes and the cross-entropy of the centerness logit against the true centerness."""
        classes, boxes = [], []
        for target, matched in zip(targets, matched_idxs):
            labels, gt_boxes = target["labels"], target["boxes"]
            if len(labels) == 0:  # no objects: every position is background
                labels = ember.zeros(1, dtype=labels.dtype)
                gt_boxes = ember.zeros(1, 4, dtype=gt_boxes.dtype)
            picked = matched.clamp(min=0)
            classes.append(ember.where(matched < 0, -1, labels[picked]))
            boxes.append(gt_boxes[picked])
        classes, boxes, anchors = ember.stack(classes), ember.stack(boxes), ember.stack(anchors)
        foreground = classes >= 0
        num_foreground = max(1, int(foreground.sum()))
        logits = head_outputs["cls_logits"]
        one_hot = ember.zeros(logits.shape, dtype=logits.dtype)
        images, positions = ember.where(foreground)
        one_hot[images, positions, classes[images, positions]] = 1.0
        loss_cls = sigmoid_focal_loss(logits, one_hot, reduction="sum")
        predicted = self.box_coder.decode(head_outputs["bbox_regression"], anchors)
        loss_box = generalized_box_iou_loss(predicted[images, positions],
                                            boxes[images, positions], reduction="sum")
        wanted = centerness(self.box_coder.encode(anchors[images, positions],
                                                  boxes[images, positions]))
        ctrness = head_outputs["bbox_ctrness"][..., 0][images, positions]
        loss_ctr = F.binary_cross_entropy_with_logits(ctrness, wanted, reduction="sum")
        return {"classification": loss_cls / num_foreground,
                "bbox_regression": loss_box / num_foreground,
                "bbox_ctrness": loss_ctr / num_foreground}

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        deltas, ctrness = self.regression_head(x)
        return {"cls_logits": self.classification_head(x), "bbox_regression": deltas,
                "bbox_ctrness": ctrness}


def match_positions(anchors: Tensor, gt_boxes: Tensor, num_anchors_per_level: list[int],
                    center_sampling_radius: float) -> Tensor:
    """FCOS's assignment: each anchor's ground truth (index into ``gt_boxes``), or -1. An
    anchor's centre must lie inside the box and within ``center_sampling_radius`` anchor
    sizes of the box's centre (in both axes), and its largest side distance must fall in its
    level's range (4 to 8 anchor sizes; no lower bound on the first level, no upper on the
    last); among several boxes the smallest wins.

    Example:
        >>> anchors = ember.tensor([[0.0, 0.0, 8.0, 8.0], [8.0, 8.0, 16.0, 16.0]])
        >>> match_positions(anchors, ember.tensor([[0.0, 0.0, 10.0, 10.0]]), [1, 1], 1.5)
        tensor([ 0, -1])
    """
    gt_centres = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
    centres = (anchors[:, :2] + anchors[:, 2:]) / 2
    sizes = anchors[:, 2] - anchors[:, 0]
    near = ((centres[:, None, :] - gt_centres[None, :, :]).abs().amax(2)
            < center_sampling_radius * sizes[:, None])
    x, y = centres[:, 0:1], centres[:, 1:2]
    distances = ember.stack((x - gt_boxes[None, :, 0], y - gt_boxes[None, :, 1],
                             gt_boxes[None, :, 2] - x, gt_boxes[None, :, 3] - y), dim=2)
    inside = distances.amin(2) > 0
    lower, upper = sizes * 4, sizes * 8
    first, last = num_anchors_per_level[0], num_anchors_per_level[-1]
    lower = ember.cat((ember.zeros(first, dtype=lower.dtype), lower[first:]))
    upper = ember.cat((upper[:len(upper) - last], ember.full((last,), math.inf,
                                                             dtype=upper.dtype)))
    reach = distances.amax(2)
    in_range = (reach > lower[:, None]) & (reach < upper[:, None])
    areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
    # the smallest box wins: rank the matches by a large number less the area
    ranked = (near & inside & in_range).to(areas.dtype) * (1e8 - areas[None, :])
    best, matched = ranked.max(dim=1)
    return ember.where(best < 1e-5, -1, matched)


def _default_anchor_generator() -> AnchorGenerator:
    # one square anchor per position, 8 to 128 pixels over the five levels
    return AnchorGenerator(((8,), (16,), (32,), (64,), (128,)), ((1.0,),) * 5)


class FCOS(DenseDetector):
    """torchvision's ``FCOS(backbone, num_classes, ...)``: in training,
    ``model(images, targets)`` returns ``{"classification", "bbox_regression",
    "bbox_ctrness"}`` losses; in eval, per image the ``topk_candidates`` best (position, class)
    scores (``sqrt(sigmoid(class) · sigmoid(centerness))``) above ``score_thresh`` of each
    level, decoded, then per-class NMS at ``nms_thresh``, at most ``detections_per_img``, as
    ``{"boxes", "scores", "labels"}`` in the input's pixels. The default anchor generator puts
    one square anchor (8 to 128 pixels) at each position of five levels.
    """

    # its COCO weights predate torchvision 0.13's Conv2dNormActivation in the pyramid
    LEGACY_KEYS = FPN_LEGACY_KEYS

    def __init__(self, backbone: nn.Module, num_classes: int, min_size: int = 800,
                 max_size: int = 1333, image_mean: list[float] | None = None,
                 image_std: list[float] | None = None,
                 anchor_generator: AnchorGenerator | None = None, head: nn.Module | None = None,
                 center_sampling_radius: float = 1.5, score_thresh: float = 0.2,
                 nms_thresh: float = 0.6, detections_per_img: int = 100,
                 topk_candidates: int = 1000, **kwargs: Any) -> None:
        super().__init__(backbone, anchor_generator, _default_anchor_generator, min_size,
                         max_size, image_mean, image_std, score_thresh, nms_thresh,
                         detections_per_img, topk_candidates, **kwargs)
        anchors_per_position = self.anchor_generator.num_anchors_per_location()[0]
        if anchors_per_position != 1:  # the assignment treats each anchor as a point
            raise ArgumentError(f"anchor_generator.num_anchors_per_location()[0] should be 1 "
                                f"instead of {anchors_per_position}")
        self.head = head or FCOSHead(backbone.out_channels, anchors_per_position, num_classes)
        self.box_coder = BoxLinearCoder(normalize_by_size=True)
        self.center_sampling_radius = center_sampling_radius

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     anchors: list[Tensor], num_anchors_per_level: list[int]
                     ) -> dict[str, Tensor]:
        matched_idxs = match_targets(anchors, targets, lambda boxes, anchors_in_image:
                                     match_positions(anchors_in_image, boxes,
                                                     num_anchors_per_level,
                                                     self.center_sampling_radius))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def training_losses(self, targets: list[dict[str, Tensor]],
                        head_outputs: dict[str, Tensor], anchors: list[Tensor],
                        features: list[Tensor]) -> dict[str, Tensor]:
        return self.compute_loss(targets, head_outputs, anchors,
                                 anchors_per_level(len(anchors[0]), features))

    def level_candidates(self, outputs: dict[str, Tensor], anchors: Tensor
                         ) -> tuple[Tensor, Tensor, Tensor]:
        joint = (outputs["cls_logits"].sigmoid() * outputs["bbox_ctrness"].sigmoid()).sqrt()
        scores, rows, labels = top_candidates(joint, self.score_thresh, self.topk_candidates)
        boxes = self.box_coder.decode(outputs["bbox_regression"][rows], anchors[rows])
        return boxes, scores, labels


def _fcos_resnet50_fpn(num_classes: int = 91, weights_backbone: Any = None,
                       trainable_backbone_layers: int | None = None, **kwargs: Any) -> FCOS:
    backbone = _resnet50_fpn_p3_p7(weights_backbone, trainable_backbone_layers)
    return FCOS(backbone, num_classes, **kwargs)


fcos_resnet50_fpn = make_builder("fcos_resnet50_fpn", _fcos_resnet50_fpn,
                                 "FCOS with a ResNet-50-FPN backbone", __name__)
