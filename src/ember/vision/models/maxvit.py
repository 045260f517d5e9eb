"""MaxViT (Tu et al. 2022) as torchvision builds it: a convolutional stem, then stages of
layers that each run an MBConv block (with squeeze-and-excitation), attention within
``partition_size``² windows, and attention across a ``partition_size``² grid dilated over the
whole map, both with a learned relative position bias.

Example:
    >>> model = MaxVit((32, 32), 8, 2, [8, 16], [1, 1], head_dim=4,
    ...                stochastic_depth_prob=0.0, num_classes=3)
    >>> model(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 3])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.models.swin_transformer import _relative_position_index
from ember.vision.ops import Conv2dNormActivation, SqueezeExcitation, StochasticDepth

__all__ = ["MaxVit", "maxvit_t"]

Layer = Callable[..., nn.Module]


def _halved(size: tuple[int, int]) -> tuple[int, int]:
    """The size after a 3×3 stride-2 convolution padded by 1."""
    return ((size[0] - 1) // 2 + 1, (size[1] - 1) // 2 + 1)


class MBConv(nn.Module):
    """Pre-norm inverted bottleneck: norm, 1×1 expansion, depthwise 3×3 (strided), SE (SiLU),
    1×1 projection; the shortcut average-pools and projects where the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, expansion_ratio: float,
                 squeeze_ratio: float, stride: int, activation_layer: Layer, norm_layer: Layer,
                 p_stochastic_dropout: float = 0.0) -> None:
        super().__init__()
        if stride != 1 or in_channels != out_channels:
            pool = [nn.AvgPool2d(kernel_size=3, stride=stride, padding=1)] if stride == 2 else []
            self.proj: nn.Module = nn.Sequential(*pool, nn.Conv2d(in_channels, out_channels,
                                                                  kernel_size=1, bias=True))
        else:
            self.proj = nn.Identity()
        mid = int(out_channels * expansion_ratio)
        self.stochastic_depth: nn.Module = (StochasticDepth(p_stochastic_dropout, "row")
                                            if p_stochastic_dropout else nn.Identity())
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["pre_norm"] = norm_layer(in_channels)
        layers["conv_a"] = Conv2dNormActivation(in_channels, mid, kernel_size=1, padding=0,
                                                activation_layer=activation_layer,
                                                norm_layer=norm_layer, inplace=None)
        layers["conv_b"] = Conv2dNormActivation(mid, mid, kernel_size=3, stride=stride,
                                                padding=1, activation_layer=activation_layer,
                                                norm_layer=norm_layer, groups=mid, inplace=None)
        layers["squeeze_excitation"] = SqueezeExcitation(mid, int(out_channels * squeeze_ratio),
                                                         activation=nn.SiLU)
        layers["conv_c"] = nn.Conv2d(mid, out_channels, kernel_size=1, bias=True)
        self.layers = nn.Sequential(layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(x) + self.stochastic_depth(self.layers(x))


class RelativePositionalMultiHeadAttention(nn.Module):
    """Self-attention over the last-but-one axis of ``(B, G, P, D)`` (``P = max_seq_len``, a
    square), with a relative position bias table; as torchvision, keys are scaled by
    ``feat_dim ** -0.5``."""

    def __init__(self, feat_dim: int, head_dim: int, max_seq_len: int) -> None:
        super().__init__()
        if feat_dim % head_dim != 0:
            raise ArgumentError(f"feat_dim: {feat_dim} must be divisible by head_dim: {head_dim}")
        self.n_heads, self.head_dim = feat_dim // head_dim, head_dim
        self.size = int(max_seq_len ** 0.5)
        self.max_seq_len = max_seq_len
        self.to_qkv = nn.Linear(feat_dim, self.n_heads * head_dim * 3)
        self.scale_factor = feat_dim ** -0.5
        self.merge = nn.Linear(head_dim * self.n_heads, feat_dim)
        self.relative_position_bias_table = nn.Parameter(
            ember.empty((2 * self.size - 1) ** 2, self.n_heads))
        self.register_buffer("relative_position_index", _relative_position_index(
            [self.size, self.size]).reshape(max_seq_len, max_seq_len))
        init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_relative_positional_bias(self) -> Tensor:
        bias = self.relative_position_bias_table[self.relative_position_index.reshape(-1)]
        return bias.reshape(self.max_seq_len, self.max_seq_len, -1).permute(2, 0, 1)[None]

    def forward(self, x: Tensor) -> Tensor:
        b, g, p, d = x.shape
        q, k, v = (t.reshape(b, g, p, self.n_heads, self.head_dim).permute(0, 1, 3, 2, 4)
                   for t in self.to_qkv(x).chunk(3, dim=-1))
        attn = F.softmax(q @ (k * self.scale_factor).transpose(-2, -1)
                         + self.get_relative_positional_bias(), dim=-1)
        return self.merge((attn @ v).permute(0, 1, 3, 2, 4).reshape(b, g, p, d))


class PartitionAttentionLayer(nn.Module):
    """Pre-norm attention and MLP over partitions of a ``(B, C, H, W)`` map: ``"window"``
    attends within each ``partition_size``² block, ``"grid"`` across a ``partition_size``²
    grid of pixels spaced ``H / partition_size`` apart."""

    def __init__(self, in_channels: int, head_dim: int, partition_size: int,
                 partition_type: str, grid_size: tuple[int, int], mlp_ratio: int,
                 activation_layer: Layer, norm_layer: Layer, attention_dropout: float,
                 mlp_dropout: float, p_stochastic_dropout: float) -> None:
        super().__init__()
        if partition_type not in ("grid", "window"):
            raise ArgumentError("partition_type must be either 'grid' or 'window'")
        self.n_heads, self.head_dim = in_channels // head_dim, head_dim
        self.n_partitions = grid_size[0] // partition_size
        self.partition_type, self.grid_size = partition_type, grid_size
        self.p = partition_size if partition_type == "window" else self.n_partitions
        self.attn_layer = nn.Sequential(
            norm_layer(in_channels),
            RelativePositionalMultiHeadAttention(in_channels, head_dim, partition_size ** 2),
            nn.Dropout(attention_dropout))
        self.mlp_layer = nn.Sequential(
            nn.LayerNorm(in_channels), nn.Linear(in_channels, in_channels * mlp_ratio),
            activation_layer(), nn.Linear(in_channels * mlp_ratio, in_channels),
            nn.Dropout(mlp_dropout))
        self.stochastic_dropout = StochasticDepth(p_stochastic_dropout, "row")

    def forward(self, x: Tensor) -> Tensor:
        b, c, h, w = x.shape
        p = self.p
        if h % p or w % p:
            raise ArgumentError(f"PartitionAttentionLayer: Grid size must be divisible by "
                                f"partition size. Got a {h}x{w} input and partition size {p}")
        # (B, C, H, W) -> (B, windows, P*P, C); for "grid" the two middle axes swap
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        x = x.reshape(b, (h // p) * (w // p), p * p, c)
        if self.partition_type == "grid":
            x = x.transpose(1, 2)
        x = x + self.stochastic_dropout(self.attn_layer(x))
        x = x + self.stochastic_dropout(self.mlp_layer(x))
        if self.partition_type == "grid":
            x = x.transpose(1, 2)
        x = x.reshape(b, h // p, w // p, p, p, c).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, c, h, w)


class MaxVitLayer(nn.Module):
    """``layers``: ``MBconv``, then ``window_attention`` and ``grid_attention``."""

    def __init__(self, in_channels: int, out_channels: int, squeeze_ratio: float,
                 expansion_ratio: float, stride: int, norm_layer: Layer,
                 activation_layer: Layer, head_dim: int, mlp_ratio: int, mlp_dropout: float,
                 attention_dropout: float, p_stochastic_dropout: float, partition_size: int,
                 grid_size: tuple[int, int]) -> None:
        super().__init__()
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["MBconv"] = MBConv(in_channels, out_channels, expansion_ratio, squeeze_ratio,
                                  stride, activation_layer, norm_layer, p_stochastic_dropout)
        for kind in ("window", "grid"):
            layers[f"{kind}_attention"] = PartitionAttentionLayer(
                out_channels, head_dim, partition_size, kind, grid_size, mlp_ratio,
                activation_layer, nn.LayerNorm, attention_dropout, mlp_dropout,
                p_stochastic_dropout)
        self.layers = nn.Sequential(layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x)


class MaxVitBlock(nn.Module):
    """``n_layers`` :class:`MaxVitLayer`, the first one strided."""

    def __init__(self, in_channels: int, out_channels: int, squeeze_ratio: float,
                 expansion_ratio: float, norm_layer: Layer, activation_layer: Layer,
                 head_dim: int, mlp_ratio: int, mlp_dropout: float, attention_dropout: float,
                 partition_size: int, input_grid_size: tuple[int, int], n_layers: int,
                 p_stochastic: list[float]) -> None:
        super().__init__()
        if len(p_stochastic) != n_layers:
            raise ArgumentError(f"p_stochastic must have length n_layers={n_layers}, got "
                                f"p_stochastic={p_stochastic}.")
        self.grid_size = _halved(input_grid_size)
        self.layers = nn.ModuleList([MaxVitLayer(
            in_channels if i == 0 else out_channels, out_channels, squeeze_ratio,
            expansion_ratio, 2 if i == 0 else 1, norm_layer, activation_layer, head_dim,
            mlp_ratio, mlp_dropout, attention_dropout, p, partition_size, self.grid_size)
            for i, p in enumerate(p_stochastic)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class MaxVit(nn.Module):
    """torchvision's ``MaxVit(input_size, stem_channels, partition_size, block_channels,
    block_layers, head_dim, stochastic_depth_prob, norm_layer=None, activation_layer=nn.GELU,
    squeeze_ratio=0.25, expansion_ratio=4, mlp_ratio=4, mlp_dropout=0.0,
    attention_dropout=0.0, num_classes=1000)``: every block's input must divide by
    ``partition_size``; weights start N(0, 0.02²); the default norm is
    ``BatchNorm2d(eps=1e-3, momentum=0.99)``, as torchvision's."""

    def __init__(self, input_size: tuple[int, int], stem_channels: int, partition_size: int,
                 block_channels: list[int], block_layers: list[int], head_dim: int,
                 stochastic_depth_prob: float, norm_layer: Layer | None = None,
                 activation_layer: Layer = nn.GELU, squeeze_ratio: float = 0.25,
                 expansion_ratio: float = 4, mlp_ratio: int = 4, mlp_dropout: float = 0.0,
                 attention_dropout: float = 0.0, num_classes: int = 1000) -> None:
        super().__init__()
        # torchvision's momentum=0.99 in PyTorch's convention (the batch weighs 0.99), kept as is
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=1e-3, momentum=0.99)
        sizes, size = [], _halved(tuple(input_size))
        for _ in block_channels:
            size = _halved(size)
            sizes.append(size)
        for i, s in enumerate(sizes):
            if s[0] % partition_size or s[1] % partition_size:
                raise ArgumentError(f"Input size {s} of block {i} is not divisible by partition "
                                    f"size {partition_size}. Consider changing the partition "
                                    f"size or the input size.\nCurrent configuration yields the "
                                    f"following block input sizes: {sizes}.")
        self.stem = nn.Sequential(
            Conv2dNormActivation(3, stem_channels, 3, stride=2, norm_layer=norm_layer,
                                 activation_layer=activation_layer, bias=False, inplace=None),
            Conv2dNormActivation(stem_channels, stem_channels, 3, stride=1, norm_layer=None,
                                 activation_layer=None, bias=True))
        self.partition_size = partition_size
        total = sum(block_layers)
        probs = [stochastic_depth_prob * i / (total - 1) if total > 1 else 0.0
                 for i in range(total)]
        grid, start = _halved(tuple(input_size)), 0
        self.blocks = nn.ModuleList()
        for cin, cout, n in zip([stem_channels, *block_channels[:-1]], block_channels,
                                block_layers):
            self.blocks.append(MaxVitBlock(cin, cout, squeeze_ratio, expansion_ratio,
                                           norm_layer, activation_layer, head_dim, mlp_ratio,
                                           mlp_dropout, attention_dropout, partition_size,
                                           grid, n, probs[start:start + n]))
            grid, start = self.blocks[-1].grid_size, start + n
        width = block_channels[-1]
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(width), nn.Linear(width, width),
            nn.Tanh(), nn.Linear(width, num_classes, bias=False))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                init.ones_(m.weight)
                init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.classifier(x)


def _maxvit(input_size: tuple[int, int] = (224, 224), **kwargs: Any) -> MaxVit:
    return MaxVit(input_size, **kwargs)


maxvit_t = make_builder("maxvit_t", partial(_maxvit, stem_channels=64,
                                            block_channels=[64, 128, 256, 512],
                                            block_layers=[2, 2, 5, 2], head_dim=32,
                                            stochastic_depth_prob=0.2, partition_size=7),
                        "MaxViT-T", __name__)
