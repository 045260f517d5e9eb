"""EfficientNet B0–B7 (Tan & Le 2019) and EfficientNetV2 S/M/L (Tan & Le 2021) as
torchvision builds them: MBConv blocks (1×1 expansion, depthwise convolution,
squeeze-and-excitation, linear projection, stochastic depth on the residual) with SiLU, scaled
in width and depth per B variant; V2 starts with fused MBConv blocks (one full convolution in
place of the expansion and the depthwise one).

Example:
    >>> efficientnet_b0(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms
from ember.vision.models._utils import make_divisible
from ember.vision.ops import Conv2dNormActivation, SqueezeExcitation, StochasticDepth

__all__ = ["EfficientNet", "FusedMBConv", "FusedMBConvConfig", "MBConv", "MBConvConfig",
           "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
           "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7",
           "efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l"]

Norm = Callable[..., nn.Module]


@dataclass
class _StageConfig:
    expand_ratio: float
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int

    @staticmethod
    def adjust_channels(channels: float, width_mult: float, min_value: int | None = None) -> int:
        return make_divisible(channels * width_mult, 8, min_value)


@dataclass
class MBConvConfig(_StageConfig):
    """One stage: expansion ratio, kernel, first stride, channels (scaled by ``width_mult``,
    rounded to multiples of 8), block count (scaled by ``depth_mult``, rounded up) and block
    class (default :class:`MBConv`)."""

    width_mult: float = 1.0
    depth_mult: float = 1.0
    block: Callable[..., nn.Module] | None = None

    def __post_init__(self) -> None:
        self.input_channels = self.adjust_channels(self.input_channels, self.width_mult)
        self.out_channels = self.adjust_channels(self.out_channels, self.width_mult)
        self.num_layers = int(math.ceil(self.num_layers * self.depth_mult))
        self.block = self.block or MBConv


@dataclass
class FusedMBConvConfig(_StageConfig):
    """One stage of fused blocks (EfficientNetV2), its channels and block count as given;
    block class default :class:`FusedMBConv`."""

    block: Callable[..., nn.Module] | None = None

    def __post_init__(self) -> None:
        self.block = self.block or FusedMBConv


class _Block(nn.Module):
    """A block with stochastic depth on its residual connection (when it keeps the shape)."""

    block: nn.Sequential
    stochastic_depth: StochasticDepth
    use_res_connect: bool

    def forward(self, x: Tensor) -> Tensor:
        out = self.block(x)
        return self.stochastic_depth(out) + x if self.use_res_connect else out


class MBConv(_Block):
    """Expand (1×1, when the ratio is not 1), depthwise ``kernel`` convolution, squeeze-and-
    excitation to a quarter of the input channels, 1×1 projection; on a residual block the
    branch passes :class:`~ember.vision.ops.StochasticDepth` before the sum."""

    def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer: Norm,
                 se_layer: Callable[..., nn.Module] = SqueezeExcitation) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ArgumentError(f"illegal stride value {cnf.stride} (1 or 2 expected)")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        layers: list[nn.Module] = []
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, expanded, kernel_size=cnf.kernel,
                                           stride=cnf.stride, groups=expanded,
                                           norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(se_layer(expanded, max(1, cnf.input_channels // 4),
                               activation=partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels


class FusedMBConv(_Block):
    """A full ``kernel`` convolution to the expanded width (with ``stride``), then a 1×1
    projection (or, at expansion ratio 1, one convolution straight to the output); stochastic
    depth on a residual block as in :class:`MBConv`."""

    def __init__(self, cnf: FusedMBConvConfig, stochastic_depth_prob: float,
                 norm_layer: Norm) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ArgumentError(f"illegal stride value {cnf.stride} (1 or 2 expected)")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer)
        if expanded != cnf.input_channels:
            layers = [conv(cnf.input_channels, expanded, kernel_size=cnf.kernel,
                           stride=cnf.stride, activation_layer=nn.SiLU),
                      conv(expanded, cnf.out_channels, kernel_size=1, activation_layer=None)]
        else:
            layers = [conv(cnf.input_channels, cnf.out_channels, kernel_size=cnf.kernel,
                           stride=cnf.stride, activation_layer=nn.SiLU)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels


class EfficientNet(nn.Module):
    """torchvision's ``EfficientNet(inverted_residual_setting, dropout,
    stochastic_depth_prob=0.2, num_classes=1000, norm_layer=None, last_channel=None)``: the
    stochastic-depth probability grows linearly from 0 over the blocks."""

    def __init__(self, inverted_residual_setting: list[MBConvConfig | FusedMBConvConfig],
                 dropout: float,
                 stochastic_depth_prob: float = 0.2, num_classes: int = 1000,
                 norm_layer: Norm | None = None, last_channel: int | None = None) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ArgumentError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, _StageConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        norm_layer = norm_layer or nn.BatchNorm2d
        layers: list[nn.Module] = [Conv2dNormActivation(
            3, inverted_residual_setting[0].input_channels, kernel_size=3, stride=2,
            norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total = sum(cnf.num_layers for cnf in inverted_residual_setting)
        index = 0
        for cnf in inverted_residual_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:  # later blocks of a stage keep the width and resolution
                    block_cnf.input_channels, block_cnf.stride = block_cnf.out_channels, 1
                stage.append(block_cnf.block(block_cnf, stochastic_depth_prob * index / total,
                                             norm_layer))
                index += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(last_out, num_classes))
        init_convs_and_norms(self, linear=_uniform_linear)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


def _uniform_linear(m: nn.Linear) -> None:
    bound = 1.0 / math.sqrt(m.out_features)
    init.uniform_(m.weight, -bound, bound)
    init.zeros_(m.bias)


# expansion, kernel, stride, input, output, layers of B0's seven stages
_STAGES = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
           (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
           (6, 3, 1, 192, 320, 1)]


def _efficientnet(width_mult: float, depth_mult: float, **kwargs: Any) -> EfficientNet:
    setting = [MBConvConfig(*row, width_mult=width_mult, depth_mult=depth_mult)
               for row in _STAGES]
    return EfficientNet(setting, **kwargs)


def _builder(name: str, width: float, depth: float, dropout: float, **defaults: Any):
    make = partial(_efficientnet, width, depth)
    return make_builder(name, make, f"EfficientNet-{name[-2:].upper()}", __name__,
                        defaults={"dropout": dropout, **defaults})


_B5_NORM = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)  # B5 to B7 (their TF weights)
efficientnet_b0 = _builder("efficientnet_b0", 1.0, 1.0, 0.2)
efficientnet_b1 = _builder("efficientnet_b1", 1.0, 1.1, 0.2)
efficientnet_b2 = _builder("efficientnet_b2", 1.1, 1.2, 0.3)
efficientnet_b3 = _builder("efficientnet_b3", 1.2, 1.4, 0.3)
efficientnet_b4 = _builder("efficientnet_b4", 1.4, 1.8, 0.4)
efficientnet_b5 = _builder("efficientnet_b5", 1.6, 2.2, 0.4, norm_layer=_B5_NORM)
efficientnet_b6 = _builder("efficientnet_b6", 1.8, 2.6, 0.5, norm_layer=_B5_NORM)
efficientnet_b7 = _builder("efficientnet_b7", 2.0, 3.1, 0.5, norm_layer=_B5_NORM)


def _efficientnet_v2(stages: list[tuple], **kwargs: Any) -> EfficientNet:
    setting = [(FusedMBConvConfig if fused else MBConvConfig)(*row) for fused, *row in stages]
    return EfficientNet(setting, last_channel=1280, **kwargs)


def _builder_v2(name: str, stages: list[tuple], dropout: float):
    return make_builder(name, partial(_efficientnet_v2, stages),
                        f"EfficientNetV2-{name[-1].upper()}", __name__,
                        defaults={"dropout": dropout, "norm_layer": _V2_NORM})


_V2_NORM = partial(nn.BatchNorm2d, eps=1e-03)
# fused?, expansion, kernel, stride, input, output, layers (the V2 paper's Table 4 and its
# M and L scalings)
_V2_S = [(True, 1, 3, 1, 24, 24, 2), (True, 4, 3, 2, 24, 48, 4), (True, 4, 3, 2, 48, 64, 4),
         (False, 4, 3, 2, 64, 128, 6), (False, 6, 3, 1, 128, 160, 9),
         (False, 6, 3, 2, 160, 256, 15)]
_V2_M = [(True, 1, 3, 1, 24, 24, 3), (True, 4, 3, 2, 24, 48, 5), (True, 4, 3, 2, 48, 80, 5),
         (False, 4, 3, 2, 80, 160, 7), (False, 6, 3, 1, 160, 176, 14),
         (False, 6, 3, 2, 176, 304, 18), (False, 6, 3, 1, 304, 512, 5)]
_V2_L = [(True, 1, 3, 1, 32, 32, 4), (True, 4, 3, 2, 32, 64, 7), (True, 4, 3, 2, 64, 96, 7),
         (False, 4, 3, 2, 96, 192, 10), (False, 6, 3, 1, 192, 224, 19),
         (False, 6, 3, 2, 224, 384, 25), (False, 6, 3, 1, 384, 640, 7)]
efficientnet_v2_s = _builder_v2("efficientnet_v2_s", _V2_S, 0.2)
efficientnet_v2_m = _builder_v2("efficientnet_v2_m", _V2_M, 0.3)
efficientnet_v2_l = _builder_v2("efficientnet_v2_l", _V2_L, 0.4)
