"""RetinaNet (Lin et al., 2017) under torchvision's names: a one-stage detector whose heads
score every anchor for every class (trained with the sigmoid focal loss) and regress its box,
and the ``retinanet_resnet50_fpn`` builder.

Example:
    >>> backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1))
    >>> backbone.out_channels = 8
    >>> anchors = AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),))
    >>> model = RetinaNet(backbone, 3, min_size=64, max_size=64, anchor_generator=anchors)
    >>> sorted(model.eval()([ember.rand(3, 64, 64)])[0])
    ['boxes', 'labels', 'scores']
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models import resnet
from ember.vision.models._api import make_builder
from ember.vision.models.detection._dense import DenseDetector
from ember.vision.models.detection._utils import (
    BoxCoder,
    Matcher,
    match_targets,
    top_candidates,
)
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.backbone_utils import _resnet_fpn_extractor
from ember.vision.models.detection.faster_rcnn import _trainable_layers
from ember.vision.models.detection.generalized_rcnn import FPN_LEGACY_KEYS
from ember.vision.models.detection.rpn import _flatten
from ember.vision.ops.boxes import box_iou
from ember.vision.ops.feature_pyramid_network import LastLevelP6P7
from ember.vision.ops.layers import Conv2dNormActivation
from ember.vision.ops.losses import (
    complete_box_iou_loss,
    distance_box_iou_loss,
    generalized_box_iou_loss,
    sigmoid_focal_loss,
)

__all__ = ["RetinaNet", "RetinaNetClassificationHead", "RetinaNetHead",
           "RetinaNetRegressionHead", "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2"]


def _tower(in_channels: int, norm_layer: Callable[..., nn.Module] | None) -> nn.Sequential:
    """Four 3×3 convolutions with ReLU, weights drawn from N(0, 0.01²), biases zero."""
    tower = nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, norm_layer=norm_layer)
                            for _ in range(4)])
    for m in tower.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.normal_(m.weight, std=0.01)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
    return tower


class RetinaNetClassificationHead(nn.Module):
    """Per anchor and class, a logit (``(N, ΣHWA, num_classes)`` over the levels); its bias
    starts where the sigmoid gives ``prior_probability``.

    Example:
        >>> RetinaNetClassificationHead(8, 9, 3)([ember.randn(1, 8, 4, 4)]).shape
        ember.Size([1, 144, 3])
    """

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int,
                 prior_probability: float = 0.01,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.conv = _tower(in_channels, norm_layer)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, 3, 1, 1)
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(self.cls_logits.bias,
                          -math.log((1 - prior_probability) / prior_probability))
        self.num_classes, self.num_anchors = num_classes, num_anchors

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     matched_idxs: list[Tensor]) -> Tensor:
        """Sigmoid focal loss over the anchors not ignored, per image divided by its number of
        matched anchors, averaged over the images."""
        losses = []
        for target, logits, matched in zip(targets, head_outputs["cls_logits"], matched_idxs):
            foreground = matched >= 0
            rows = ember.where(foreground)[0]
            classes = target["labels"][matched[rows]]
            one_hot = ember.zeros(logits.shape, dtype=logits.dtype)
            one_hot[rows, classes] = 1.0
            valid = ember.where(matched != Matcher.BETWEEN_THRESHOLDS)[0]
            loss = sigmoid_focal_loss(logits[valid], one_hot[valid], reduction="sum")
            losses.append(loss / max(1, int(foreground.sum())))
        return sum(losses) / len(targets)

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat([_flatten(self.cls_logits(self.conv(f)), self.num_classes) for f in x],
                         1)


_BOX_LOSSES = {"giou": generalized_box_iou_loss, "diou": distance_box_iou_loss,
               "ciou": complete_box_iou_loss}


def _box_loss(kind: str, box_coder: BoxCoder, anchors: Tensor, matched_boxes: Tensor,
              deltas: Tensor) -> Tensor:
    """Summed box loss of ``kind`` between predicted ``deltas`` on ``anchors`` and the
    matched ground-truth boxes (torchvision's ``_box_loss``)."""
    if kind in ("l1", "smooth_l1"):
        wanted = box_coder.encode_single(matched_boxes, anchors)
        loss = F.l1_loss if kind == "l1" else F.smooth_l1_loss
        return loss(deltas, wanted, reduction="sum")
    if kind not in _BOX_LOSSES:
        raise ArgumentError(f"RetinaNetRegressionHead: unsupported _loss_type {kind!r}; use one of "
                            f"'l1', 'smooth_l1', {', '.join(map(repr, _BOX_LOSSES))}")
    return _BOX_LOSSES[kind](box_coder.decode_single(deltas, anchors), matched_boxes,
                             reduction="sum")


class RetinaNetRegressionHead(nn.Module):
    """Per anchor, four box deltas (``(N, ΣHWA, 4)`` over the levels), trained with L1 (or
    the loss ``_loss_type`` names, as in torchvision).

    Example:
        >>> RetinaNetRegressionHead(8, 9)([ember.randn(1, 8, 4, 4)]).shape
        ember.Size([1, 144, 4])
    """

    def __init__(self, in_channels: int, num_anchors: int,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.conv = _tower(in_channels, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, 3, 1, 1)
        nn.init.normal_(self.bbox_reg.weight, std=0.01)
        nn.init.zeros_(self.bbox_reg.bias)
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"  # torchvision's switch: the v2 model sets "giou"

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     anchors: list[Tensor], matched_idxs: list[Tensor]) -> Tensor:
        """The box loss of the matched anchors (``_loss_type``: ``"l1"`` or ``"smooth_l1"`` of
        the deltas, or ``"giou"``, ``"diou"``, ``"ciou"`` of the decoded boxes), per image
        divided by their number, averaged."""
        losses = []
        for target, deltas, anchors_in_image, matched in zip(
                targets, head_outputs["bbox_regression"], anchors, matched_idxs):
            rows = ember.where(matched >= 0)[0]
            loss = _box_loss(self._loss_type, self.box_coder, anchors_in_image[rows],
                             target["boxes"][matched[rows]], deltas[rows])
            losses.append(loss / max(1, rows.numel()))
        return sum(losses) / max(1, len(targets))

    def forward(self, x: list[Tensor]) -> Tensor:
        return ember.cat([_flatten(self.bbox_reg(self.conv(f)), 4) for f in x], 1)


class RetinaNetHead(nn.Module):
    """The classification and regression heads, run on every level.

    Example:
        >>> out = RetinaNetHead(8, 9, 3)([ember.randn(1, 8, 4, 4)])
        >>> out["cls_logits"].shape, out["bbox_regression"].shape
        (ember.Size([1, 144, 3]), ember.Size([1, 144, 4]))
    """

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(in_channels, num_anchors,
                                                               num_classes,
                                                               norm_layer=norm_layer)
        self.regression_head = RetinaNetRegressionHead(in_channels, num_anchors,
                                                       norm_layer=norm_layer)

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     anchors: list[Tensor], matched_idxs: list[Tensor]) -> dict[str, Tensor]:
        return {"classification": self.classification_head.compute_loss(targets, head_outputs,
                                                                        matched_idxs),
                "bbox_regression": self.regression_head.compute_loss(targets, head_outputs,
                                                                     anchors, matched_idxs)}

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        return {"cls_logits": self.classification_head(x),
                "bbox_regression": self.regression_head(x)}


def _default_anchor_generator() -> AnchorGenerator:
    # three sizes an octave apart in thirds on each level
    sizes = tuple((x, int(x * 2 ** (1 / 3)), int(x * 2 ** (2 / 3)))
                  for x in (32, 64, 128, 256, 512))
    return AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))


class RetinaNet(DenseDetector):
    """torchvision's ``RetinaNet(backbone, num_classes, ...)``: in training,
    ``model(images, targets)`` returns ``{"classification", "bbox_regression"}`` losses; in
    eval, per image the ``topk_candidates`` best (anchor, class) scores above
    ``score_thresh`` of each level, decoded, then per-class NMS at ``nms_thresh``, at most
    ``detections_per_img``, as ``{"boxes", "scores", "labels"}`` in the input's pixels.
    """

    # before torchvision 0.13 the heads' tower convolutions had no Conv2dNormActivation wrapper
    LEGACY_KEYS = (*FPN_LEGACY_KEYS,
                   (re.compile(r"^(head\.(?:classification|regression)_head\.conv\.\d+)\."
                               r"(weight|bias)$"), r"\1.0.\2"))

    def __init__(self, backbone: nn.Module, num_classes: int, min_size: int = 800,
                 max_size: int = 1333, image_mean: list[float] | None = None,
                 image_std: list[float] | None = None,
                 anchor_generator: AnchorGenerator | None = None, head: nn.Module | None = None,
                 proposal_matcher: Matcher | None = None, score_thresh: float = 0.05,
                 nms_thresh: float = 0.5, detections_per_img: int = 300,
                 fg_iou_thresh: float = 0.5, bg_iou_thresh: float = 0.4,
                 topk_candidates: int = 1000, **kwargs: Any) -> None:
        super().__init__(backbone, anchor_generator, _default_anchor_generator, min_size,
                         max_size, image_mean, image_std, score_thresh, nms_thresh,
                         detections_per_img, topk_candidates, **kwargs)
        self.head = head or RetinaNetHead(backbone.out_channels,
                                          self.anchor_generator.num_anchors_per_location()[0],
                                          num_classes)
        self.proposal_matcher = proposal_matcher or Matcher(fg_iou_thresh, bg_iou_thresh,
                                                            allow_low_quality_matches=True)
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     anchors: list[Tensor]) -> dict[str, Tensor]:
        matched_idxs = match_targets(anchors, targets, lambda boxes, anchors_in_image:
                                     self.proposal_matcher(box_iou(boxes, anchors_in_image)))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def training_losses(self, targets: list[dict[str, Tensor]],
                        head_outputs: dict[str, Tensor], anchors: list[Tensor],
                        features: list[Tensor]) -> dict[str, Tensor]:
        return self.compute_loss(targets, head_outputs, anchors)

    def level_candidates(self, outputs: dict[str, Tensor], anchors: Tensor
                         ) -> tuple[Tensor, Tensor, Tensor]:
        scores, rows, labels = top_candidates(outputs["cls_logits"].sigmoid(),
                                              self.score_thresh, self.topk_candidates)
        boxes = self.box_coder.decode_single(outputs["bbox_regression"][rows], anchors[rows])
        return boxes, scores, labels


def _resnet50_fpn_p3_p7(weights_backbone: Any, trainable_backbone_layers: int | None
                        ) -> nn.Module:
    """RetinaNet's and FCOS's backbone: a ResNet-50 pyramid from C3, with P6 and P7 from P5."""
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    return _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers,
                                 returned_layers=[2, 3, 4],
                                 extra_blocks=LastLevelP6P7(256, 256))


def _retinanet_resnet50_fpn(num_classes: int = 91, weights_backbone: Any = None,
                            trainable_backbone_layers: int | None = None,
                            **kwargs: Any) -> RetinaNet:
    backbone = _resnet50_fpn_p3_p7(weights_backbone, trainable_backbone_layers)
    return RetinaNet(backbone, num_classes, **kwargs)


retinanet_resnet50_fpn = make_builder("retinanet_resnet50_fpn", _retinanet_resnet50_fpn,
                                      "RetinaNet with a ResNet-50-FPN backbone", __name__)


def _retinanet_resnet50_fpn_v2(num_classes: int = 91, weights_backbone: Any = None,
                               trainable_backbone_layers: int | None = None,
                               **kwargs: Any) -> RetinaNet:
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    backbone = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers,
                                     returned_layers=[2, 3, 4],
                                     extra_blocks=LastLevelP6P7(2048, 256))
    anchors = _default_anchor_generator()
    head = RetinaNetHead(backbone.out_channels, anchors.num_anchors_per_location()[0],
                         num_classes, norm_layer=partial(nn.GroupNorm, 32))
    head.regression_head._loss_type = "giou"
    return RetinaNet(backbone, num_classes, anchor_generator=anchors, head=head, **kwargs)


retinanet_resnet50_fpn_v2 = make_builder(
    "retinanet_resnet50_fpn_v2", _retinanet_resnet50_fpn_v2,
    "RetinaNet v2 (group-normed heads, GIoU box loss, P6 from C5) with a ResNet-50-FPN "
    "backbone", __name__)
