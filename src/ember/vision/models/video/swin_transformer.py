"""torchvision's Video Swin Transformers (Liu et al., "Video Swin Transformer", 2021), tiny,
small and base: a 2×4×4 patch embedding, stages of 3-D (shifted) window attention blocks over
(T, H, W) token grids with a learned relative position bias over 3-D offsets, and 2-D patch
merging (height and width only) between stages; the 2-D Swin's blocks, merges and attention
with a third window axis. A window longer than the clip along an axis shrinks to it (no
shift there).

Example:
    >>> model = SwinTransformer3d([2, 4, 4], 8, [2, 2], [2, 4], [2, 2, 2], num_classes=3)
    >>> model(ember.randn(1, 3, 4, 32, 32)).shape
    ember.Size([1, 3])
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.vision.models._api import make_builder
from ember.vision.models.swin_transformer import (
    PatchMerging,
    ShiftedWindowAttention,
    SwinTransformerBlock,
    _init_linears,
    _pad_to_multiple,
    _relative_position_index,
    _stages,
    _window_attention,
)

__all__ = ["PatchEmbed3d", "ShiftedWindowAttention3d", "SwinTransformer3d",
           "shifted_window_attention_3d", "swin3d_b", "swin3d_s", "swin3d_t"]

Norm = Callable[..., nn.Module]


def shifted_window_attention_3d(input: Tensor, qkv_weight: Tensor, proj_weight: Tensor,
                                relative_position_bias: Tensor, window_size: list[int],
                                num_heads: int, shift_size: list[int],
                                attention_dropout: float = 0.0, dropout: float = 0.0,
                                qkv_bias: Tensor | None = None,
                                proj_bias: Tensor | None = None,
                                training: bool = True) -> Tensor:
    """Multi-head self-attention within (shifted) 3-D windows of a ``(B, T, H, W, C)`` input,
    as torchvision's function: zero-padded to whole windows, rolled back by ``shift_size``
    (taken as given), attended window by window with ``relative_position_bias``
    ``(1, heads, N, N)`` and the shift mask added, projected, rolled forward and cropped.

    Example:
        >>> x, bias = ember.randn(1, 2, 4, 4, 8), ember.zeros(1, 2, 8, 8)
        >>> shifted_window_attention_3d(x, ember.randn(24, 8), ember.randn(8, 8), bias,
        ...                             [2, 2, 2], 2, [1, 1, 1]).shape
        ember.Size([1, 2, 4, 4, 8])
    """
    if input.ndim != 5:
        raise ArgumentError(f"shifted_window_attention_3d: expected a (B, T, H, W, C) input, "
                            f"got shape {tuple(input.shape)}")
    return _window_attention(input, qkv_weight, proj_weight, relative_position_bias,
                             list(window_size), num_heads, list(shift_size), attention_dropout,
                             dropout, qkv_bias, proj_bias, None, training)


class ShiftedWindowAttention3d(ShiftedWindowAttention):
    """3-D window attention with a relative position bias table (truncated N(0, 0.02²)) of
    ``(2wt-1)(2wh-1)(2ww-1)`` rows, one column per head, and torchvision's ``(N, N)`` index
    buffer; a window longer than the input along an axis shrinks to it, unshifted there, and
    takes the first rows and columns of the full window's bias. See
    :func:`shifted_window_attention_3d`."""

    _axes = 3

    def define_relative_position_index(self) -> None:
        self.register_buffer("relative_position_index",
                             _relative_position_index(self.window_size))

    def get_relative_position_bias(self, window_size: list[int] | None = None) -> Tensor:
        """``(1, heads, N, N)`` for windows of ``window_size`` (default: the full window)."""
        return self._bias_from_table(self.relative_position_bias_table,
                                     window_size or self.window_size)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 5:
            raise ArgumentError(f"ShiftedWindowAttention3d: expected a (B, T, H, W, C) input, "
                                f"got shape {tuple(x.shape)}")
        sizes = x.shape[1:4]
        window = [min(size, w) for size, w in zip(sizes, self.window_size)]
        shift = [0 if size <= w else s for size, w, s in zip(sizes, self.window_size,
                                                              self.shift_size)]
        return shifted_window_attention_3d(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(window),
            window, self.num_heads, shift, self.attention_dropout, self.dropout, self.qkv.bias,
            self.proj.bias, self.training)


class PatchEmbed3d(nn.Module):
    """Clips ``(B, C, T, H, W)`` zero-padded to whole patches, a patch-strided ``Conv3d`` to
    ``embed_dim`` channels, channels moved last, then ``norm_layer`` (if any)."""

    def __init__(self, patch_size: list[int], in_channels: int = 3, embed_dim: int = 96,
                 norm_layer: Norm | None = None) -> None:
        super().__init__()
        self.tuple_patch_size = tuple(patch_size)
        self.proj = nn.Conv3d(in_channels, embed_dim, kernel_size=self.tuple_patch_size,
                              stride=self.tuple_patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer is not None else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        x = F.pad(x, _pad_to_multiple(list(x.shape[-3:]), list(self.tuple_patch_size)))
        return self.norm(self.proj(x).permute(0, 2, 3, 4, 1))


class SwinTransformer3d(nn.Module):
    """torchvision's ``SwinTransformer3d(patch_size, embed_dim, depths, num_heads, window_size,
    mlp_ratio=4.0, dropout=0.0, attention_dropout=0.0, stochastic_depth_prob=0.1,
    num_classes=400, norm_layer=None, block=None, downsample_layer=PatchMerging,
    patch_embed=None)``: the 2-D Swin's stages (``block`` gets
    ``attn_layer=ShiftedWindowAttention3d``), then norm, average pool over (T, H, W) and a
    linear head; linears start truncated N(0, 0.02²).

    Example:
        >>> SwinTransformer3d([2, 4, 4], 8, [1], [2], [2, 2, 2], num_classes=3).head
        Linear(in_features=8, out_features=3, bias=True)
    """

    def __init__(self, patch_size: list[int], embed_dim: int, depths: list[int],
                 num_heads: list[int], window_size: list[int], mlp_ratio: float = 4.0,
                 dropout: float = 0.0, attention_dropout: float = 0.0,
                 stochastic_depth_prob: float = 0.1, num_classes: int = 400,
                 norm_layer: Norm | None = None, block: Callable[..., nn.Module] | None = None,
                 downsample_layer: Callable[..., nn.Module] = PatchMerging,
                 patch_embed: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.num_classes = num_classes
        block = block or SwinTransformerBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-5)
        self.patch_embed = (patch_embed or PatchEmbed3d)(
            patch_size=patch_size, embed_dim=embed_dim, norm_layer=norm_layer)
        self.pos_drop = nn.Dropout(p=dropout)
        self.features = nn.Sequential(*_stages(
            embed_dim, depths, num_heads, window_size, block, downsample_layer, norm_layer,
            stochastic_depth_prob, mlp_ratio=mlp_ratio, dropout=dropout,
            attention_dropout=attention_dropout, attn_layer=ShiftedWindowAttention3d))
        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool3d(1)
        self.head = nn.Linear(self.num_features, num_classes)
        _init_linears(self)

    def forward(self, x: Tensor) -> Tensor:
        x = self.norm(self.features(self.pos_drop(self.patch_embed(x))))
        return self.head(self.avgpool(x.permute(0, 4, 1, 2, 3)).flatten(1))


def _builder(name: str, doc: str, embed_dim: int, depths: list[int], num_heads: list[int]):
    arch = {"patch_size": [2, 4, 4], "embed_dim": embed_dim, "depths": depths,
            "num_heads": num_heads, "window_size": [8, 7, 7]}
    return make_builder(name, partial(SwinTransformer3d, **arch), doc, __name__,
                        defaults={"stochastic_depth_prob": 0.1})


swin3d_t = _builder("swin3d_t", "Video Swin-T", 96, [2, 2, 6, 2], [3, 6, 12, 24])
swin3d_s = _builder("swin3d_s", "Video Swin-S", 96, [2, 2, 18, 2], [3, 6, 12, 24])
swin3d_b = _builder("swin3d_b", "Video Swin-B", 128, [2, 2, 18, 2], [4, 8, 16, 32])
