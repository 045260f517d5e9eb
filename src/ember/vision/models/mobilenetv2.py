"""MobileNetV2 (Sandler et al. 2018) as torchvision builds it: inverted residual blocks
(1×1 expansion, 3×3 depthwise, linear 1×1 projection) with ReLU6, width multiplier and
channel rounding.

Example:
    >>> mobilenet_v2(num_classes=10, width_mult=0.5).eval()(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from collections.abc import Callable

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms, small_normal_linear
from ember.vision.models._utils import make_divisible
from ember.vision.ops import Conv2dNormActivation

__all__ = ["MobileNetV2", "mobilenet_v2"]

Norm = Callable[..., nn.Module]

# expansion t, output channels c, repeats n, first stride s of each stage (the paper's Table 2)
SETTING = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
           [6, 160, 3, 2], [6, 320, 1, 1]]


class InvertedResidual(nn.Module):
    """Expand by ``expand_ratio`` (1×1, skipped at ratio 1), 3×3 depthwise with ``stride``,
    project to ``oup`` (1×1, no activation); a residual sum when shapes allow."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int,
                 norm_layer: Norm | None = None) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ArgumentError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        self.stride = stride
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden,
                                        norm_layer=norm_layer, activation_layer=nn.ReLU6),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), norm_layer(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's ``MobileNetV2(num_classes=1000, width_mult=1.0,
    inverted_residual_setting=None, round_nearest=8, block=None, norm_layer=None,
    dropout=0.2)``."""

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0,
                 inverted_residual_setting: list[list[int]] | None = None,
                 round_nearest: int = 8, block: Callable[..., nn.Module] | None = None,
                 norm_layer: Norm | None = None, dropout: float = 0.2) -> None:
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        setting = SETTING if inverted_residual_setting is None else inverted_residual_setting
        if len(setting) == 0 or len(setting[0]) != 4:
            raise ArgumentError("inverted_residual_setting should be non-empty or a 4-element "
                                f"list, got {setting}")
        channels = make_divisible(32 * width_mult, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [Conv2dNormActivation(3, channels, stride=2,
                                                          norm_layer=norm_layer,
                                                          activation_layer=nn.ReLU6)]
        for t, c, n, s in setting:
            out = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(channels, out, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                channels = out
        features.append(Conv2dNormActivation(channels, self.last_channel, kernel_size=1,
                                             norm_layer=norm_layer, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout),
                                        nn.Linear(self.last_channel, num_classes))
        init_convs_and_norms(self, linear=small_normal_linear)

    def forward(self, x: Tensor) -> Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(x.flatten(1))


mobilenet_v2 = make_builder("mobilenet_v2", MobileNetV2, "MobileNetV2", __name__)
