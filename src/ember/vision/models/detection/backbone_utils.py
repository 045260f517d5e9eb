"""Detection backbones, as torchvision's ``backbone_utils``: a classifier's intermediate
feature maps (``models._utils.IntermediateLayerGetter``, re-exported here) under a feature pyramid
(:class:`BackboneWithFPN`), with the early layers frozen."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models import mobilenetv3, resnet
from ember.vision.models._utils import IntermediateLayerGetter
from ember.vision.ops.feature_pyramid_network import (
    ExtraFPNBlock,
    FeaturePyramidNetwork,
    LastLevelMaxPool,
)
from ember.vision.ops.layers import FrozenBatchNorm2d

__all__ = ["BackboneWithFPN", "IntermediateLayerGetter", "mobilenet_backbone",
           "resnet_fpn_backbone"]


class BackboneWithFPN(nn.Module):
    """``body`` (the ``return_layers`` of ``backbone``) followed by a
    :class:`~ember.vision.ops.FeaturePyramidNetwork` of ``out_channels`` (an attribute
    detectors read).

    Example:
        >>> net = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.Conv2d(4, 8, 3, 2, 1))
        >>> fpn = BackboneWithFPN(net, {"0": "a", "1": "b"}, [4, 8], 6)
        >>> [(k, tuple(v.shape)) for k, v in fpn(ember.randn(1, 3, 16, 16)).items()]
        [('a', (1, 6, 8, 8)), ('b', (1, 6, 4, 4)), ('pool', (1, 6, 2, 2))]
    """

    def __init__(self, backbone: nn.Module, return_layers: dict[str, str],
                 in_channels_list: list[int], out_channels: int,
                 extra_blocks: ExtraFPNBlock | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.body = IntermediateLayerGetter(backbone, return_layers)
        self.fpn = FeaturePyramidNetwork(in_channels_list, out_channels,
                                         extra_blocks=LastLevelMaxPool() if extra_blocks is None
                                         else extra_blocks, norm_layer=norm_layer)
        self.out_channels = out_channels

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        return self.fpn(self.body(x))


def _validate_trainable_layers(is_trained: bool, trainable_backbone_layers: int | None,
                               max_value: int, default_value: int) -> int:
    """The number of trainable backbone layers: all of them for an untrained backbone
    (warning when another number was asked for), else the given number or the default."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn("Changing trainable_backbone_layers has no effect if neither "
                          f"pretrained nor pretrained_backbone have been set to True, falling "
                          f"back to trainable_backbone_layers={max_value} so that all layers "
                          "are trainable", stacklevel=3)
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if not 0 <= trainable_backbone_layers <= max_value:
        raise ArgumentError(f"Trainable backbone layers should be in the range [0,{max_value}], "
                            f"got {trainable_backbone_layers}")
    return trainable_backbone_layers


def _resnet_fpn_extractor(backbone: resnet.ResNet, trainable_layers: int,
                          returned_layers: list[int] | None = None,
                          extra_blocks: ExtraFPNBlock | None = None,
                          norm_layer: Callable[..., nn.Module] | None = None) -> BackboneWithFPN:
    if not 0 <= trainable_layers <= 5:
        raise ArgumentError("Trainable layers should be in the range [0,5], got "
                            f"{trainable_layers}")
    train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    if trainable_layers == 5:
        train.append("bn1")
    for name, parameter in backbone.named_parameters():
        if not any(name.startswith(layer) for layer in train):
            parameter.requires_grad_(False)
    returned_layers = returned_layers or [1, 2, 3, 4]
    if min(returned_layers) <= 0 or max(returned_layers) >= 5:
        raise ArgumentError(f"Each returned layer should be in the range [1,4]. Got "
                            f"{returned_layers}")
    return_layers = {f"layer{k}": str(v) for v, k in enumerate(returned_layers)}
    stage2 = backbone.inplanes // 8
    in_channels_list = [stage2 * 2 ** (i - 1) for i in returned_layers]
    return BackboneWithFPN(backbone, return_layers, in_channels_list, 256,
                           extra_blocks=extra_blocks, norm_layer=norm_layer)


def resnet_fpn_backbone(*, backbone_name: str, weights: Any = None,
                        norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d,
                        trainable_layers: int = 3, returned_layers: list[int] | None = None,
                        extra_blocks: ExtraFPNBlock | None = None) -> BackboneWithFPN:
    """A ResNet (``backbone_name``, e.g. ``"resnet50"``) with a 256-channel feature pyramid
    over ``returned_layers`` (default all four stages) and only the last
    ``trainable_layers`` stages trainable.

    Example:
        >>> fpn = resnet_fpn_backbone(backbone_name="resnet18", trainable_layers=5)
        >>> list(fpn(ember.randn(1, 3, 64, 64)).keys())
        ['0', '1', '2', '3', 'pool']
    """
    backbone = getattr(resnet, backbone_name)(weights=weights, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)


def _freeze_stages(features: nn.Sequential, stages: list[int], trainable_layers: int) -> None:
    """Freezes the blocks of ``features`` before the last ``trainable_layers`` of the stages
    (which start at the block indices ``stages``)."""
    if not 0 <= trainable_layers <= len(stages):
        raise ArgumentError(f"Trainable layers should be in the range [0,{len(stages)}], got "
                            f"{trainable_layers}")
    freeze_before = (len(features) if trainable_layers == 0
                     else stages[len(stages) - trainable_layers])
    for block in list(features)[:freeze_before]:
        for parameter in block.parameters():
            parameter.requires_grad_(False)


def _mobilenet_stages(features: nn.Sequential) -> list[int]:
    """Where a MobileNet's stages start: at the stem, every strided block, the last layer."""
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
    return [*stages, len(features) - 1]


def _mobilenet_extractor(backbone: mobilenetv3.MobileNetV3, fpn: bool, trainable_layers: int,
                         returned_layers: list[int] | None = None,
                         extra_blocks: ExtraFPNBlock | None = None,
                         norm_layer: Callable[..., nn.Module] | None = None) -> nn.Module:
    features = backbone.features
    stages = _mobilenet_stages(features)
    _freeze_stages(features, stages, trainable_layers)
    out_channels = 256
    if not fpn:
        body = nn.Sequential(features, nn.Conv2d(features[-1].out_channels, out_channels, 1))
        body.out_channels = out_channels
        return body
    returned_layers = returned_layers or [len(stages) - 2, len(stages) - 1]
    if min(returned_layers) < 0 or max(returned_layers) >= len(stages):
        raise ArgumentError(f"Each returned layer should be in the range [0,{len(stages) - 1}], "
                            f"got {returned_layers}")
    return_layers = {str(stages[k]): str(v) for v, k in enumerate(returned_layers)}
    in_channels_list = [features[stages[i]].out_channels for i in returned_layers]
    return BackboneWithFPN(features, return_layers, in_channels_list, out_channels,
                           extra_blocks=extra_blocks, norm_layer=norm_layer)


def mobilenet_backbone(*, backbone_name: str, weights: Any = None, fpn: bool,
                       norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d,
                       trainable_layers: int = 2, returned_layers: list[int] | None = None,
                       extra_blocks: ExtraFPNBlock | None = None) -> nn.Module:
    """A MobileNetV3 (``backbone_name``) trunk, with a 256-channel feature pyramid over two
    stages (``fpn=True``) or a 1×1 convolution to 256 channels, only the last
    ``trainable_layers`` stages trainable.

    Example:
        >>> net = mobilenet_backbone(backbone_name="mobilenet_v3_large", fpn=True)
        >>> net.body.return_layers, net.out_channels
        ({'13': '0', '16': '1'}, 256)
    """
    backbone = getattr(mobilenetv3, backbone_name)(weights=weights, norm_layer=norm_layer)
    return _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers, extra_blocks)
