"""Fully convolutional networks (Long et al. 2015) on dilated ResNets, as torchvision builds
them: the backbone keeps 1/8 resolution (``layer3``/``layer4`` dilated), an ``FCNHead`` maps
``layer4`` to class logits (and one on ``layer3`` gives the auxiliary logits).

Example:
    >>> model = fcn_resnet50(num_classes=3, aux_loss=True).eval()
    >>> sorted(model(ember.randn(1, 3, 32, 32)).items())[0][1].shape
    ember.Size([1, 3, 32, 32])
"""

from __future__ import annotations

from functools import partial

from ember import nn
from ember.models.resnet import Bottleneck, ResNet
from ember.vision.models._api import make_builder
from ember.vision.models._utils import IntermediateLayerGetter
from ember.vision.models.segmentation._utils import (
    _SimpleSegmentationModel,
    refuse_backbone_weights,
    voc_classes,
)

__all__ = ["FCN", "fcn_resnet101", "fcn_resnet50"]


class FCN(_SimpleSegmentationModel):
    """torchvision's ``FCN(backbone, classifier, aux_classifier=None)``: the forward returns
    ``OrderedDict(out=..., aux=...)`` logits at the input resolution."""


class FCNHead(nn.Sequential):
    """3×3 conv to a quarter of the channels, BatchNorm, ReLU, dropout 0.1, 1×1 conv."""

    def __init__(self, in_channels: int, channels: int) -> None:
        inter = in_channels // 4
        super().__init__(nn.Conv2d(in_channels, inter, 3, padding=1, bias=False),
                         nn.BatchNorm2d(inter), nn.ReLU(), nn.Dropout(0.1),
                         nn.Conv2d(inter, channels, 1))


def resnet_features(layers: list[int], aux: bool | None) -> IntermediateLayerGetter:
    """A dilated (output stride 8) Bottleneck ResNet's ``layer4`` as ``"out"`` and, with
    ``aux``, ``layer3`` as ``"aux"``."""
    backbone = ResNet(Bottleneck, layers, replace_stride_with_dilation=[False, True, True])
    return_layers = {"layer4": "out", **({"layer3": "aux"} if aux else {})}
    return IntermediateLayerGetter(backbone, return_layers)


def _fcn_resnet(name: str, layers: list[int], num_classes: int | None = None,
                aux_loss: bool | None = None, weights_backbone: object = None,
                pretrained_backbone: bool | None = None) -> FCN:
    refuse_backbone_weights(name, weights_backbone, pretrained_backbone)
    num_classes = voc_classes(num_classes)
    return FCN(resnet_features(layers, aux_loss), FCNHead(2048, num_classes),
               FCNHead(1024, num_classes) if aux_loss else None)


def _builder(name: str, layers: list[int], doc: str):
    return make_builder(name, partial(_fcn_resnet, name, layers), doc, __name__)


fcn_resnet50 = _builder("fcn_resnet50", [3, 4, 6, 3], "FCN on a dilated ResNet-50")
fcn_resnet101 = _builder("fcn_resnet101", [3, 4, 23, 3], "FCN on a dilated ResNet-101")
