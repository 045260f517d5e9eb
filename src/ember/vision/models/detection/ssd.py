"""SSD (Liu et al., 2016) under torchvision's names: a one-stage detector scoring default boxes
on several feature maps with a softmax over the classes (background included), trained with
hard negative mining; its heads, the VGG-16 feature extractor and the ``ssd300_vgg16``
builder.

Example:
    >>> backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8, padding=1))
    >>> backbone.out_channels = [8]
    >>> model = SSD(backbone, DefaultBoxGenerator([[2]]), (64, 64), 3)
    >>> sorted(model.eval()([ember.rand(3, 48, 64)])[0])
    ['boxes', 'labels', 'scores']
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models import vgg
from ember.vision.models._api import make_builder
from ember.vision.models.detection._utils import (
    BoxCoder,
    SSDMatcher,
    best_after_nms,
    match_targets,
    retrieve_out_channels,
)
from ember.vision.models.detection.anchor_utils import DefaultBoxGenerator
from ember.vision.models.detection.backbone_utils import _freeze_stages
from ember.vision.models.detection.faster_rcnn import _trainable_layers
from ember.vision.models.detection.generalized_rcnn import one_stage_outputs
from ember.vision.models.detection.rpn import _flatten
from ember.vision.models.detection.transform import GeneralizedRCNNTransform
from ember.vision.ops.boxes import box_iou, clip_boxes_to_image

__all__ = ["SSD", "SSDClassificationHead", "SSDFeatureExtractorVGG", "SSDHead",
           "SSDRegressionHead", "SSDScoringHead", "hard_negative_mask", "ssd300_vgg16"]


def _xavier_init(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class SSDScoringHead(nn.Module):
    """One module per feature map (``module_list``), each map's ``(N, A·C, H, W)`` output
    flattened to ``(N, HWA, C)`` (``num_columns`` = C), concatenated over the maps."""

    def __init__(self, module_list: nn.ModuleList, num_columns: int) -> None:
        super().__init__()
        self.module_list, self.num_columns = module_list, num_columns

    def forward(self, x: list[Tensor]) -> Tensor:
        if len(x) != len(self.module_list):
            raise ArgumentError(f"{type(self).__name__}: {len(x)} feature maps for "
                                f"{len(self.module_list)} prediction layers")
        return ember.cat([_flatten(module(f), self.num_columns)
                          for module, f in zip(self.module_list, x)], 1)


class SSDClassificationHead(SSDScoringHead):
    """A 3×3 convolution per map to ``num_anchors[i] · num_classes`` logits.

    Example:
        >>> SSDClassificationHead([8, 4], [4, 6], 3)(
        ...     [ember.randn(1, 8, 2, 2), ember.randn(1, 4, 1, 1)]).shape
        ember.Size([1, 22, 3])
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        layers = nn.ModuleList([nn.Conv2d(c, num_classes * a, 3, padding=1)
                                for c, a in zip(in_channels, num_anchors)])
        _xavier_init(layers)
        super().__init__(layers, num_classes)


class SSDRegressionHead(SSDScoringHead):
    """A 3×3 convolution per map to ``num_anchors[i] · 4`` box deltas.

    Example:
        >>> SSDRegressionHead([8], [4])([ember.randn(1, 8, 2, 2)]).shape
        ember.Size([1, 16, 4])
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int]) -> None:
        layers = nn.ModuleList([nn.Conv2d(c, 4 * a, 3, padding=1)
                                for c, a in zip(in_channels, num_anchors)])
        _xavier_init(layers)
        super().__init__(layers, 4)


class SSDHead(nn.Module):
    """The classification and regression heads over every feature map.

    Example:
        >>> out = SSDHead([8], [4], 3)([ember.randn(1, 8, 2, 2)])
        >>> out["cls_logits"].shape, out["bbox_regression"].shape
        (ember.Size([1, 16, 3]), ember.Size([1, 16, 4]))
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        return {"bbox_regression": self.regression_head(x),
                "cls_logits": self.classification_head(x)}


def hard_negative_mask(cls_loss: Tensor, foreground: Tensor, neg_to_pos_ratio: float
                       ) -> Tensor:
    """SSD's hard negative mining: per image (row of the ``(N, A)`` losses), the
    ``neg_to_pos_ratio`` × (its foreground count) anchors of highest loss among the rest.

    Example:
        >>> hard_negative_mask(ember.tensor([[0.1, 0.9, 0.5, 0.7]]),
        ...                    ember.tensor([[True, False, False, False]]), 2.0)
        tensor([[False,  True, False,  True]])
    """
    wanted = neg_to_pos_ratio * foreground.sum(1, keepdim=True)
    negative_loss = ember.where(foreground, -float("inf"), cls_loss)
    order = negative_loss.argsort(1, descending=True)
    rank = order.argsort(1)
    return rank < wanted


class SSD(nn.Module):
    """torchvision's ``SSD(backbone, anchor_generator, size, num_classes, ...)``: images
    resized to ``size`` (width, height); ``backbone`` returns the feature maps (its
    ``out_channels`` attribute lists their channels, else one dry run finds them). In
    training, ``model(images, targets)`` returns ``{"bbox_regression", "classification"}``:
    smooth-L1 of the matched default boxes' deltas, and softmax cross-entropy of the matched
    boxes and of the hardest ``(1 - positive_fraction) / positive_fraction`` times as many
    unmatched ones, both divided by the number matched. In eval, per image and class the
    ``topk_candidates`` best softmax scores above ``score_thresh``, per-class NMS at
    ``nms_thresh``, at most ``detections_per_img``, as ``{"boxes", "scores", "labels"}`` in
    the input's pixels.
    """

    def __init__(self, backbone: nn.Module, anchor_generator: DefaultBoxGenerator,
                 size: tuple[int, int], num_classes: int,
                 image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 head: nn.Module | None = None, score_thresh: float = 0.01,
                 nms_thresh: float = 0.45, detections_per_img: int = 200,
                 iou_thresh: float = 0.5, topk_candidates: int = 400,
                 positive_fraction: float = 0.25, **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(anchor_generator, DefaultBoxGenerator):
            raise TypeError(f"anchor_generator should be of type DefaultBoxGenerator, got "
                            f"{type(anchor_generator).__name__}")
        self.backbone, self.anchor_generator = backbone, anchor_generator
        self.box_coder = BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            out_channels = (backbone.out_channels if hasattr(backbone, "out_channels")
                            else retrieve_out_channels(backbone, size))
            if isinstance(out_channels, int):  # one feature map, as other detectors' backbones
                out_channels = [out_channels]
            if not isinstance(out_channels, (list, tuple)):
                raise ArgumentError(f"Backbone should have out_channels either int or List[int], "
                                    f"got {type(out_channels).__name__}")
            if len(out_channels) != len(anchor_generator.aspect_ratios):
                raise ArgumentError(f"The length of the output channels from the backbone "
                                    f"({len(out_channels)}) do not match the length of the anchor "
                                    f"generator aspect ratios "
                                    f"({len(anchor_generator.aspect_ratios)})")
            head = SSDHead(out_channels, anchor_generator.num_anchors_per_location(),
                           num_classes)
        self.head = head
        self.proposal_matcher = SSDMatcher(iou_thresh)
        self.transform = GeneralizedRCNNTransform(
            min(size), max(size), image_mean or [0.485, 0.456, 0.406],
            image_std or [0.229, 0.224, 0.225], size_divisible=1, fixed_size=size, **kwargs)
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh
        self.detections_per_img, self.topk_candidates = detections_per_img, topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    def compute_loss(self, targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor],
                     anchors: list[Tensor], matched_idxs: list[Tensor]) -> dict[str, Tensor]:
        box_losses, class_targets, num_foreground = [], [], 0
        for target, deltas, anchors_in_image, matched in zip(
                targets, head_outputs["bbox_regression"], anchors, matched_idxs):
            rows = ember.where(matched >= 0)[0]
            gt = matched[rows]
            num_foreground += rows.numel()
            wanted = self.box_coder.encode_single(target["boxes"][gt], anchors_in_image[rows])
            box_losses.append(F.smooth_l1_loss(deltas[rows], wanted, reduction="sum"))
            classes = ember.zeros(len(matched), dtype=target["labels"].dtype)
            classes[rows] = target["labels"][gt]
            class_targets.append(classes)
        class_targets = ember.stack(class_targets)
        logits = head_outputs["cls_logits"]
        cls_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   class_targets.reshape(-1),
                                   reduction="none").reshape(class_targets.shape)
        foreground = class_targets > 0
        background = hard_negative_mask(cls_loss, foreground, self.neg_to_pos_ratio)
        total = max(1, num_foreground)
        return {"bbox_regression": ember.stack(box_losses).sum() / total,
                "classification": (cls_loss[foreground].sum() + cls_loss[background].sum())
                / total}

    def postprocess_detections(self, head_outputs: dict[str, Tensor], anchors: list[Tensor],
                               image_shapes: list[tuple[int, int]]) -> list[dict[str, Tensor]]:
        probabilities = F.softmax(head_outputs["cls_logits"], dim=-1)
        detections = []
        for deltas, scores, anchors_in_image, shape in zip(
                head_outputs["bbox_regression"], probabilities, anchors, image_shapes):
            boxes = clip_boxes_to_image(self.box_coder.decode_single(deltas, anchors_in_image),
                                        shape)
            kept_boxes, kept_scores, kept_labels = [], [], []
            for label in range(1, scores.shape[-1]):
                score = scores[:, label]
                rows = ember.where(score > self.score_thresh)[0]
                best, order = score[rows].topk(min(self.topk_candidates, rows.numel()))
                kept_boxes.append(boxes[rows[order]])
                kept_scores.append(best)
                kept_labels.append(ember.full((len(best),), label, dtype=ember.int64))
            detections.append(best_after_nms(kept_boxes, kept_scores, kept_labels,
                                             self.nms_thresh, self.detections_per_img))
        return detections

    def forward(self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
                ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        images, targets, original_sizes, _, head_outputs, anchors = one_stage_outputs(
            self, images, targets)
        if self.training:
            matched_idxs = match_targets(anchors, targets, lambda boxes, anchors_in_image:
                                         self.proposal_matcher(box_iou(boxes, anchors_in_image)))
            return self.compute_loss(targets, head_outputs, anchors, matched_idxs)
        detections = self.postprocess_detections(head_outputs, anchors, images.image_sizes)
        return self.transform.postprocess(detections, images.image_sizes, original_sizes)


class SSDFeatureExtractorVGG(nn.Module):
    """SSD300's (or with ``highres`` SSD512's) feature maps from VGG-16's ``features``: conv4_3
    L2-normalized and scaled by a learned per-channel ``scale_weight`` (starting at 20), then
    conv5 with the dilated fc6/fc7 convolutions, then four (five) extra blocks each halving
    the map. ``out_channels`` lists the maps' channels."""

    def __init__(self, backbone: nn.Sequential, highres: bool) -> None:
        super().__init__()
        pools = [i for i, layer in enumerate(backbone) if isinstance(layer, nn.MaxPool2d)]
        if len(pools) != 5:
            raise ArgumentError(f"SSDFeatureExtractorVGG: expected VGG features with 5 max-pools, "
                                f"got {len(pools)}")
        pool3, pool4 = pools[2], pools[3]
        backbone[pool3].ceil_mode = True  # 75 → 38, as the paper's 38×38 conv4_3 map
        self.features = nn.Sequential(*backbone[:pool4])
        self.scale_weight = nn.Parameter(ember.ones(512) * 20)

        def block(cin: int, mid: int, cout: int, **conv: Any) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(cin, mid, 1), nn.ReLU(inplace=True),
                                 nn.Conv2d(mid, cout, **conv), nn.ReLU(inplace=True))

        extra = nn.ModuleList([
            block(1024, 256, 512, kernel_size=3, padding=1, stride=2),
            block(512, 128, 256, kernel_size=3, padding=1, stride=2),
            block(256, 128, 256, kernel_size=3),
            block(256, 128, 256, kernel_size=3)])
        if highres:
            extra.append(block(256, 128, 256, kernel_size=4))
        _xavier_init(extra)
        fc = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=False),
                           nn.Conv2d(512, 1024, kernel_size=3, padding=6, dilation=6),
                           nn.ReLU(inplace=True), nn.Conv2d(1024, 1024, kernel_size=1),
                           nn.ReLU(inplace=True))
        _xavier_init(fc)
        # conv5 (pool4 up to, not including, pool5) then fc6/fc7 make the second map
        extra.insert(0, nn.Sequential(*backbone[pool4:-1], fc))
        self.extra = extra
        self.out_channels = [512, 1024, 512, 256, 256, 256] + ([256] if highres else [])

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        x = self.features(x)
        outputs = [self.scale_weight.reshape(1, -1, 1, 1) * F.normalize(x)]
        for block in self.extra:
            x = block(x)
            outputs.append(x)
        return OrderedDict((str(i), v) for i, v in enumerate(outputs))


def _vgg_extractor(backbone: vgg.VGG, highres: bool, trainable_layers: int
                   ) -> SSDFeatureExtractorVGG:
    features = backbone.features
    # the stages start at the stem and after each max-pool but the last
    stages = [0] + [i for i, b in enumerate(features) if isinstance(b, nn.MaxPool2d)][:-1]
    _freeze_stages(features, stages, trainable_layers)
    return SSDFeatureExtractorVGG(features, highres)


def _ignore_size(kwargs: dict[str, Any]) -> None:
    """The SSD builders fix the input size: a ``size`` keyword warns and is dropped."""
    if kwargs.pop("size", None) is not None:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.",
                      stacklevel=4)


def _ssd300_vgg16(num_classes: int = 91, weights_backbone: Any = None,
                  trainable_backbone_layers: int | None = None, **kwargs: Any) -> SSD:
    _ignore_size(kwargs)
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    backbone = _vgg_extractor(vgg.vgg16(), False, layers)
    anchors = DefaultBoxGenerator([[2], [2, 3], [2, 3], [2, 3], [2], [2]],
                                  scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05],
                                  steps=[8, 16, 32, 64, 100, 300])
    # the backbone's ImageNet statistics: mean in [0, 1] units, inputs scaled to [0, 255]
    defaults = {"image_mean": [0.48235, 0.45882, 0.40784], "image_std": [1.0 / 255.0] * 3}
    return SSD(backbone, anchors, (300, 300), num_classes, **{**defaults, **kwargs})


ssd300_vgg16 = make_builder("ssd300_vgg16", _ssd300_vgg16,
                            "SSD300 with a VGG-16 backbone", __name__)
