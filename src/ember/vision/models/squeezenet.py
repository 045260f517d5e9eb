"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016) as torchvision builds them: ``Fire`` modules
(a 1×1 squeeze, then 1×1 and 3×3 expansions concatenated) and a convolutional classifier.

Example:
    >>> squeezenet1_1(num_classes=10)(ember.randn(1, 3, 64, 64)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from functools import partial

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision.models._api import make_builder

__all__ = ["Fire", "SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    """Squeeze to ``squeeze_planes`` with a 1×1 convolution, then expand with 1×1 and 3×3
    convolutions whose outputs are concatenated (each convolution followed by a ReLU)."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int,
                 expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return ember.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


def _features(version: str) -> nn.Sequential:
    pool = partial(nn.MaxPool2d, kernel_size=3, stride=2, ceil_mode=True)
    if version == "1_0":
        return nn.Sequential(
            nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True), pool(),
            Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
            Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192),
            Fire(384, 64, 256, 256), pool(), Fire(512, 64, 256, 256))
    if version == "1_1":
        return nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True), pool(),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
            Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
            Fire(512, 64, 256, 256))
    raise ArgumentError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")


class SqueezeNet(nn.Module):
    """torchvision's ``SqueezeNet(version="1_0", num_classes=1000, dropout=0.5)``; the
    classifier is dropout, a 1×1 convolution to the classes, ReLU and a global average pool."""

    def __init__(self, version: str = "1_0", num_classes: int = 1000,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.features = _features(version)
        final_conv = nn.Conv2d(512, num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    init.kaiming_uniform_(m.weight)
                init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.features(x)).flatten(1)


squeezenet1_0 = make_builder("squeezenet1_0", partial(SqueezeNet, "1_0"), "SqueezeNet 1.0",
                             __name__)
squeezenet1_1 = make_builder("squeezenet1_1", partial(SqueezeNet, "1_1"),
                             "SqueezeNet 1.1 (2.4x less computation than 1.0)", __name__)
