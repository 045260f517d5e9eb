"""ShuffleNetV2 x0.5/x1.0/x1.5/x2.0 (Ma et al. 2018) as torchvision builds them: units that
split the channels, transform one half (1×1, 3×3 depthwise, 1×1) and shuffle the halves
together; strided units transform both halves.

Example:
    >>> shufflenet_v2_x0_5(num_classes=10)(ember.randn(2, 3, 32, 32)).shape
    ember.Size([2, 10])
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.vision.models._api import make_builder

__all__ = ["ShuffleNetV2", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
           "shufflenet_v2_x2_0"]


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    """Interleaves ``groups`` equal channel groups of an ``(N, C, H, W)`` tensor."""
    n, c, h, w = x.shape
    return x.reshape(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


def _depthwise(channels: int, stride: int) -> nn.Conv2d:
    return nn.Conv2d(channels, channels, 3, stride, 1, bias=False, groups=channels)


def _pointwise(inp: int, oup: int) -> list[nn.Module]:
    return [nn.Conv2d(inp, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup), nn.ReLU(inplace=True)]


class InvertedResidual(nn.Module):
    """A ShuffleNetV2 unit from ``inp`` to ``oup`` channels with ``stride``."""

    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        if not 1 <= stride <= 3:
            raise ArgumentError(f"illegal stride value {stride} (1 to 3 expected)")
        self.stride = stride
        branch = oup // 2
        if stride == 1 and inp != branch << 1:
            raise ArgumentError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} "
                                "values. If stride == 1 then inp should be equal to oup // 2 << 1.")
        self.branch1 = nn.Sequential()
        if stride > 1:
            self.branch1 = nn.Sequential(_depthwise(inp, stride), nn.BatchNorm2d(inp),
                                         *_pointwise(inp, branch))
        self.branch2 = nn.Sequential(*_pointwise(inp if stride > 1 else branch, branch),
                                     _depthwise(branch, stride), nn.BatchNorm2d(branch),
                                     *_pointwise(branch, branch))

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == 1:
            kept, changed = x.chunk(2, dim=1)
            out = ember.cat((kept, self.branch2(changed)), dim=1)
        else:
            out = ember.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """torchvision's ``ShuffleNetV2(stages_repeats, stages_out_channels, num_classes=1000,
    inverted_residual=InvertedResidual)``: three stage repeat counts and five widths (stem,
    three stages, last 1×1 convolution); PyTorch's default initialization."""

    def __init__(self, stages_repeats: list[int], stages_out_channels: list[int],
                 num_classes: int = 1000,
                 inverted_residual: Callable[..., nn.Module] = InvertedResidual) -> None:
        super().__init__()
        if len(stages_repeats) != 3:
            raise ArgumentError("expected stages_repeats as list of 3 positive ints, got "
                                f"{stages_repeats}")
        if len(stages_out_channels) != 5:
            raise ArgumentError("expected stages_out_channels as list of 5 positive ints, got "
                                f"{stages_out_channels}")
        self._stage_out_channels = stages_out_channels
        channels = stages_out_channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(3, channels, 3, 2, 1, bias=False),
                                   nn.BatchNorm2d(channels), nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for name, repeats, out in zip(("stage2", "stage3", "stage4"), stages_repeats,
                                      stages_out_channels[1:]):
            units = [inverted_residual(channels, out, 2)]
            units += [inverted_residual(out, out, 1) for _ in range(repeats - 1)]
            setattr(self, name, nn.Sequential(*units))
            channels = out
        self.conv5 = nn.Sequential(*_pointwise(channels, stages_out_channels[-1]))
        self.fc = nn.Linear(stages_out_channels[-1], num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.fc(x.mean([2, 3]))


# the widths (stem, three stages, last 1×1 convolution) of each builder, and its doc
WIDTHS = {"shufflenet_v2_x0_5": ([24, 48, 96, 192, 1024], "ShuffleNetV2 0.5x"),
          "shufflenet_v2_x1_0": ([24, 116, 232, 464, 1024], "ShuffleNetV2 1.0x"),
          "shufflenet_v2_x1_5": ([24, 176, 352, 704, 1024], "ShuffleNetV2 1.5x"),
          "shufflenet_v2_x2_0": ([24, 244, 488, 976, 2048], "ShuffleNetV2 2.0x")}


def _builder(name: str):
    widths, doc = WIDTHS[name]
    return make_builder(name, partial(ShuffleNetV2, [4, 8, 4], widths), doc, __name__)


shufflenet_v2_x0_5 = _builder("shufflenet_v2_x0_5")
shufflenet_v2_x1_0 = _builder("shufflenet_v2_x1_0")
shufflenet_v2_x1_5 = _builder("shufflenet_v2_x1_5")
shufflenet_v2_x2_0 = _builder("shufflenet_v2_x2_0")
