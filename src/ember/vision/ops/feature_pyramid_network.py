"""The feature pyramid network (Lin et al., 2017) under torchvision's names: 1×1 lateral
convolutions, a nearest-neighbour top-down pathway and 3×3 output convolutions, plus the extra
levels detectors append (a max-pooled level, or RetinaNet's P6 and P7)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.ops.layers import Conv2dNormActivation

__all__ = ["ExtraFPNBlock", "FeaturePyramidNetwork", "LastLevelMaxPool", "LastLevelP6P7"]


class ExtraFPNBlock(nn.Module):
    """Base of the blocks that add levels on top of the pyramid: ``forward(results, x, names)``
    takes the pyramid's outputs, the original features and the level names, and returns the
    outputs and names with its levels appended."""

    def forward(self, results: list[Tensor], x: list[Tensor],
                names: list[str]) -> tuple[list[Tensor], list[str]]:
        raise NotImplementedError(f"{type(self).__name__} must define forward")


class LastLevelMaxPool(ExtraFPNBlock):
    """Appends a level ``"pool"``: the top output subsampled by 2 (a 1×1 max pool).

    Example:
        >>> out, names = LastLevelMaxPool()([ember.ones(1, 2, 4, 4)], [], ["0"])
        >>> names, out[1].shape
        (['0', 'pool'], ember.Size([1, 2, 2, 2]))
    """

    def forward(self, results: list[Tensor], x: list[Tensor],
                names: list[str]) -> tuple[list[Tensor], list[str]]:
        return results + [F.max_pool2d(results[-1], 1, 2, 0)], names + ["pool"]


class LastLevelP6P7(ExtraFPNBlock):
    """RetinaNet's levels ``"p6"`` and ``"p7"``: two stride-2 3×3 convolutions (ReLU between),
    from the top output when ``in_channels == out_channels``, else from the top input feature.

    Example:
        >>> out, names = LastLevelP6P7(4, 4)([ember.ones(1, 4, 8, 8)], [ember.ones(1, 4, 8, 8)],
        ...                                  ["0"])
        >>> names, out[2].shape
        (['0', 'p6', 'p7'], ember.Size([1, 4, 2, 2]))
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for conv in (self.p6, self.p7):
            nn.init.kaiming_uniform_(conv.weight, a=1)
            nn.init.constant_(conv.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(self, results: list[Tensor], x: list[Tensor],
                names: list[str]) -> tuple[list[Tensor], list[str]]:
        p6 = self.p6(results[-1] if self.use_P5 else x[-1])
        p7 = self.p7(F.relu(p6))
        return results + [p6, p7], names + ["p6", "p7"]


class FeaturePyramidNetwork(nn.Module):
    """Feature maps of decreasing resolution (an ordered dict, finest first) to maps of
    ``out_channels`` each, with the same names and sizes: every level adds the upsampled
    level above it to its own 1×1 projection, then a 3×3 convolution smooths the sum.

    Example:
        >>> fpn = FeaturePyramidNetwork([4, 8], 6)
        >>> out = fpn({"a": ember.randn(1, 4, 8, 8), "b": ember.randn(1, 8, 4, 4)})
        >>> [(k, tuple(v.shape)) for k, v in out.items()]
        [('a', (1, 6, 8, 8)), ('b', (1, 6, 4, 4))]
    """

    def __init__(self, in_channels_list: list[int], out_channels: int,
                 extra_blocks: ExtraFPNBlock | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if any(c == 0 for c in in_channels_list):
            raise ArgumentError("FeaturePyramidNetwork: in_channels=0 is currently not supported")
        self.inner_blocks = nn.ModuleList(
            Conv2dNormActivation(c, out_channels, kernel_size=1, padding=0,
                                 norm_layer=norm_layer, activation_layer=None)
            for c in in_channels_list)
        self.layer_blocks = nn.ModuleList(
            Conv2dNormActivation(out_channels, out_channels, kernel_size=3,
                                 norm_layer=norm_layer, activation_layer=None)
            for _ in in_channels_list)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None and not isinstance(extra_blocks, ExtraFPNBlock):
            raise TypeError(f"FeaturePyramidNetwork: extra_blocks should be an ExtraFPNBlock, "
                            f"got {type(extra_blocks).__name__}")
        self.extra_blocks = extra_blocks

    def forward(self, x: dict[str, Tensor]) -> dict[str, Tensor]:
        names, features = list(x.keys()), list(x.values())
        last_inner = self.inner_blocks[-1](features[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(features) - 2, -1, -1):
            lateral = self.inner_blocks[idx](features[idx])
            top_down = F.interpolate(last_inner, size=tuple(lateral.shape[-2:]), mode="nearest")
            last_inner = lateral + top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, features, names)
        return OrderedDict(zip(names, results))
