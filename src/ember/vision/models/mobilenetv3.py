"""MobileNetV3 large and small (Howard et al. 2019) as torchvision builds them: inverted
residual blocks with optional squeeze-and-excitation (hard-sigmoid gate) and ReLU or
hard-swish, batch norms with eps 0.001 and momentum 0.01.

Example:
    >>> mobilenet_v3_small(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms, small_normal_linear
from ember.vision.models._utils import make_divisible
from ember.vision.ops import Conv2dNormActivation, SqueezeExcitation

__all__ = ["InvertedResidualConfig", "MobileNetV3", "mobilenet_v3_large", "mobilenet_v3_small"]

Norm = Callable[..., nn.Module]
HARD_SE = partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)  # the default se_layer


@dataclass
class InvertedResidualConfig:
    """One block: channels (scaled by ``width_mult`` and rounded to multiples of 8), kernel,
    squeeze-and-excitation, activation (``"RE"`` ReLU or ``"HS"`` hard-swish), stride and
    dilation."""

    input_channels: int
    kernel: int
    expanded_channels: int
    out_channels: int
    use_se: bool
    activation: str
    stride: int
    dilation: int
    width_mult: float

    def __post_init__(self) -> None:
        self.input_channels = self.adjust_channels(self.input_channels, self.width_mult)
        self.expanded_channels = self.adjust_channels(self.expanded_channels, self.width_mult)
        self.out_channels = self.adjust_channels(self.out_channels, self.width_mult)
        self.use_hs = self.activation == "HS"

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        return make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """1×1 expansion (when widening), depthwise ``kernel`` convolution, optional
    squeeze-and-excitation, linear 1×1 projection; a residual sum when shapes allow."""

    def __init__(self, cnf: InvertedResidualConfig, norm_layer: Norm,
                 se_layer: Callable[..., nn.Module] = HARD_SE) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ArgumentError(f"illegal stride value {cnf.stride} (1 or 2 expected)")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        act = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers: list[nn.Module] = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=act))
        layers.append(Conv2dNormActivation(
            cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
            stride=1 if cnf.dilation > 1 else cnf.stride, dilation=cnf.dilation,
            groups=cnf.expanded_channels, norm_layer=norm_layer, activation_layer=act))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels,
                                   make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels,
                                           kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, x: Tensor) -> Tensor:
        return x + self.block(x) if self.use_res_connect else self.block(x)


class MobileNetV3(nn.Module):
    """torchvision's ``MobileNetV3(inverted_residual_setting, last_channel, num_classes=1000,
    block=None, norm_layer=None, dropout=0.2)``."""

    def __init__(self, inverted_residual_setting: list[InvertedResidualConfig],
                 last_channel: int, num_classes: int = 1000,
                 block: Callable[..., nn.Module] | None = None, norm_layer: Norm | None = None,
                 dropout: float = 0.2, **kwargs: Any) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ArgumentError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be "
                            "List[InvertedResidualConfig]")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first = inverted_residual_setting[0].input_channels
        layers: list[nn.Module] = [Conv2dNormActivation(3, first, kernel_size=3, stride=2,
                                                        norm_layer=norm_layer,
                                                        activation_layer=nn.Hardswish)]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        last_in = inverted_residual_setting[-1].out_channels
        last_out = 6 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(last_out, last_channel), nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))
        init_convs_and_norms(self, linear=small_normal_linear)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


# input, kernel, expanded, output, SE, activation, stride; "tail" rows take the
# reduced_tail divider and the dilation (the paper's Tables 1 and 2)
_LARGE = [(16, 3, 16, 16, False, "RE", 1, False), (16, 3, 64, 24, False, "RE", 2, False),
          (24, 3, 72, 24, False, "RE", 1, False), (24, 5, 72, 40, True, "RE", 2, False),
          (40, 5, 120, 40, True, "RE", 1, False), (40, 5, 120, 40, True, "RE", 1, False),
          (40, 3, 240, 80, False, "HS", 2, False), (80, 3, 200, 80, False, "HS", 1, False),
          (80, 3, 184, 80, False, "HS", 1, False), (80, 3, 184, 80, False, "HS", 1, False),
          (80, 3, 480, 112, True, "HS", 1, False), (112, 3, 672, 112, True, "HS", 1, False),
          (112, 5, 672, 160, True, "HS", 2, True), (160, 5, 960, 160, True, "HS", 1, True),
          (160, 5, 960, 160, True, "HS", 1, True)]
_SMALL = [(16, 3, 16, 16, True, "RE", 2, False), (16, 3, 72, 24, False, "RE", 2, False),
          (24, 3, 88, 24, False, "RE", 1, False), (24, 5, 96, 40, True, "HS", 2, False),
          (40, 5, 240, 40, True, "HS", 1, False), (40, 5, 240, 40, True, "HS", 1, False),
          (40, 5, 120, 48, True, "HS", 1, False), (48, 5, 144, 48, True, "HS", 1, False),
          (48, 5, 288, 96, True, "HS", 2, True), (96, 5, 576, 96, True, "HS", 1, True),
          (96, 5, 576, 96, True, "HS", 1, True)]


def _config(rows: list[tuple], last: int, width_mult: float = 1.0, reduced_tail: bool = False,
            dilated: bool = False) -> tuple[list[InvertedResidualConfig], int]:
    divider = 2 if reduced_tail else 1
    setting = []
    for i, (cin, k, exp, cout, se, act, stride, tail) in enumerate(rows):
        inner = tail and rows[i - 1][7]  # a tail block after the first: all of it reduced
        setting.append(InvertedResidualConfig(
            cin // divider if inner else cin, k, exp // divider if inner else exp,
            cout // divider if tail else cout, se, act, stride,
            2 if tail and dilated else 1, width_mult))
    return setting, InvertedResidualConfig.adjust_channels(last // divider, width_mult)


def _mobilenet_v3(rows: list[tuple], last: int, **kwargs: Any) -> MobileNetV3:
    options = {k: kwargs.pop(k) for k in ("width_mult", "reduced_tail", "dilated")
               if k in kwargs}
    setting, last_channel = _config(rows, last, **options)
    return MobileNetV3(setting, last_channel, **kwargs)


mobilenet_v3_large = make_builder("mobilenet_v3_large", partial(_mobilenet_v3, _LARGE, 1280),
                                  "MobileNetV3-Large", __name__)
mobilenet_v3_small = make_builder("mobilenet_v3_small", partial(_mobilenet_v3, _SMALL, 1024),
                                  "MobileNetV3-Small", __name__)
