"""ConvNeXt tiny/small/base/large (Liu et al. 2022) as torchvision builds them: a 4×4 patchify
stem, stages of blocks (7×7 depthwise convolution, LayerNorm, 4× inverted MLP with GELU,
layer scale, stochastic depth) and 2×2 strided downsampling between stages.

Example:
    >>> model = ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)], num_classes=3)
    >>> model(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 3])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.ops import Conv2dNormActivation, Permute, StochasticDepth

__all__ = ["CNBlock", "CNBlockConfig", "ConvNeXt", "LayerNorm2d", "convnext_base",
           "convnext_large", "convnext_small", "convnext_tiny"]


class LayerNorm2d(nn.LayerNorm):
    """``LayerNorm`` over the channels of an ``(N, C, H, W)`` tensor."""

    def forward(self, x: Tensor) -> Tensor:
        x = F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias,
                         self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """Depthwise 7×7 convolution, channels-last LayerNorm, Linear to 4× width, GELU, Linear
    back, times the learned ``layer_scale`` per channel; stochastic depth, then the residual."""

    def __init__(self, dim: int, layer_scale: float, stochastic_depth_prob: float,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]), norm_layer(dim), nn.Linear(dim, 4 * dim, bias=True),
            nn.GELU(), nn.Linear(4 * dim, dim, bias=True), Permute([0, 3, 1, 2]))
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, x: Tensor) -> Tensor:
        return self.stochastic_depth(self.layer_scale * self.block(x)) + x


@dataclass
class CNBlockConfig:
    """One stage: its width, the width of the downsampling after it (None for the last
    stage) and its block count."""

    input_channels: int
    out_channels: int | None
    num_layers: int


class ConvNeXt(nn.Module):
    """torchvision's ``ConvNeXt(block_setting, stochastic_depth_prob=0.0, layer_scale=1e-6,
    num_classes=1000, block=None, norm_layer=None)``: the stochastic-depth probability grows
    linearly from 0 at the first block to ``stochastic_depth_prob`` at the last."""

    def __init__(self, block_setting: list[CNBlockConfig], stochastic_depth_prob: float = 0.0,
                 layer_scale: float = 1e-6, num_classes: int = 1000,
                 block: Callable[..., nn.Module] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None, **kwargs: Any) -> None:
        super().__init__()
        if not block_setting:
            raise ArgumentError("The block_setting should not be empty")
        if not (isinstance(block_setting, Sequence)
                and all(isinstance(s, CNBlockConfig) for s in block_setting)):
            raise TypeError("The block_setting should be List[CNBlockConfig]")
        block = block or CNBlock
        norm_layer = norm_layer or partial(LayerNorm2d, eps=1e-6)
        layers: list[nn.Module] = [Conv2dNormActivation(
            3, block_setting[0].input_channels, kernel_size=4, stride=4, padding=0,
            norm_layer=norm_layer, activation_layer=None, bias=True)]
        total = sum(cnf.num_layers for cnf in block_setting)
        index = 0
        for cnf in block_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                p = stochastic_depth_prob * index / (total - 1.0) if total > 1 else 0.0
                stage.append(block(cnf.input_channels, layer_scale, p))
                index += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels,
                                                      kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        channels = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(norm_layer(channels), nn.Flatten(1),
                                        nn.Linear(channels, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)))


def _convnext(widths: tuple[int, ...], depths: tuple[int, ...], **kwargs: Any) -> ConvNeXt:
    outs = (*widths[1:], None)
    setting = [CNBlockConfig(w, o, d) for w, o, d in zip(widths, outs, depths)]
    return ConvNeXt(setting, **kwargs)


def _builder(name: str, widths: tuple[int, ...], depths: tuple[int, ...], drop: float):
    return make_builder(name, partial(_convnext, widths, depths), f"ConvNeXt-{name[9:]}",
                        __name__, defaults={"stochastic_depth_prob": drop})


convnext_tiny = _builder("convnext_tiny", (96, 192, 384, 768), (3, 3, 9, 3), 0.1)
convnext_small = _builder("convnext_small", (96, 192, 384, 768), (3, 3, 27, 3), 0.4)
convnext_base = _builder("convnext_base", (128, 256, 512, 1024), (3, 3, 27, 3), 0.5)
convnext_large = _builder("convnext_large", (192, 384, 768, 1536), (3, 3, 27, 3), 0.5)
