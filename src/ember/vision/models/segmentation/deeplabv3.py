"""DeepLabV3 (Chen et al. 2017) as torchvision builds it: atrous spatial pyramid pooling (a 1×1
branch, three dilated 3×3 branches and an image-pooling branch, concatenated and projected)
on a dilated ResNet-50/101 or MobileNetV3-Large, with an optional FCN auxiliary head.

Example:
    >>> model = deeplabv3_mobilenet_v3_large(num_classes=3).eval()
    >>> model(ember.randn(1, 3, 32, 32))["out"].shape
    ember.Size([1, 3, 32, 32])
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import ember
from ember import Tensor, nn
from ember.nn import functional as F
from ember.vision.models._api import make_builder
from ember.vision.models.segmentation._utils import (
    _SimpleSegmentationModel,
    mobilenet_v3_large_features,
    refuse_backbone_weights,
    voc_classes,
)
from ember.vision.models.segmentation.fcn import FCNHead, resnet_features

__all__ = ["DeepLabV3", "deeplabv3_mobilenet_v3_large", "deeplabv3_resnet101",
           "deeplabv3_resnet50"]


class DeepLabV3(_SimpleSegmentationModel):
    """torchvision's ``DeepLabV3(backbone, classifier, aux_classifier=None)``: the forward
    returns ``OrderedDict(out=..., aux=...)`` logits at the input resolution."""


class ASPPConv(nn.Sequential):
    """3×3 convolution dilated by ``dilation`` (same size out), BatchNorm, ReLU."""

    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        super().__init__(nn.Conv2d(in_channels, out_channels, 3, padding=dilation,
                                   dilation=dilation, bias=False),
                         nn.BatchNorm2d(out_channels), nn.ReLU())


class ASPPPooling(nn.Sequential):
    """Global average pool, 1×1 conv, BatchNorm, ReLU, upsampled back to the input size."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(in_channels, out_channels, 1,
                                                            bias=False),
                         nn.BatchNorm2d(out_channels), nn.ReLU())

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(super().forward(x), size=tuple(x.shape[-2:]), mode="bilinear",
                             align_corners=False)


class ASPP(nn.Module):
    """Atrous spatial pyramid pooling: ``convs`` (1×1, one :class:`ASPPConv` per atrous rate,
    :class:`ASPPPooling`) side by side, then ``project`` (1×1 conv, BatchNorm, ReLU, dropout
    0.5) back to ``out_channels``.

    Example:
        >>> ASPP(8, [2, 4], out_channels=4)(ember.randn(2, 8, 6, 6)).shape
        ember.Size([2, 4, 6, 6])
    """

    def __init__(self, in_channels: int, atrous_rates: Sequence[int],
                 out_channels: int = 256) -> None:
        super().__init__()
        branches: list[nn.Module] = [nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels),
            nn.ReLU())]
        branches += [ASPPConv(in_channels, out_channels, rate) for rate in atrous_rates]
        branches.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(branches)
        self.project = nn.Sequential(
            nn.Conv2d(len(branches) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU(), nn.Dropout(0.5))

    def forward(self, x: Tensor) -> Tensor:
        return self.project(ember.cat([branch(x) for branch in self.convs], dim=1))


class DeepLabHead(nn.Sequential):
    """ASPP to 256 channels, 3×3 conv, BatchNorm, ReLU, 1×1 conv to ``num_classes``."""

    def __init__(self, in_channels: int, num_classes: int,
                 atrous_rates: Sequence[int] = (12, 24, 36)) -> None:
        super().__init__(ASPP(in_channels, atrous_rates),
                         nn.Conv2d(256, 256, 3, padding=1, bias=False), nn.BatchNorm2d(256),
                         nn.ReLU(), nn.Conv2d(256, num_classes, 1))


def _deeplabv3_resnet(name: str, layers: list[int], num_classes: int | None = None,
                      aux_loss: bool | None = None, weights_backbone: object = None,
                      pretrained_backbone: bool | None = None) -> DeepLabV3:
    refuse_backbone_weights(name, weights_backbone, pretrained_backbone)
    num_classes = voc_classes(num_classes)
    return DeepLabV3(resnet_features(layers, aux_loss), DeepLabHead(2048, num_classes),
                     FCNHead(1024, num_classes) if aux_loss else None)


def _deeplabv3_mobilenet_v3_large(num_classes: int | None = None,
                                  aux_loss: bool | None = None,
                                  weights_backbone: object = None,
                                  pretrained_backbone: bool | None = None) -> DeepLabV3:
    refuse_backbone_weights("deeplabv3_mobilenet_v3_large", weights_backbone,
                            pretrained_backbone)
    num_classes = voc_classes(num_classes)
    backbone, aux_channels, out_channels = mobilenet_v3_large_features(
        "aux" if aux_loss else None, "out")
    return DeepLabV3(backbone, DeepLabHead(out_channels, num_classes),
                     FCNHead(aux_channels, num_classes) if aux_loss else None)


def _builder(name: str, layers: list[int], doc: str):
    return make_builder(name, partial(_deeplabv3_resnet, name, layers), doc, __name__)


deeplabv3_resnet50 = _builder("deeplabv3_resnet50", [3, 4, 6, 3],
                              "DeepLabV3 on a dilated ResNet-50")
deeplabv3_resnet101 = _builder("deeplabv3_resnet101", [3, 4, 23, 3],
                               "DeepLabV3 on a dilated ResNet-101")
deeplabv3_mobilenet_v3_large = make_builder(
    "deeplabv3_mobilenet_v3_large", _deeplabv3_mobilenet_v3_large,
    "DeepLabV3 on a dilated MobileNetV3-Large", __name__)
