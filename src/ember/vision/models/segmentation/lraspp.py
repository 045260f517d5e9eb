"""Lite R-ASPP (Howard et al. 2019) on a dilated MobileNetV3-Large, as torchvision builds it:
the output-stride-16 features, gated by their globally pooled sigmoid, are upsampled to the
output-stride-8 features and both are classified and summed.

Example:
    >>> model = lraspp_mobilenet_v3_large(num_classes=3).eval()
    >>> model(ember.randn(1, 3, 32, 32))["out"].shape
    ember.Size([1, 3, 32, 32])
"""

from __future__ import annotations

from collections import OrderedDict

from ember import Tensor, nn
from ember.nn import functional as F
from ember.vision.models._api import make_builder
from ember.vision.models.segmentation._utils import (
    mobilenet_v3_large_features,
    refuse_backbone_weights,
    voc_classes,
)

__all__ = ["LRASPP", "lraspp_mobilenet_v3_large"]


class LRASPPHead(nn.Module):
    """``cbr(high) · scale(high)`` (1×1 conv, BatchNorm, ReLU, gated by pool → 1×1 conv →
    sigmoid), upsampled to ``low``'s size; ``low_classifier(low) + high_classifier(·)``."""

    def __init__(self, low_channels: int, high_channels: int, num_classes: int,
                 inter_channels: int) -> None:
        super().__init__()
        self.cbr = nn.Sequential(nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                 nn.BatchNorm2d(inter_channels), nn.ReLU(inplace=True))
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1),
                                   nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                   nn.Sigmoid())
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input: dict[str, Tensor]) -> Tensor:
        low, high = input["low"], input["high"]
        x = F.interpolate(self.cbr(high) * self.scale(high), size=tuple(low.shape[-2:]),
                          mode="bilinear", align_corners=False)
        return self.low_classifier(low) + self.high_classifier(x)


class LRASPP(nn.Module):
    """torchvision's ``LRASPP(backbone, low_channels, high_channels, num_classes,
    inter_channels=128)``: ``backbone`` returns ``{"low", "high"}``; the forward returns
    ``OrderedDict(out=...)`` logits at the input resolution."""

    def __init__(self, backbone: nn.Module, low_channels: int, high_channels: int,
                 num_classes: int, inter_channels: int = 128) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input: Tensor) -> OrderedDict[str, Tensor]:
        out = self.classifier(self.backbone(input))
        result: OrderedDict[str, Tensor] = OrderedDict()
        result["out"] = F.interpolate(out, size=tuple(input.shape[-2:]), mode="bilinear",
                                      align_corners=False)
        return result


def _lraspp_mobilenet_v3_large(num_classes: int | None = None, aux_loss: bool | None = None,
                               weights_backbone: object = None,
                               pretrained_backbone: bool | None = None) -> LRASPP:
    if aux_loss:
        raise NotImplementedError("This model does not use auxiliary loss")
    refuse_backbone_weights("lraspp_mobilenet_v3_large", weights_backbone,
                            pretrained_backbone)
    backbone, low_channels, high_channels = mobilenet_v3_large_features("low", "high")
    return LRASPP(backbone, low_channels, high_channels, voc_classes(num_classes))


lraspp_mobilenet_v3_large = make_builder(
    "lraspp_mobilenet_v3_large", _lraspp_mobilenet_v3_large,
    "Lite R-ASPP on a dilated MobileNetV3-Large", __name__)
