"""RAFT's feature and context encoder: a strided 7×7 stem and three stages of two residual
(RAFT) or bottleneck (RAFT-small) blocks, downsampling images 8 times, with torchvision's
module names and initialization.

Example:
    >>> FeatureEncoder()(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 256, 4, 4])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.vision.ops import Conv2dNormActivation

__all__ = ["BottleneckBlock", "FeatureEncoder", "ResidualBlock"]

Norm = Callable[..., nn.Module] | None


def _shortcut(in_channels: int, out_channels: int, stride: int, project: bool,
              norm_layer: Norm) -> nn.Module:
    if not project:
        return nn.Identity()
    return Conv2dNormActivation(in_channels, out_channels, kernel_size=1, stride=stride,
                                norm_layer=norm_layer, activation_layer=None, bias=True)


class ResidualBlock(nn.Module):
    """Two 3×3 conv-norm-ReLUs (the first strided) plus the shortcut, then ReLU. The convs keep
    their biases under the norm, as RAFT's (its batch norms are frozen after the first
    dataset). ``always_project``: a 1×1 projection shortcut even at stride 1."""

    def __init__(self, in_channels: int, out_channels: int, *, norm_layer: Norm, stride: int = 1,
                 always_project: bool = False) -> None:
        super().__init__()
        self.convnormrelu1 = Conv2dNormActivation(in_channels, out_channels, kernel_size=3,
                                                  stride=stride, norm_layer=norm_layer, bias=True)
        self.convnormrelu2 = Conv2dNormActivation(out_channels, out_channels, kernel_size=3,
                                                  norm_layer=norm_layer, bias=True)
        self.downsample = _shortcut(in_channels, out_channels, stride,
                                    stride != 1 or always_project, norm_layer)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        y = self.convnormrelu2(self.convnormrelu1(x))
        return self.relu(self.downsample(x) + y)


class BottleneckBlock(nn.Module):
    """1×1 → 3×3 (strided) → 1×1 conv-norm-ReLUs through a quarter of ``out_channels``, plus
    the shortcut, then ReLU; biased convs as :class:`ResidualBlock`'s."""

    def __init__(self, in_channels: int, out_channels: int, *, norm_layer: Norm,
                 stride: int = 1) -> None:
        super().__init__()
        mid = out_channels // 4
        self.convnormrelu1 = Conv2dNormActivation(in_channels, mid, kernel_size=1,
                                                  norm_layer=norm_layer, bias=True)
        self.convnormrelu2 = Conv2dNormActivation(mid, mid, kernel_size=3, stride=stride,
                                                  norm_layer=norm_layer, bias=True)
        self.convnormrelu3 = Conv2dNormActivation(mid, out_channels, kernel_size=1,
                                                  norm_layer=norm_layer, bias=True)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(in_channels, out_channels, stride, stride != 1, norm_layer)

    def forward(self, x: Tensor) -> Tensor:
        y = self.convnormrelu3(self.convnormrelu2(self.convnormrelu1(x)))
        return self.relu(self.downsample(x) + y)


class FeatureEncoder(nn.Module):
    """The 7×7 stem to ``layers[0]`` channels, three stages of two ``block`` to ``layers[1:4]``
    (``strides``: the stem's and each stage's first), and a 1×1 conv to ``layers[4]``.
    Convs start Kaiming-normal (fan out), norms at weight 1 and bias 0."""

    def __init__(self, *, block: type[nn.Module] = ResidualBlock,
                 layers: Sequence[int] = (64, 64, 96, 128, 256),
                 strides: Sequence[int] = (2, 1, 2, 2),
                 norm_layer: Norm = nn.BatchNorm2d) -> None:
        super().__init__()
        if len(layers) != 5:
            raise ArgumentError(f"FeatureEncoder: layers needs 5 widths, got {len(layers)}")
        if len(strides) != 4:
            raise ArgumentError(f"FeatureEncoder: strides needs 4 values, got {len(strides)}")
        self.convnormrelu = Conv2dNormActivation(3, layers[0], kernel_size=7, stride=strides[0],
                                                 norm_layer=norm_layer, bias=True)
        for n in (1, 2, 3):
            first = block(layers[n - 1], layers[n], norm_layer=norm_layer, stride=strides[n])
            second = block(layers[n], layers[n], norm_layer=norm_layer, stride=1)
            setattr(self, f"layer{n}", nn.Sequential(first, second))
        self.conv = nn.Conv2d(layers[3], layers[4], kernel_size=1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d)):
                if m.weight is not None:
                    nn.init.constant_(m.weight, 1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        self.output_dim = layers[-1]
        self.downsample_factor = 2 ** sum(s == 2 for s in strides)

    def forward(self, x: Tensor) -> Tensor:
        x = self.layer3(self.layer2(self.layer1(self.convnormrelu(x))))
        return self.conv(x)
