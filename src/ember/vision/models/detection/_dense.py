"""The skeleton RetinaNet and FCOS share (torchvision writes it twice): dense heads over a
feature pyramid with one anchor grid, losses in training, and in eval each level's best
candidates decoded, clipped and merged by per-class NMS, in the input's pixels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models._utils import LegacyKeys
from ember.vision.models.detection._utils import best_after_nms, split_by_level
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.generalized_rcnn import one_stage_outputs
from ember.vision.models.detection.transform import GeneralizedRCNNTransform
from ember.vision.ops.boxes import clip_boxes_to_image


class DenseDetector(LegacyKeys, nn.Module):
    """Sets ``backbone``, ``anchor_generator`` (or ``default_anchors()``), ``transform`` and
    the eval thresholds. A subclass adds its ``head`` and defines
    ``level_candidates(outputs, anchors)`` (one image's one level: head outputs by key and
    its anchors, to candidate boxes, scores and labels) and
    ``training_losses(targets, head_outputs, anchors, features)``."""

    def __init__(self, backbone: nn.Module, anchor_generator: AnchorGenerator | None,
                 default_anchors: Callable[[], AnchorGenerator], min_size: int,
                 max_size: int, image_mean: list[float] | None, image_std: list[float] | None,
                 score_thresh: float, nms_thresh: float, detections_per_img: int,
                 topk_candidates: int, **kwargs: Any) -> None:
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ArgumentError("backbone should contain an attribute out_channels specifying "
                                "the number of output channels (assumed to be the same for all "
                                "the levels)")
        if anchor_generator is not None and not isinstance(anchor_generator, AnchorGenerator):
            raise TypeError(f"anchor_generator should be of type AnchorGenerator or None, "
                            f"got {type(anchor_generator).__name__}")
        self.backbone = backbone
        self.anchor_generator = anchor_generator or default_anchors()
        self.transform = GeneralizedRCNNTransform(min_size, max_size,
                                                  image_mean or [0.485, 0.456, 0.406],
                                                  image_std or [0.229, 0.224, 0.225], **kwargs)
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh
        self.detections_per_img, self.topk_candidates = detections_per_img, topk_candidates

    def postprocess_detections(self, head_outputs: dict[str, list[Tensor]],
                               anchors: list[list[Tensor]],
                               image_shapes: list[tuple[int, int]]) -> list[dict[str, Tensor]]:
        """Detections from per-level head outputs and anchors (lists over the levels)."""
        detections = []
        for i, shape in enumerate(image_shapes):
            boxes, scores, labels = [], [], []
            for level, level_anchors in enumerate(anchors[i]):
                outputs = {k: v[level][i] for k, v in head_outputs.items()}
                level_boxes, level_scores, level_labels = self.level_candidates(outputs,
                                                                                level_anchors)
                boxes.append(clip_boxes_to_image(level_boxes, shape))
                scores.append(level_scores)
                labels.append(level_labels)
            detections.append(best_after_nms(boxes, scores, labels, self.nms_thresh,
                                             self.detections_per_img))
        return detections

    def forward(self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
                ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        images, targets, original_sizes, features, head_outputs, anchors = one_stage_outputs(
            self, images, targets)
        if self.training:
            return self.training_losses(targets, head_outputs, anchors, features)
        split, level_anchors = split_by_level(head_outputs, anchors, features)
        detections = self.postprocess_detections(split, level_anchors, images.image_sizes)
        return self.transform.postprocess(detections, images.image_sizes, original_sizes)
