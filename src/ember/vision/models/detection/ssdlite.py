"""SSDlite (MobileNetV2 paper, section 6.2; MobileNetV3 paper, section 6.3) under torchvision's
names: :class:`~ember.vision.models.detection.SSD` with depthwise-separable prediction and
extra layers on a MobileNetV3 trunk, and the ``ssdlite320_mobilenet_v3_large`` builder.

Example:
    >>> head = SSDLiteHead([8], [4], 3, nn.BatchNorm2d)
    >>> head([ember.randn(1, 8, 2, 2)])["cls_logits"].shape
    ember.Size([1, 16, 3])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models import mobilenetv3
from ember.vision.models._api import make_builder
from ember.vision.models.detection.anchor_utils import DefaultBoxGenerator
from ember.vision.models.detection.backbone_utils import _freeze_stages, _mobilenet_stages
from ember.vision.models.detection.faster_rcnn import _trainable_layers
from ember.vision.models.detection.ssd import SSD, SSDScoringHead, _ignore_size
from ember.vision.ops.layers import Conv2dNormActivation

__all__ = ["SSDLiteClassificationHead", "SSDLiteFeatureExtractorMobileNet", "SSDLiteHead",
           "SSDLiteRegressionHead", "ssdlite320_mobilenet_v3_large"]

Norm = Callable[..., nn.Module]


def _prediction_block(in_channels: int, out_channels: int, kernel_size: int,
                      norm_layer: Norm) -> nn.Sequential:
    """A depthwise convolution (norm, ReLU6) then a 1×1 projection to ``out_channels``."""
    return nn.Sequential(
        Conv2dNormActivation(in_channels, in_channels, kernel_size=kernel_size,
                             groups=in_channels, norm_layer=norm_layer,
                             activation_layer=nn.ReLU6),
        nn.Conv2d(in_channels, out_channels, 1))


def _extra_block(in_channels: int, out_channels: int, norm_layer: Norm) -> nn.Sequential:
    """1×1 to half the channels, a stride-2 depthwise 3×3, 1×1 to ``out_channels`` (ReLU6)."""
    mid = out_channels // 2
    return nn.Sequential(
        Conv2dNormActivation(in_channels, mid, kernel_size=1, norm_layer=norm_layer,
                             activation_layer=nn.ReLU6),
        Conv2dNormActivation(mid, mid, kernel_size=3, stride=2, groups=mid,
                             norm_layer=norm_layer, activation_layer=nn.ReLU6),
        Conv2dNormActivation(mid, out_channels, kernel_size=1, norm_layer=norm_layer,
                             activation_layer=nn.ReLU6))


def _normal_init(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.normal_(m.weight, mean=0.0, std=0.03)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class SSDLiteClassificationHead(SSDScoringHead):
    """A depthwise-separable prediction block per map to ``num_anchors[i] · num_classes``
    logits.

    Example:
        >>> head = SSDLiteClassificationHead([8], [4], 3, nn.BatchNorm2d)
        >>> head([ember.randn(1, 8, 2, 2)]).shape
        ember.Size([1, 16, 3])
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int,
                 norm_layer: Norm) -> None:
        layers = nn.ModuleList([_prediction_block(c, num_classes * a, 3, norm_layer)
                                for c, a in zip(in_channels, num_anchors)])
        _normal_init(layers)
        super().__init__(layers, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    """A depthwise-separable prediction block per map to ``num_anchors[i] · 4`` deltas.

    Example:
        >>> SSDLiteRegressionHead([8], [4], nn.BatchNorm2d)([ember.randn(1, 8, 2, 2)]).shape
        ember.Size([1, 16, 4])
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int],
                 norm_layer: Norm) -> None:
        layers = nn.ModuleList([_prediction_block(c, 4 * a, 3, norm_layer)
                                for c, a in zip(in_channels, num_anchors)])
        _normal_init(layers)
        super().__init__(layers, 4)


class SSDLiteHead(nn.Module):
    """The SSDlite classification and regression heads over every feature map."""

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int,
                 norm_layer: Norm) -> None:
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(in_channels, num_anchors,
                                                             num_classes, norm_layer)
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        return {"bbox_regression": self.regression_head(x),
                "cls_logits": self.classification_head(x)}


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """Six feature maps from a MobileNet's ``features``: the C4 block's expansion output
    (``features.0``: the trunk up to it), the trunk's end (``features.1``), and four extra
    blocks (512, 256, 256, 128 channels times ``width_mult``, at least ``min_depth``).
    ``out_channels`` lists the maps' channels."""

    def __init__(self, backbone: nn.Sequential, c4_pos: int, norm_layer: Norm,
                 width_mult: float = 1.0, min_depth: int = 16) -> None:
        super().__init__()
        c4 = backbone[c4_pos]
        if c4.use_res_connect:
            raise ArgumentError("backbone[c4_pos].use_res_connect should be False")
        self.features = nn.Sequential(
            nn.Sequential(*backbone[:c4_pos], c4.block[0]),
            nn.Sequential(c4.block[1:], *backbone[c4_pos + 1:]))

        def depth(d: int) -> int:
            return max(min_depth, int(d * width_mult))

        widths = [backbone[-1].out_channels, depth(512), depth(256), depth(256), depth(128)]
        self.extra = nn.ModuleList([_extra_block(cin, cout, norm_layer)
                                    for cin, cout in zip(widths, widths[1:])])
        _normal_init(self.extra)
        self.out_channels = [c4.block[0].out_channels, *widths]

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        outputs = []
        for block in [*self.features, *self.extra]:
            x = block(x)
            outputs.append(x)
        return OrderedDict((str(i), v) for i, v in enumerate(outputs))


def _ssdlite320_mobilenet_v3_large(num_classes: int = 91, weights_backbone: Any = None,
                                   trainable_backbone_layers: int | None = None,
                                   norm_layer: Norm | None = None, **kwargs: Any) -> SSD:
    _ignore_size(kwargs)
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 6)
    norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    # an untrained trunk gets the reduced tail (MobileNetV3 paper, Table 6) and N(0, 0.03²)
    trunk = mobilenetv3.mobilenet_v3_large(norm_layer=norm_layer, reduced_tail=True)
    _normal_init(trunk)
    stages = _mobilenet_stages(trunk.features)
    _freeze_stages(trunk.features, stages, layers)
    backbone = SSDLiteFeatureExtractorMobileNet(trunk.features, stages[-2], norm_layer)
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    defaults = {"score_thresh": 0.001, "nms_thresh": 0.55, "detections_per_img": 300,
                "topk_candidates": 300,
                # inputs rescaled from [0, 1] to [-1, 1], as the trunk was trained
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    head = SSDLiteHead(backbone.out_channels, anchors.num_anchors_per_location(), num_classes,
                       norm_layer)
    return SSD(backbone, anchors, (320, 320), num_classes, head=head,
               **{**defaults, **kwargs})


ssdlite320_mobilenet_v3_large = make_builder(
    "ssdlite320_mobilenet_v3_large", _ssdlite320_mobilenet_v3_large,
    "SSDlite (320×320) with a MobileNetV3-Large backbone", __name__)
