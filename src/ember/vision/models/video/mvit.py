"""torchvision's Multiscale Vision Transformers for video: MViT v1 base (Fan et al., 2021) and
MViT v2 small (Li et al., 2022). A strided 3×7×7 convolution cuts the clip into tokens, a class
token joins them, and multiscale blocks attend with queries, keys and values pooled by
depthwise 3-D convolutions (keys and values always, queries where a stage halves the
resolution, the skip path then max-pooled alike). v1 adds learned absolute space-time
positions; v2 adds decomposed relative position terms to the attention logits, a pooled-query
residual, and projects channels after attention. The token grid is fixed at construction
(``spatial_size``, ``temporal_size``): clips must have that size.

Example:
    >>> setting = [MSBlockConfig(1, 8, 16, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 2, 2])]
    >>> model = MViT((32, 32), 4, setting, True, False, True, True, num_classes=3)
    >>> model(ember.randn(1, 3, 4, 32, 32)).shape
    ember.Size([1, 3])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError, ShapeError
from ember.nn import functional as F
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.ops import MLP, StochasticDepth

__all__ = ["MSBlockConfig", "MViT", "mvit_v1_b", "mvit_v2_s"]

Norm = Callable[..., nn.Module]
THW = tuple[int, int, int]


@dataclass
class MSBlockConfig:
    """One multiscale block: heads, input and output channels, and the query and key/value
    pooling kernels and strides (``[]``: no pooling)."""

    num_heads: int
    input_channels: int
    output_channels: int
    kernel_q: list[int]
    kernel_kv: list[int]
    stride_q: list[int]
    stride_kv: list[int]


class Pool(nn.Module):
    """Pools the ``(B, [heads,] 1 + T·H·W, C)`` tokens of a ``thw`` grid, the class token
    (first) passed by; ``norm``/``activation`` after the pool (before it with
    ``norm_before_pool``). Returns the tokens and the pooled grid."""

    def __init__(self, pool: nn.Module, norm: nn.Module | None,
                 activation: nn.Module | None = None, norm_before_pool: bool = False) -> None:
        super().__init__()
        self.pool = pool
        layers = [m for m in (norm, activation) if m is not None]
        self.norm_act = nn.Sequential(*layers) if layers else None
        self.norm_before_pool = norm_before_pool

    def forward(self, x: Tensor, thw: THW) -> tuple[Tensor, THW]:
        if x.ndim not in (3, 4):
            raise ShapeError(f"Pool: expected (B, N, C) or (B, heads, N, C) tokens, got shape "
                             f"{tuple(x.shape)}")
        flat = x.ndim == 3
        if flat:
            x = x.unsqueeze(1)
        class_token, x = x[:, :, :1], x[:, :, 1:]
        b, n, _, c = x.shape
        x = x.transpose(2, 3).reshape(b * n, c, *thw)
        if self.norm_before_pool and self.norm_act is not None:
            x = self.norm_act(x)
        x = self.pool(x)
        t, h, w = x.shape[2:]
        x = ember.cat([class_token, x.reshape(b, n, c, -1).transpose(2, 3)], 2)
        if not self.norm_before_pool and self.norm_act is not None:
            x = self.norm_act(x)
        return (x.squeeze(1) if flat else x), (t, h, w)


def _interpolate(embedding: Tensor, d: int) -> Tensor:
    """A ``(L, C)`` table linearly resized to ``d`` rows (unchanged when ``L == d``)."""
    if embedding.shape[0] == d:
        return embedding
    return F.interpolate(embedding.permute(1, 0).unsqueeze(0), size=d,
                         mode="linear").squeeze(0).permute(1, 0)


def _relative_rows(q: int, k: int) -> Tensor:
    """``(q, k)``: the table row of each query-key pair along one axis, the shorter axis's
    coordinates scaled to the longer's, as torchvision computes them (in the default dtype,
    truncated)."""
    q_ratio, k_ratio = max(k / q, 1.0), max(q / k, 1.0)
    dist = ember.arange(q)[:, None] * q_ratio - (ember.arange(k)[None, :] + (1.0 - k)) * k_ratio
    return dist.long()


def _add_rel_pos(attn: Tensor, q: Tensor, q_thw: THW, k_thw: THW, rel_pos_h: Tensor,
                 rel_pos_w: Tensor, rel_pos_t: Tensor) -> Tensor:
    """MViT v2's decomposed relative positions: the logits between grid tokens gain
    ``q · R_t[Δt] + q · R_h[Δh] + q · R_w[Δw]`` (tables resized to the grids' offsets)."""
    tables = []
    for table, qs, ks in zip((rel_pos_t, rel_pos_h, rel_pos_w), q_thw, k_thw):
        tables.append(_interpolate(table, 2 * max(qs, ks) - 1)[_relative_rows(qs, ks)])
    b, heads, _, dim = q.shape
    r_q = q[:, :, 1:].reshape(b, heads, *q_thw, dim)
    rel_t = ember.einsum("bythwc,tkc->bythwk", r_q, tables[0])
    rel_h = ember.einsum("bythwc,hkc->bythwk", r_q, tables[1])
    rel_w = ember.einsum("bythwc,wkc->bythwk", r_q, tables[2])
    rel_pos = (rel_t[..., :, None, None] + rel_h[..., None, :, None]
               + rel_w[..., None, None, :]).reshape(b, heads, math.prod(q_thw), math.prod(k_thw))
    return attn + F.pad(rel_pos, (1, 0, 1, 0))


def _depthwise_pool(dim: int, kernel: list[int], stride: list[int], norm_layer: Norm) -> Pool:
    return Pool(nn.Conv3d(dim, dim, tuple(kernel), stride=tuple(stride),
                          padding=tuple(k // 2 for k in kernel), groups=dim, bias=False),
                norm_layer(dim))


class MultiscaleAttention(nn.Module):
    """Multi-head attention of ``(B, 1 + T·H·W, C)`` tokens with queries, keys and values each
    pooled by a depthwise convolution and norm (where its kernel or stride exceeds 1);
    ``rel_pos_embed``: v2's relative positions; ``residual_pool``: the pooled queries added to
    the output (the class token's too with ``residual_with_cls_embed``)."""

    def __init__(self, input_size: list[int], embed_dim: int, output_dim: int, num_heads: int,
                 kernel_q: list[int], kernel_kv: list[int], stride_q: list[int],
                 stride_kv: list[int], residual_pool: bool, residual_with_cls_embed: bool,
                 rel_pos_embed: bool, dropout: float = 0.0,
                 norm_layer: Norm = nn.LayerNorm) -> None:
        super().__init__()
        self.embed_dim, self.output_dim, self.num_heads = embed_dim, output_dim, num_heads
        self.head_dim = output_dim // num_heads
        self.scaler = 1.0 / math.sqrt(self.head_dim)
        self.residual_pool, self.residual_with_cls_embed = residual_pool, residual_with_cls_embed
        self.qkv = nn.Linear(embed_dim, 3 * output_dim)
        layers: list[nn.Module] = [nn.Linear(output_dim, output_dim)]
        if dropout > 0.0:
            layers.append(nn.Dropout(dropout))
        self.project = nn.Sequential(*layers)
        pools_q = math.prod(kernel_q) > 1 or math.prod(stride_q) > 1
        pools_kv = math.prod(kernel_kv) > 1 or math.prod(stride_kv) > 1
        pool = partial(_depthwise_pool, self.head_dim, norm_layer=norm_layer)
        self.pool_q = pool(kernel_q, stride_q) if pools_q else None
        self.pool_k = pool(kernel_kv, stride_kv) if pools_kv else None
        self.pool_v = pool(kernel_kv, stride_kv) if pools_kv else None
        self.rel_pos_h = self.rel_pos_w = self.rel_pos_t = None
        if rel_pos_embed:
            size = max(input_size[1:])
            q_size = size // stride_q[1] if len(stride_q) > 0 else size
            kv_size = size // stride_kv[1] if len(stride_kv) > 0 else size
            spatial, temporal = 2 * max(q_size, kv_size) - 1, 2 * input_size[0] - 1
            self.rel_pos_h = nn.Parameter(ember.zeros(spatial, self.head_dim))
            self.rel_pos_w = nn.Parameter(ember.zeros(spatial, self.head_dim))
            self.rel_pos_t = nn.Parameter(ember.zeros(temporal, self.head_dim))
            for table in (self.rel_pos_h, self.rel_pos_w, self.rel_pos_t):
                init.trunc_normal_(table, std=0.02)

    def forward(self, x: Tensor, thw: THW) -> tuple[Tensor, THW]:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).transpose(
            1, 3).unbind(2)
        k, k_thw = self.pool_k(k, thw) if self.pool_k is not None else (k, thw)
        if self.pool_v is not None:
            v = self.pool_v(v, thw)[0]
        if self.pool_q is not None:
            q, thw = self.pool_q(q, thw)
        attn = (self.scaler * q) @ k.transpose(2, 3)
        if self.rel_pos_h is not None:
            attn = _add_rel_pos(attn, q, thw, k_thw, self.rel_pos_h, self.rel_pos_w,
                                self.rel_pos_t)
        x = attn.softmax(dim=-1) @ v
        if self.residual_pool:
            x = x + (q if self.residual_with_cls_embed else F.pad(q[:, :, 1:], (0, 0, 1, 0)))
        x = x.transpose(1, 2).reshape(b, -1, self.output_dim)
        return self.project(x), thw


class MultiscaleBlock(nn.Module):
    """Pre-norm attention and MLP (GELU, 4× wide) with stochastic depth; where the block
    pools queries, the skip path is max-pooled alike; where channels change, a linear
    projection of the normed input (before attention with ``proj_after_attn``, v2, else
    before the MLP)."""

    def __init__(self, input_size: list[int], cnf: MSBlockConfig, residual_pool: bool,
                 residual_with_cls_embed: bool, rel_pos_embed: bool, proj_after_attn: bool,
                 dropout: float = 0.0, stochastic_depth_prob: float = 0.0,
                 norm_layer: Norm = nn.LayerNorm) -> None:
        super().__init__()
        self.proj_after_attn = proj_after_attn
        self.pool_skip = None
        if math.prod(cnf.stride_q) > 1:
            kernel = [s + 1 if s > 1 else s for s in cnf.stride_q]
            self.pool_skip = Pool(nn.MaxPool3d(tuple(kernel), stride=tuple(cnf.stride_q),
                                               padding=tuple(k // 2 for k in kernel)), None)
        attn_dim = cnf.output_channels if proj_after_attn else cnf.input_channels
        self.norm1 = norm_layer(cnf.input_channels)
        self.norm2 = norm_layer(attn_dim)
        self.needs_transposal = isinstance(self.norm1, nn.BatchNorm1d)
        self.attn = MultiscaleAttention(
            input_size, cnf.input_channels, attn_dim, cnf.num_heads, kernel_q=cnf.kernel_q,
            kernel_kv=cnf.kernel_kv, stride_q=cnf.stride_q, stride_kv=cnf.stride_kv,
            rel_pos_embed=rel_pos_embed, residual_pool=residual_pool,
            residual_with_cls_embed=residual_with_cls_embed, dropout=dropout,
            norm_layer=norm_layer)
        self.mlp = MLP(attn_dim, [4 * attn_dim, cnf.output_channels], activation_layer=nn.GELU,
                       dropout=dropout, inplace=None)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.project = (nn.Linear(cnf.input_channels, cnf.output_channels)
                        if cnf.input_channels != cnf.output_channels else None)

    def _norm(self, norm: nn.Module, x: Tensor) -> Tensor:
        return norm(x.transpose(1, 2)).transpose(1, 2) if self.needs_transposal else norm(x)

    def forward(self, x: Tensor, thw: THW) -> tuple[Tensor, THW]:
        x_norm1 = self._norm(self.norm1, x)
        x_attn, thw_new = self.attn(x_norm1, thw)
        if self.project is not None and self.proj_after_attn:
            x = self.project(x_norm1)
        x_skip = x if self.pool_skip is None else self.pool_skip(x, thw)[0]
        x = x_skip + self.stochastic_depth(x_attn)
        x_norm2 = self._norm(self.norm2, x)
        x_proj = x if self.project is None or self.proj_after_attn else self.project(x_norm2)
        return x_proj + self.stochastic_depth(self.mlp(x_norm2)), thw_new


class PositionalEncoding(nn.Module):
    """Prepends the learned class token; without ``rel_pos_embed`` (v1) adds learned
    positions: the class token's, and each grid token's frame plus its place in the frame."""

    def __init__(self, embed_size: int, spatial_size: tuple[int, int], temporal_size: int,
                 rel_pos_embed: bool) -> None:
        super().__init__()
        self.spatial_size, self.temporal_size = tuple(spatial_size), temporal_size
        self.class_token = nn.Parameter(ember.zeros(embed_size))
        self.spatial_pos = self.temporal_pos = self.class_pos = None
        if not rel_pos_embed:
            self.spatial_pos = nn.Parameter(ember.zeros(math.prod(self.spatial_size), embed_size))
            self.temporal_pos = nn.Parameter(ember.zeros(temporal_size, embed_size))
            self.class_pos = nn.Parameter(ember.zeros(embed_size))

    def forward(self, x: Tensor) -> Tensor:
        x = ember.cat([self.class_token.expand(x.shape[0], -1).unsqueeze(1), x], 1)
        if self.spatial_pos is None:
            return x
        grid = (self.temporal_pos[:, None] + self.spatial_pos[None]).flatten(0, 1)
        return x + ember.cat([self.class_pos[None], grid])[None]


class MViT(nn.Module):
    """torchvision's ``MViT(spatial_size, temporal_size, block_setting, residual_pool,
    residual_with_cls_embed, rel_pos_embed, proj_after_attn, dropout=0.5,
    attention_dropout=0.0, stochastic_depth_prob=0.0, num_classes=400, block=None,
    norm_layer=None, patch_embed_kernel=(3, 7, 7), patch_embed_stride=(2, 4, 4),
    patch_embed_padding=(1, 3, 3))``: patch convolution, class token and positions, the
    blocks of ``block_setting`` (stochastic depth growing linearly to
    ``stochastic_depth_prob``; ``attention_dropout`` in their projections and MLPs), norm
    (LayerNorm, eps 1e-6), and a dropout and linear head on the class token. Images
    ``(B, C, H, W)`` are clips of one frame.

    Example:
        >>> setting = [MSBlockConfig(2, 8, 8, [], [3, 3, 3], [], [1, 2, 2])]
        >>> MViT((32, 32), 4, setting, False, True, False, False).pos_encoding.spatial_pos.shape
        ember.Size([64, 8])
    """

    def __init__(self, spatial_size: tuple[int, int], temporal_size: int,
                 block_setting: Sequence[MSBlockConfig], residual_pool: bool,
                 residual_with_cls_embed: bool, rel_pos_embed: bool, proj_after_attn: bool,
                 dropout: float = 0.5, attention_dropout: float = 0.0,
                 stochastic_depth_prob: float = 0.0, num_classes: int = 400,
                 block: Callable[..., nn.Module] | None = None, norm_layer: Norm | None = None,
                 patch_embed_kernel: tuple[int, int, int] = (3, 7, 7),
                 patch_embed_stride: tuple[int, int, int] = (2, 4, 4),
                 patch_embed_padding: tuple[int, int, int] = (1, 3, 3)) -> None:
        super().__init__()
        if len(block_setting) == 0:
            raise ArgumentError("MViT: block_setting is empty; give at least one MSBlockConfig")
        block = block or MultiscaleBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.conv_proj = nn.Conv3d(3, block_setting[0].input_channels,
                                   kernel_size=tuple(patch_embed_kernel),
                                   stride=tuple(patch_embed_stride),
                                   padding=tuple(patch_embed_padding))
        input_size = [size // stride for size, stride in
                      zip((temporal_size, *spatial_size), patch_embed_stride)]
        self.pos_encoding = PositionalEncoding(block_setting[0].input_channels,
                                               (input_size[1], input_size[2]), input_size[0],
                                               rel_pos_embed)
        self.blocks = nn.ModuleList()
        last = max(len(block_setting) - 1, 1)
        for index, cnf in enumerate(block_setting):
            self.blocks.append(block(
                input_size=input_size, cnf=cnf, residual_pool=residual_pool,
                residual_with_cls_embed=residual_with_cls_embed, rel_pos_embed=rel_pos_embed,
                proj_after_attn=proj_after_attn, dropout=attention_dropout,
                stochastic_depth_prob=stochastic_depth_prob * index / last,
                norm_layer=norm_layer))
            if len(cnf.stride_q) > 0:
                input_size = [size // stride for size, stride in zip(input_size, cnf.stride_q)]
        self.norm = norm_layer(block_setting[-1].output_channels)
        self.head = nn.Sequential(nn.Dropout(dropout),
                                  nn.Linear(block_setting[-1].output_channels, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                if m.weight is not None:
                    init.ones_(m.weight)
                if m.bias is not None:
                    init.zeros_(m.bias)
            elif isinstance(m, PositionalEncoding):
                for p in m.parameters():
                    init.trunc_normal_(p, std=0.02)

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if x.ndim == 4:
            x = x.unsqueeze(2)
        elif x.ndim != 5:
            raise ShapeError(f"MViT: expected clips (B, C, T, H, W) or images (B, C, H, W), got "
                             f"shape {shape}")
        x = self.conv_proj(x)
        thw = (self.pos_encoding.temporal_size, *self.pos_encoding.spatial_size)
        if tuple(x.shape[2:]) != thw:
            raise ShapeError(f"MViT: an input of shape {shape} gives a {tuple(x.shape[2:])} "
                             f"token grid, the model was built for {thw}; build it with this "
                             "clip's spatial_size and temporal_size (multiples of the patch "
                             "stride)")
        x = self.pos_encoding(x.flatten(2).transpose(1, 2))
        for block in self.blocks:
            x, thw = block(x, thw)
        return self.head(self.norm(x)[:, 0])


_HEADS = [1, 2, 2] + [4] * 11 + [8, 8]
_STRIDES_KV = [[1, 8, 8]] + [[1, 4, 4]] * 2 + [[1, 2, 2]] * 11 + [[1, 1, 1]] * 2
_POOLED = (1, 3, 14)  # the blocks that halve height and width


def _block_setting(v2: bool) -> list[MSBlockConfig]:
    """torchvision's 16 blocks: widths 96 → 768 doubling at each pooling block (v2) or the
    block before it (v1); v2 convolves queries in every block."""
    def width(i: int) -> int:
        return 96 * 2 ** sum(p <= i for p in _POOLED)

    setting = []
    for i, (heads, stride_kv) in enumerate(zip(_HEADS, _STRIDES_KV)):
        pooled = i in _POOLED
        stride_q = [1, 2, 2] if pooled else [1, 1, 1] if v2 else []
        setting.append(MSBlockConfig(heads, width(i - 1) if v2 else width(i),
                                     width(i) if v2 else width(i + 1),
                                     [3, 3, 3] if v2 or pooled else [], [3, 3, 3], stride_q,
                                     stride_kv))
    return setting


def _builder(name: str, doc: str, v2: bool):
    def make(spatial_size: tuple[int, int] = (224, 224), temporal_size: int = 16,
             **kwargs) -> MViT:
        flags = {"residual_pool": v2, "residual_with_cls_embed": False, "rel_pos_embed": v2,
                 "proj_after_attn": v2}
        return MViT(spatial_size, temporal_size, _block_setting(v2), **{**flags, **kwargs})
    return make_builder(name, make, doc, __name__, defaults={"stochastic_depth_prob": 0.2})


mvit_v1_b = _builder("mvit_v1_b", "MViT v1 base (16 frames of 224×224)", False)
mvit_v2_s = _builder("mvit_v2_s", "MViT v2 small (16 frames of 224×224)", True)
