"""RegNetX and RegNetY (Radosavovic et al. 2020) as torchvision builds them: a 3×3 stride-2
stem and four stages of residual bottleneck blocks with grouped 3×3 convolutions (and, for
RegNetY, squeeze-and-excitation), whose widths and depths come from the quantized linear rule
of :meth:`BlockParams.from_init_params`.

Example:
    >>> params = BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8)
    >>> RegNet(params, num_classes=3)(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 3])
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.models._utils import make_divisible
from ember.vision.ops import Conv2dNormActivation, SqueezeExcitation

__all__ = ["RegNet", "regnet_x_16gf", "regnet_x_1_6gf", "regnet_x_32gf", "regnet_x_3_2gf",
           "regnet_x_400mf", "regnet_x_800mf", "regnet_x_8gf", "regnet_y_128gf", "regnet_y_16gf",
           "regnet_y_1_6gf", "regnet_y_32gf", "regnet_y_3_2gf", "regnet_y_400mf",
           "regnet_y_800mf", "regnet_y_8gf"]

Layer = Callable[..., nn.Module]


class SimpleStemIN(Conv2dNormActivation):
    """3×3 stride-2 convolution, norm, activation."""

    def __init__(self, width_in: int, width_out: int, norm_layer: Layer,
                 activation_layer: Layer) -> None:
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """``a`` 1×1, ``b`` grouped 3×3 (strided), optional ``se`` (squeezing to ``se_ratio`` of
    the block's input width), ``c`` linear 1×1."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer: Layer,
                 activation_layer: Layer, group_width: int, bottleneck_multiplier: float,
                 se_ratio: float | None) -> None:
        w_b = int(round(width_out * bottleneck_multiplier))
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1, stride=1,
                                           norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride,
                                           groups=w_b // group_width, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        if se_ratio:
            layers["se"] = SqueezeExcitation(w_b, int(round(se_ratio * width_in)),
                                             activation=activation_layer)
        layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, stride=1,
                                           norm_layer=norm_layer, activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """``activation(proj(x) + f(x))``; ``proj`` (1×1 conv and norm) only where the width or
    resolution changes."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer: Layer,
                 activation_layer: Layer, group_width: int = 1,
                 bottleneck_multiplier: float = 1.0, se_ratio: float | None = None) -> None:
        super().__init__()
        self.proj = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride,
                                             norm_layer=norm_layer, activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer,
                                     group_width, bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.proj is None else self.proj(x)
        return self.activation(shortcut + self.f(x))


class AnyStage(nn.Sequential):
    """``depth`` blocks named ``block{stage_index}-{i}``, the first one strided."""

    def __init__(self, width_in: int, width_out: int, stride: int, depth: int,
                 block_constructor: Layer, norm_layer: Layer, activation_layer: Layer,
                 group_width: int, bottleneck_multiplier: float,
                 se_ratio: float | None = None, stage_index: int = 0) -> None:
        super().__init__()
        for i in range(depth):
            self.add_module(f"block{stage_index}-{i}", block_constructor(
                width_in if i == 0 else width_out, width_out, stride if i == 0 else 1,
                norm_layer, activation_layer, group_width, bottleneck_multiplier, se_ratio))


class BlockParams:
    """Per-stage depths, widths, group widths, bottleneck multipliers and strides, plus the
    squeeze-and-excitation ratio."""

    def __init__(self, depths: list[int], widths: list[int], group_widths: list[int],
                 bottleneck_multipliers: list[float], strides: list[int],
                 se_ratio: float | None = None) -> None:
        self.depths, self.widths, self.group_widths = depths, widths, group_widths
        self.bottleneck_multipliers, self.strides = bottleneck_multipliers, strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(cls, depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                         bottleneck_multiplier: float = 1.0, se_ratio: float | None = None,
                         **kwargs: Any) -> BlockParams:
        """The paper's design space: block ``j`` would be ``w_0 + w_a·j`` wide; that width is
        snapped to ``w_0·w_m^k`` (nearest integer ``k``) and to a multiple of 8, and runs of
        equal widths become stages (each starting with stride 2). Computed in float32, as
        torchvision does, so the rounding ties fall alike."""
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ArgumentError("Invalid RegNet settings")
        widths_cont = ember.arange(depth, dtype=ember.float32) * w_a + w_0
        capacity = ember.round(ember.log(widths_cont / w_0) / math.log(w_m))
        block_widths = (ember.round(w_0 * ember.pow(w_m, capacity) / 8) * 8).int().tolist()
        stage_widths, stage_depths = [], []
        for width in block_widths:
            if stage_widths and stage_widths[-1] == width:
                stage_depths[-1] += 1
            else:
                stage_widths.append(width)
                stage_depths.append(1)
        stages = len(stage_widths)
        multipliers = [bottleneck_multiplier] * stages
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(
            stage_widths, multipliers, [group_width] * stages)
        return cls(stage_depths, stage_widths, group_widths, multipliers, [2] * stages,
                   se_ratio)

    def _get_expanded_params(self) -> Iterator[tuple[int, int, int, int, float]]:
        return zip(self.widths, self.strides, self.depths, self.group_widths,
                   self.bottleneck_multipliers)

    @staticmethod
    def _adjust_widths_groups_compatibilty(stage_widths: list[int],
                                           bottleneck_ratios: list[float],
                                           group_widths: list[int]
                                           ) -> tuple[list[int], list[int]]:
        """Bottleneck widths rounded to multiples of their group width (itself at most the
        bottleneck width), and the stage widths that give them."""
        bottlenecks = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios)]
        groups = [min(g, w) for g, w in zip(group_widths, bottlenecks)]
        bottlenecks = [make_divisible(w, g) for w, g in zip(bottlenecks, groups)]
        return [int(w / b) for w, b in zip(bottlenecks, bottleneck_ratios)], groups


class RegNet(nn.Module):
    """torchvision's ``RegNet(block_params, num_classes=1000, stem_width=32, stem_type=None,
    block_type=None, norm_layer=None, activation=None)``: stages ``trunk_output.block1``…,
    ResNet-style initialization (convolutions N(0, 2/fan-out), linear N(0, 0.01²))."""

    def __init__(self, block_params: BlockParams, num_classes: int = 1000, stem_width: int = 32,
                 stem_type: Layer | None = None, block_type: Layer | None = None,
                 norm_layer: Layer | None = None, activation: Layer | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        activation = activation or nn.ReLU
        self.stem = (stem_type or SimpleStemIN)(3, stem_width, norm_layer, activation)
        width = stem_width
        stages = []
        for i, (width_out, stride, depth, group_width, multiplier) in enumerate(
                block_params._get_expanded_params()):
            stages.append((f"block{i + 1}", AnyStage(
                width, width_out, stride, depth, block_type or ResBottleneckBlock, norm_layer,
                activation, group_width, multiplier, block_params.se_ratio, stage_index=i + 1)))
            width = width_out
        self.trunk_output = nn.Sequential(OrderedDict(stages))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=width, out_features=num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                init.ones_(m.weight)
                init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init.normal_(m.weight, mean=0.0, std=0.01)
                init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.avgpool(self.trunk_output(self.stem(x))).flatten(1))


def _regnet(design: dict[str, Any], **kwargs: Any) -> RegNet:
    params = BlockParams.from_init_params(**design)
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return RegNet(params, **kwargs)


# depth, w_0, w_a, w_m, group_width (the paper's Tables; RegNetY with SE ratio 0.25)
_DESIGNS = {
    "y_400mf": (16, 48, 27.89, 2.09, 8), "y_800mf": (14, 56, 38.84, 2.4, 16),
    "y_1_6gf": (27, 48, 20.71, 2.65, 24), "y_3_2gf": (21, 80, 42.63, 2.66, 24),
    "y_8gf": (17, 192, 76.82, 2.19, 56), "y_16gf": (18, 200, 106.23, 2.48, 112),
    "y_32gf": (20, 232, 115.89, 2.53, 232), "y_128gf": (27, 456, 160.83, 2.52, 264),
    "x_400mf": (22, 24, 24.48, 2.54, 16), "x_800mf": (16, 56, 35.73, 2.28, 16),
    "x_1_6gf": (18, 80, 34.01, 2.25, 24), "x_3_2gf": (25, 88, 26.31, 2.25, 48),
    "x_8gf": (23, 80, 49.56, 2.88, 120), "x_16gf": (22, 216, 55.59, 2.1, 128),
    "x_32gf": (23, 320, 69.86, 2.0, 168)}


def _builder(key: str):
    depth, w_0, w_a, w_m, group_width = _DESIGNS[key]
    design = {"depth": depth, "w_0": w_0, "w_a": w_a, "w_m": w_m, "group_width": group_width,
              "se_ratio": 0.25 if key.startswith("y") else None}
    doc = f"RegNet{key[0].upper()}-{key[2:].replace('_', '.').upper()}"
    return make_builder(f"regnet_{key}", partial(_regnet, design), doc, __name__)


regnet_y_400mf = _builder("y_400mf")
regnet_y_800mf = _builder("y_800mf")
regnet_y_1_6gf = _builder("y_1_6gf")
regnet_y_3_2gf = _builder("y_3_2gf")
regnet_y_8gf = _builder("y_8gf")
regnet_y_16gf = _builder("y_16gf")
regnet_y_32gf = _builder("y_32gf")
regnet_y_128gf = _builder("y_128gf")
regnet_x_400mf = _builder("x_400mf")
regnet_x_800mf = _builder("x_800mf")
regnet_x_1_6gf = _builder("x_1_6gf")
regnet_x_3_2gf = _builder("x_3_2gf")
regnet_x_8gf = _builder("x_8gf")
regnet_x_16gf = _builder("x_16gf")
regnet_x_32gf = _builder("x_32gf")
