"""Swin Transformers v1 (Liu et al. 2021) and v2 (Liu et al. 2022) tiny/small/base as
torchvision builds them: a 4×4 patchify stem, stages of window attention blocks (every second
block on windows shifted by half a window, masked where the cyclic shift wraps), patch merging
between stages. v1 adds a learned relative position bias table to scaled dot-product
attention; v2 uses cosine attention with a learned per-head temperature, a continuous position
bias from a small MLP over log-spaced relative coordinates, and post-norm residual blocks.

Example:
    >>> model = SwinTransformer([4, 4], 8, [2, 2], [2, 4], [2, 2], num_classes=3)
    >>> model(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 3])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.ops import MLP, Permute, StochasticDepth

__all__ = ["SwinTransformer", "swin_b", "swin_s", "swin_t", "swin_v2_b", "swin_v2_s",
           "swin_v2_t"]

Norm = Callable[..., nn.Module]


def _merge_2x2(x: Tensor) -> Tensor:
    """``(..., H, W, C)`` → ``(..., ⌈H/2⌉, ⌈W/2⌉, 4C)``: each 2×2 patch's four pixels side by
    side (odd sizes zero-padded), in torchvision's order (0,0), (1,0), (0,1), (1,1)."""
    h, w = x.shape[-3], x.shape[-2]
    x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    return ember.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
                      x[..., 1::2, 1::2, :]], -1)


class PatchMerging(nn.Module):
    """Halves the resolution and doubles the channels: 2×2 merge, LayerNorm(4C), Linear."""

    def __init__(self, dim: int, norm_layer: Norm = nn.LayerNorm) -> None:
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.reduction(self.norm(_merge_2x2(x)))


class PatchMergingV2(PatchMerging):
    """v2's patch merging: the norm after the linear reduction, over 2C channels."""

    def __init__(self, dim: int, norm_layer: Norm = nn.LayerNorm) -> None:
        nn.Module.__init__(self)
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.reduction(_merge_2x2(x)))


def _region_labels(padded: list[int], window: list[int], shift: list[int],
                   like: Tensor) -> Tensor:
    """The padded map's region of each position before the cyclic shift: along each axis
    ``[0, size - window)``, ``[size - window, size - shift)`` and ``[size - shift, size)``
    (the first boundary falls between windows, so an unshifted axis splits no window)."""
    label = ember.zeros((), dtype=like.dtype, device=like.device)
    for size, win, sh in zip(padded, window, shift):
        i = ember.arange(size, device=like.device)
        label = label[..., None] * 3 + (i >= size - win).to(like.dtype) + (
            i >= size - sh).to(like.dtype)
    return label


def _to_windows(x: Tensor, window: list[int]) -> Tensor:
    """``(B, *sizes, C)`` (sizes whole windows) → ``(B · windows, prod(window), C)``, windows
    in row-major order."""
    b, *sizes, c = x.shape
    k = len(window)
    split = [v for size, win in zip(sizes, window) for v in (size // win, win)]
    x = x.reshape(b, *split, c).permute(0, *range(1, 2 * k, 2), *range(2, 2 * k + 1, 2),
                                        2 * k + 1)
    return x.reshape(-1, math.prod(window), c)


def _from_windows(x: Tensor, window: list[int], sizes: list[int]) -> Tensor:
    """The inverse of :func:`_to_windows`: back to ``(B, *sizes, C)``."""
    k, c = len(window), x.shape[-1]
    x = x.reshape(-1, *[size // win for size, win in zip(sizes, window)], *window, c)
    x = x.permute(0, *[v for i in range(1, k + 1) for v in (i, i + k)], 2 * k + 1)
    return x.reshape(-1, *sizes, c)


def _shift_mask(padded: list[int], window: list[int], shift: list[int], like: Tensor) -> Tensor:
    """``(windows, N, N)``: 0 between tokens of the same region before the cyclic shift,
    -100 between tokens the shift brought together."""
    label = _to_windows(_region_labels(padded, window, shift, like)[None, ..., None], window)
    label = label[..., 0]
    differs = label[:, None, :] != label[:, :, None]
    return ember.zeros(differs.shape, dtype=like.dtype, device=like.device).masked_fill(
        differs, -100.0)


def _pad_to_multiple(sizes: list[int], steps: list[int]) -> tuple[int, ...]:
    """``F.pad``'s tuple (last axis first) growing each of the trailing ``sizes`` to a multiple
    of its step."""
    pad: list[int] = []
    for size, step in zip(reversed(sizes), reversed(steps)):
        pad += [0, (step - size % step) % step]
    return tuple(pad)


def _window_attention(input: Tensor, qkv_weight: Tensor, proj_weight: Tensor,
                      relative_position_bias: Tensor, window: list[int], num_heads: int,
                      shift: list[int], attention_dropout: float, dropout: float,
                      qkv_bias: Tensor | None, proj_bias: Tensor | None,
                      logit_scale: Tensor | None, training: bool) -> Tensor:
    """Shifted window attention of a ``(B, *sizes, C)`` input over any number of axes, with
    the shift as given: pad to whole windows, roll back, attend window by window, roll
    forward, crop."""
    b, *sizes, c = input.shape
    x = F.pad(input, (0, 0, *_pad_to_multiple(sizes, window)))
    padded = list(x.shape[1:-1])
    axes = tuple(range(1, len(sizes) + 1))
    shifted = sum(shift) > 0
    if shifted:
        x = ember.roll(x, shifts=tuple(-s for s in shift), dims=axes)
    x = _to_windows(x, window)
    windows, n = x.shape[0] // b, x.shape[1]
    if logit_scale is not None and qkv_bias is not None:  # v2: no key bias
        third = qkv_bias.numel() // 3
        qkv_bias = ember.cat([qkv_bias[:third], ember.zeros_like(qkv_bias[third:2 * third]),
                              qkv_bias[2 * third:]])
    qkv = F.linear(x, qkv_weight, qkv_bias).reshape(b * windows, n, 3, num_heads,
                                                     c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * ember.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        attn = (q * (c // num_heads) ** -0.5) @ k.transpose(-2, -1)
    attn = attn + relative_position_bias
    if shifted:
        mask = _shift_mask(padded, window, shift, attn)
        attn = attn.reshape(b, windows, num_heads, n, n) + mask[None, :, None]
        attn = attn.reshape(b * windows, num_heads, n, n)
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)
    x = (attn @ v).transpose(1, 2).reshape(b * windows, n, c)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    x = _from_windows(x, window, padded)
    if shifted:
        x = ember.roll(x, shifts=tuple(shift), dims=axes)
    return x[(slice(None), *[slice(0, size) for size in sizes])]


def shifted_window_attention(input: Tensor, qkv_weight: Tensor, proj_weight: Tensor,
                             relative_position_bias: Tensor, window_size: list[int],
                             num_heads: int, shift_size: list[int],
                             attention_dropout: float = 0.0, dropout: float = 0.0,
                             qkv_bias: Tensor | None = None, proj_bias: Tensor | None = None,
                             logit_scale: Tensor | None = None,
                             training: bool = True) -> Tensor:
    """Multi-head self-attention within (shifted) windows of an ``(N, H, W, C)`` input, as
    torchvision's function: the input is zero-padded to whole windows, rolled back by
    ``shift_size`` (no shift along an axis one window covers), attended window by window
    with ``relative_position_bias`` ``(1, heads, N, N)`` added (and the shift mask), projected,
    rolled forward and cropped. ``logit_scale`` (v2) switches to cosine attention with the key
    bias held at zero.

    Example:
        >>> x, bias = ember.randn(1, 4, 4, 8), ember.zeros(1, 2, 4, 4)
        >>> shifted_window_attention(x, ember.randn(24, 8), ember.randn(8, 8), bias, [2, 2],
        ...                          2, [1, 1]).shape
        ember.Size([1, 4, 4, 8])
    """
    if input.ndim != 4:
        raise ArgumentError(f"shifted_window_attention: expected an (N, H, W, C) input, got shape "
                            f"{tuple(input.shape)}")
    shift = [0 if size <= win else sh
             for size, win, sh in zip(input.shape[1:3], window_size, shift_size)]
    return _window_attention(input, qkv_weight, proj_weight, relative_position_bias,
                             list(window_size), num_heads, shift, attention_dropout, dropout,
                             qkv_bias, proj_bias, logit_scale, training)


def _relative_position_index(window_size: list[int]) -> Tensor:
    """``(N, N)`` for windows of N tokens: for each token pair, the row of its offset in a
    table over all offsets, row-major in ``(d₁ + w₁ - 1, d₂ + w₂ - 1, ...)`` (of
    ``prod(2wᵢ - 1)`` rows)."""
    grids = ember.meshgrid(*[ember.arange(w) for w in window_size], indexing="ij")
    index = ember.zeros(1, 1, dtype=ember.int64)
    for grid, w in zip(grids, window_size):
        grid = grid.flatten()
        index = index * (2 * w - 1) + (grid[:, None] - grid[None, :] + (w - 1))
    return index


class ShiftedWindowAttention(nn.Module):
    """Window attention with a learned relative position bias table (truncated N(0, 0.02²))
    of ``(2wh-1)(2ww-1)`` rows, one column per head; see :func:`shifted_window_attention`."""

    _axes = 2  # window axes

    def __init__(self, dim: int, window_size: list[int], shift_size: list[int], num_heads: int,
                 qkv_bias: bool = True, proj_bias: bool = True, attention_dropout: float = 0.0,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if len(window_size) != self._axes or len(shift_size) != self._axes:
            raise ArgumentError(f"window_size and shift_size must be of length {self._axes}")
        self.window_size, self.shift_size = list(window_size), list(shift_size)
        self.num_heads = num_heads
        self.attention_dropout, self.dropout = attention_dropout, dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self) -> None:
        rows = math.prod(2 * w - 1 for w in self.window_size)
        self.relative_position_bias_table = nn.Parameter(ember.zeros(rows, self.num_heads))
        init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self) -> None:
        self.register_buffer("relative_position_index",
                             _relative_position_index(self.window_size).flatten())

    def _bias_from_table(self, table: Tensor, window: list[int]) -> Tensor:
        """``(1, heads, n, n)`` for windows of ``window`` (n tokens): the first n rows and
        columns of the full window's index, as torchvision slices it."""
        n, full = math.prod(window), math.prod(self.window_size)
        index = self.relative_position_index.reshape(full, full)[:n, :n]
        bias = table[index.flatten()].reshape(n, n, -1)
        return bias.permute(2, 0, 1).unsqueeze(0)

    def get_relative_position_bias(self) -> Tensor:
        """``(1, heads, N, N)``, added to the attention logits."""
        return self._bias_from_table(self.relative_position_bias_table, self.window_size)

    def _attend(self, x: Tensor, logit_scale: Tensor | None) -> Tensor:
        return shifted_window_attention(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
            self.window_size, self.num_heads, self.shift_size, self.attention_dropout,
            self.dropout, self.qkv.bias, self.proj.bias, logit_scale, self.training)

    def forward(self, x: Tensor) -> Tensor:
        return self._attend(x, None)


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """v2's window attention: cosine similarity times ``exp(logit_scale)`` (at most 100,
    starting at 10), plus ``16·sigmoid`` of a continuous position bias that ``cpb_mlp``
    computes from the log-spaced relative coordinates; the key bias stays zero."""

    def __init__(self, dim: int, window_size: list[int], shift_size: list[int], num_heads: int,
                 qkv_bias: bool = True, proj_bias: bool = True, attention_dropout: float = 0.0,
                 dropout: float = 0.0) -> None:
        super().__init__(dim, window_size, shift_size, num_heads, qkv_bias, proj_bias,
                         attention_dropout, dropout)
        self.logit_scale = nn.Parameter((10 * ember.ones(num_heads, 1, 1)).log())
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True),
                                     nn.Linear(512, num_heads, bias=False))
        if qkv_bias:
            with ember.no_grad():
                self.qkv.bias[dim:2 * dim] = 0.0

    def define_relative_position_bias_table(self) -> None:
        wh, ww = self.window_size
        dtype = ember.get_default_dtype()  # torchvision's float32, unless made otherwise
        dy = ember.arange(-(wh - 1), wh, dtype=dtype) / (wh - 1)
        dx = ember.arange(-(ww - 1), ww, dtype=dtype) / (ww - 1)
        table = ember.stack(ember.meshgrid(dy, dx, indexing="ij"), -1).unsqueeze(0) * 8
        # (1, 2wh-1, 2ww-1, 2), offsets in [-8, 8] mapped to sign·log2(1 + |·|) / 3
        self.register_buffer("relative_coords_table",
                             ember.sign(table) * ember.log2(table.abs() + 1.0) / 3.0)

    def get_relative_position_bias(self) -> Tensor:
        table = self.cpb_mlp(self.relative_coords_table).reshape(-1, self.num_heads)
        return 16 * ember.sigmoid(self._bias_from_table(table, self.window_size))

    def forward(self, x: Tensor) -> Tensor:
        return self._attend(x, self.logit_scale)


class SwinTransformerBlock(nn.Module):
    """Pre-norm block: ``x + drop(attn(norm1(x)))``, then ``+ drop(mlp(norm2(·)))`` with a
    GELU MLP of ``mlp_ratio`` width (Xavier-uniform weights, N(0, 1e-6²) biases)."""

    def __init__(self, dim: int, num_heads: int, window_size: list[int],
                 shift_size: list[int], mlp_ratio: float = 4.0, dropout: float = 0.0,
                 attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 norm_layer: Norm = nn.LayerNorm,
                 attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention) -> None:
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads,
                               attention_dropout=attention_dropout, dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None,
                       dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    init.normal_(m.bias, std=1e-6)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    """v2's post-norm block: ``x + drop(norm1(attn(x)))``, then ``+ drop(norm2(mlp(·)))``."""

    def __init__(self, dim: int, num_heads: int, window_size: list[int],
                 shift_size: list[int], mlp_ratio: float = 4.0, dropout: float = 0.0,
                 attention_dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 norm_layer: Norm = nn.LayerNorm,
                 attn_layer: Callable[..., nn.Module] = ShiftedWindowAttentionV2) -> None:
        super().__init__(dim, num_heads, window_size, shift_size, mlp_ratio, dropout,
                         attention_dropout, stochastic_depth_prob, norm_layer, attn_layer)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


def _stages(embed_dim: int, depths: list[int], num_heads: list[int], window_size: list[int],
            block: Callable[..., nn.Module], downsample_layer: Callable[..., nn.Module],
            norm_layer: Norm, stochastic_depth_prob: float, **block_kwargs: Any) -> list[nn.Module]:
    """Swin's stages and the merges between them: stage ``i`` has width ``embed_dim·2^i``;
    odd blocks of a stage shift their windows by half; stochastic depth grows linearly from 0
    to ``stochastic_depth_prob`` over all blocks."""
    layers: list[nn.Module] = []
    total, index = sum(depths), 0
    for stage_index, depth in enumerate(depths):
        dim = embed_dim * 2 ** stage_index
        stage = []
        for i in range(depth):
            stage.append(block(dim, num_heads[stage_index], window_size=window_size,
                               shift_size=[0 if i % 2 == 0 else w // 2 for w in window_size],
                               stochastic_depth_prob=stochastic_depth_prob * index
                               / max(total - 1, 1), norm_layer=norm_layer, **block_kwargs))
            index += 1
        layers.append(nn.Sequential(*stage))
        if stage_index < len(depths) - 1:
            layers.append(downsample_layer(dim, norm_layer))
    return layers


def _init_linears(model: nn.Module) -> None:
    """Every linear layer of ``model``: weights truncated N(0, 0.02²), biases zero."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                init.zeros_(m.bias)


class SwinTransformer(nn.Module):
    """torchvision's ``SwinTransformer(patch_size, embed_dim, depths, num_heads, window_size,
    mlp_ratio=4.0, dropout=0.0, attention_dropout=0.0, stochastic_depth_prob=0.1,
    num_classes=1000, norm_layer=None, block=None, downsample_layer=PatchMerging)``: stage
    ``i`` has width ``embed_dim·2^i``; odd blocks of a stage shift their windows by half;
    stochastic depth grows linearly over all blocks; linears start truncated N(0, 0.02²)."""

    def __init__(self, patch_size: list[int], embed_dim: int, depths: list[int],
                 num_heads: list[int], window_size: list[int], mlp_ratio: float = 4.0,
                 dropout: float = 0.0, attention_dropout: float = 0.0,
                 stochastic_depth_prob: float = 0.1, num_classes: int = 1000,
                 norm_layer: Norm | None = None, block: Callable[..., nn.Module] | None = None,
                 downsample_layer: Callable[..., nn.Module] = PatchMerging) -> None:
        super().__init__()
        self.num_classes = num_classes
        block = block or SwinTransformerBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-5)
        layers: list[nn.Module] = [nn.Sequential(
            nn.Conv2d(3, embed_dim, kernel_size=tuple(patch_size), stride=tuple(patch_size)),
            Permute([0, 2, 3, 1]), norm_layer(embed_dim))]
        layers += _stages(embed_dim, depths, num_heads, window_size, block, downsample_layer,
                          norm_layer, stochastic_depth_prob, mlp_ratio=mlp_ratio,
                          dropout=dropout, attention_dropout=attention_dropout)
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        _init_linears(self)

    def forward(self, x: Tensor) -> Tensor:
        x = self.permute(self.norm(self.features(x)))
        return self.head(self.flatten(self.avgpool(x)))


def _builder(name: str, doc: str, embed_dim: int, depths: list[int], num_heads: list[int],
             drop: float, v2: bool):
    arch: dict[str, Any] = {"patch_size": [4, 4], "embed_dim": embed_dim, "depths": depths,
                            "num_heads": num_heads, "window_size": [8, 8] if v2 else [7, 7]}
    if v2:
        arch.update(block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)
    return make_builder(name, partial(SwinTransformer, **arch), doc, __name__,
                        defaults={"stochastic_depth_prob": drop})


_T, _SB = [2, 2, 6, 2], [2, 2, 18, 2]
_HEADS, _HEADS_B = [3, 6, 12, 24], [4, 8, 16, 32]
swin_t = _builder("swin_t", "Swin-T", 96, _T, _HEADS, 0.2, False)
swin_s = _builder("swin_s", "Swin-S", 96, _SB, _HEADS, 0.3, False)
swin_b = _builder("swin_b", "Swin-B", 128, _SB, _HEADS_B, 0.5, False)
swin_v2_t = _builder("swin_v2_t", "Swin-V2-T", 96, _T, _HEADS, 0.2, True)
swin_v2_s = _builder("swin_v2_s", "Swin-V2-S", 96, _SB, _HEADS, 0.3, True)
swin_v2_b = _builder("swin_v2_b", "Swin-V2-B", 128, _SB, _HEADS_B, 0.5, True)
