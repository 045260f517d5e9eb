"""Faster R-CNN (Ren et al., 2015) under torchvision's names: ``FasterRCNN``, its box head
and predictor, and the ``fasterrcnn_resnet50_fpn`` (v1 and v2) and MobileNetV3 builders.

Example:
    >>> model = fasterrcnn_mobilenet_v3_large_fpn(num_classes=3, min_size=64, max_size=64,
    ...                                           rpn_post_nms_top_n_test=10)
    >>> out = model.eval()([ember.rand(3, 64, 64)])
    >>> sorted(out[0])
    ['boxes', 'labels', 'scores']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models import mobilenetv3, resnet
from ember.vision.models._api import make_builder
from ember.vision.models.detection._utils import kaiming_init_convs
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.backbone_utils import (
    _mobilenet_extractor,
    _resnet_fpn_extractor,
    _validate_trainable_layers,
)
from ember.vision.models.detection.generalized_rcnn import GeneralizedRCNN
from ember.vision.models.detection.roi_heads import RoIHeads
from ember.vision.models.detection.rpn import RegionProposalNetwork, RPNHead
from ember.vision.models.detection.transform import GeneralizedRCNNTransform
from ember.vision.ops.layers import Conv2dNormActivation
from ember.vision.ops.poolers import MultiScaleRoIAlign

__all__ = ["FastRCNNConvFCHead", "FastRCNNPredictor", "FasterRCNN", "TwoMLPHead",
           "fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_mobilenet_v3_large_fpn",
           "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2"]


class TwoMLPHead(nn.Module):
    """Pooled RoI features flattened through two ReLU linear layers, ``fc6`` and ``fc7``.

    Example:
        >>> TwoMLPHead(4 * 7 * 7, 16)(ember.randn(2, 4, 7, 7)).shape
        ember.Size([2, 16])
    """

    def __init__(self, in_channels: int, representation_size: int) -> None:
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc7(self.fc6(x.flatten(1)).relu()).relu()


class FastRCNNConvFCHead(nn.Sequential):
    """The v2 box head: ``conv_layers`` 3×3 convolutions (each with ``norm_layer`` and ReLU)
    over the pooled ``input_size = (C, H, W)`` features, flattened, then ``fc_layers`` ReLU
    linear layers.

    Example:
        >>> FastRCNNConvFCHead((4, 7, 7), [8, 8], [16])(ember.randn(2, 4, 7, 7)).shape
        ember.Size([2, 16])
    """

    def __init__(self, input_size: tuple[int, int, int], conv_layers: list[int],
                 fc_layers: list[int],
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        channels, height, width = input_size
        blocks: list[nn.Module] = []
        for width_out in conv_layers:
            blocks.append(Conv2dNormActivation(channels, width_out, norm_layer=norm_layer))
            channels = width_out
        blocks.append(nn.Flatten())
        features = channels * height * width
        for width_out in fc_layers:
            blocks += [nn.Linear(features, width_out), nn.ReLU(inplace=True)]
            features = width_out
        super().__init__(*blocks)
        kaiming_init_convs(self)


class FastRCNNPredictor(nn.Module):
    """Class logits (``cls_score``) and per-class box deltas (``bbox_pred``) of each RoI.

    Example:
        >>> scores, deltas = FastRCNNPredictor(16, 3)(ember.randn(2, 16))
        >>> scores.shape, deltas.shape
        (ember.Size([2, 3]), ember.Size([2, 12]))
    """

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if x.ndim == 4 and tuple(x.shape[2:]) != (1, 1):
            raise ArgumentError(f"FastRCNNPredictor: x has the wrong shape, expecting the last "
                                f"two dimensions to be [1,1] instead of {list(x.shape[2:])}")
        x = x.flatten(1)
        return self.cls_score(x), self.bbox_pred(x)


def _default_anchor_generator() -> AnchorGenerator:
    sizes = ((32,), (64,), (128,), (256,), (512,))
    return AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))


class FasterRCNN(GeneralizedRCNN):
    """torchvision's ``FasterRCNN(backbone, num_classes=None, ...)`` with all its keyword
    options (transform sizes and statistics, RPN and box-head thresholds and sample sizes,
    and replaceable anchor generator, RPN head, RoI pooler, box head and predictor).
    ``backbone`` must have an ``out_channels`` attribute; ``num_classes`` counts the
    background, and is given exactly when ``box_predictor`` is not.
    """

    def __init__(self, backbone: nn.Module, num_classes: int | None = None,
                 min_size: int = 800, max_size: int = 1333,
                 image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 rpn_anchor_generator: AnchorGenerator | None = None,
                 rpn_head: nn.Module | None = None, rpn_pre_nms_top_n_train: int = 2000,
                 rpn_pre_nms_top_n_test: int = 1000, rpn_post_nms_top_n_train: int = 2000,
                 rpn_post_nms_top_n_test: int = 1000, rpn_nms_thresh: float = 0.7,
                 rpn_fg_iou_thresh: float = 0.7, rpn_bg_iou_thresh: float = 0.3,
                 rpn_batch_size_per_image: int = 256, rpn_positive_fraction: float = 0.5,
                 rpn_score_thresh: float = 0.0, box_roi_pool: nn.Module | None = None,
                 box_head: nn.Module | None = None, box_predictor: nn.Module | None = None,
                 box_score_thresh: float = 0.05, box_nms_thresh: float = 0.5,
                 box_detections_per_img: int = 100, box_fg_iou_thresh: float = 0.5,
                 box_bg_iou_thresh: float = 0.5, box_batch_size_per_image: int = 512,
                 box_positive_fraction: float = 0.25,
                 bbox_reg_weights: tuple[float, float, float, float] | None = None,
                 **kwargs: Any) -> None:
        if not hasattr(backbone, "out_channels"):
            raise ArgumentError("backbone should contain an attribute out_channels specifying "
                                "the number of output channels (assumed to be the same for all "
                                "the levels)")
        if rpn_anchor_generator is not None and not isinstance(rpn_anchor_generator,
                                                               AnchorGenerator):
            raise TypeError(f"rpn_anchor_generator should be of type AnchorGenerator or None "
                            f"instead of {type(rpn_anchor_generator).__name__}")
        if box_roi_pool is not None and not isinstance(box_roi_pool, MultiScaleRoIAlign):
            raise TypeError(f"box_roi_pool should be of type MultiScaleRoIAlign or None "
                            f"instead of {type(box_roi_pool).__name__}")
        if num_classes is not None and box_predictor is not None:
            raise ArgumentError("num_classes should be None when box_predictor is specified")
        if num_classes is None and box_predictor is None:
            raise ArgumentError("num_classes should not be None when box_predictor is not "
                                "specified")
        out_channels = backbone.out_channels
        rpn_anchor_generator = rpn_anchor_generator or _default_anchor_generator()
        rpn_head = rpn_head or RPNHead(out_channels,
                                       rpn_anchor_generator.num_anchors_per_location()[0])
        rpn = RegionProposalNetwork(
            rpn_anchor_generator, rpn_head, rpn_fg_iou_thresh, rpn_bg_iou_thresh,
            rpn_batch_size_per_image, rpn_positive_fraction,
            {"training": rpn_pre_nms_top_n_train, "testing": rpn_pre_nms_top_n_test},
            {"training": rpn_post_nms_top_n_train, "testing": rpn_post_nms_top_n_test},
            rpn_nms_thresh, score_thresh=rpn_score_thresh)
        box_roi_pool = box_roi_pool or MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
        if box_head is None:
            resolution = box_roi_pool.output_size[0]
            box_head = TwoMLPHead(out_channels * resolution ** 2, 1024)
        box_predictor = box_predictor or FastRCNNPredictor(1024, num_classes)
        roi_heads = RoIHeads(box_roi_pool, box_head, box_predictor, box_fg_iou_thresh,
                             box_bg_iou_thresh, box_batch_size_per_image, box_positive_fraction,
                             bbox_reg_weights, box_score_thresh, box_nms_thresh,
                             box_detections_per_img)
        transform = GeneralizedRCNNTransform(min_size, max_size,
                                             image_mean or [0.485, 0.456, 0.406],
                                             image_std or [0.229, 0.224, 0.225], **kwargs)
        super().__init__(backbone, rpn, roi_heads, transform)


def _trainable_layers(weights_backbone: Any, trainable_backbone_layers: int | None,
                      max_value: int) -> int:
    """How many backbone stages train: as torchvision's, all of them for an untrained
    backbone (whose norms are then plain batch norms, not frozen ones)."""
    if weights_backbone is not None:  # (make_builder refuses the detector's weights alike)
        raise ArgumentError(f"no pretrained weights are bundled with Ember (got weights_backbone="
                            f"{weights_backbone!r}). Hint: build it with weights_backbone=None and "
                            "load a state dict into model.backbone.body")
    return _validate_trainable_layers(False, trainable_backbone_layers, max_value, max_value)


def _fasterrcnn_resnet50_fpn(num_classes: int = 91, weights_backbone: Any = None,
                             trainable_backbone_layers: int | None = None,
                             **kwargs: Any) -> FasterRCNN:
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    backbone = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers)
    return FasterRCNN(backbone, num_classes=num_classes, **kwargs)


def _v2_parts(weights_backbone: Any, trainable_backbone_layers: int | None
              ) -> tuple[nn.Module, RPNHead, FastRCNNConvFCHead]:
    """The v2 models' backbone (batch-normed FPN), RPN head (two convolutions) and box head
    (four batch-normed convolutions and a linear layer), as torchvision builds them."""
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    backbone = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers,
                                     norm_layer=nn.BatchNorm2d)
    anchors = _default_anchor_generator()
    rpn_head = RPNHead(backbone.out_channels, anchors.num_anchors_per_location()[0],
                       conv_depth=2)
    box_head = FastRCNNConvFCHead((backbone.out_channels, 7, 7), [256, 256, 256, 256], [1024],
                                  norm_layer=nn.BatchNorm2d)
    return backbone, rpn_head, box_head


def _fasterrcnn_resnet50_fpn_v2(num_classes: int = 91, weights_backbone: Any = None,
                                trainable_backbone_layers: int | None = None,
                                **kwargs: Any) -> FasterRCNN:
    backbone, rpn_head, box_head = _v2_parts(weights_backbone, trainable_backbone_layers)
    return FasterRCNN(backbone, num_classes=num_classes, rpn_head=rpn_head, box_head=box_head,
                      **kwargs)


def _fasterrcnn_mobilenet_v3_large_fpn(num_classes: int = 91, weights_backbone: Any = None,
                                       trainable_backbone_layers: int | None = None,
                                       **kwargs: Any) -> FasterRCNN:
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 6)
    backbone = _mobilenet_extractor(mobilenetv3.mobilenet_v3_large(norm_layer=nn.BatchNorm2d),
                                    True, layers)
    sizes = ((32, 64, 128, 256, 512),) * 3
    anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))
    return FasterRCNN(backbone, num_classes, rpn_anchor_generator=anchors, **kwargs)


fasterrcnn_resnet50_fpn = make_builder(
    "fasterrcnn_resnet50_fpn", _fasterrcnn_resnet50_fpn,
    "Faster R-CNN with a ResNet-50-FPN backbone", __name__)
fasterrcnn_resnet50_fpn_v2 = make_builder(
    "fasterrcnn_resnet50_fpn_v2", _fasterrcnn_resnet50_fpn_v2,
    "Faster R-CNN v2 (Li et al., 2021: batch norms in the FPN and the heads, a two-convolution "
    "RPN head, a four-convolution box head) with a ResNet-50-FPN backbone", __name__)
fasterrcnn_mobilenet_v3_large_fpn = make_builder(
    "fasterrcnn_mobilenet_v3_large_fpn", _fasterrcnn_mobilenet_v3_large_fpn,
    "Faster R-CNN with a MobileNetV3-Large-FPN backbone", __name__,
    defaults={"rpn_score_thresh": 0.05})
fasterrcnn_mobilenet_v3_large_320_fpn = make_builder(
    "fasterrcnn_mobilenet_v3_large_320_fpn", _fasterrcnn_mobilenet_v3_large_fpn,
    "Faster R-CNN with a MobileNetV3-Large-FPN backbone for low-resolution images (resized to "
    "320 pixels on the short side)", __name__,
    defaults={"min_size": 320, "max_size": 640, "rpn_pre_nms_top_n_test": 150,
              "rpn_post_nms_top_n_test": 150, "rpn_score_thresh": 0.05})
