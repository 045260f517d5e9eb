"""torchvision's MViT (v1 and v2) rebuilt in plain torch.nn from the papers' definitions
(torchvision itself is not installed), with torchvision's module names: pooled attention over
a class token plus a T×H×W token grid; v2's relative position term is added key by key. The
references for ``ember.vision.models.video.mvit``. A block's setting is a tuple
``(heads, in, out, kernel_q, kernel_kv, stride_q, stride_kv)``; ``flags`` is
``(residual_pool, residual_with_cls_embed, rel_pos_embed, proj_after_attn)``."""

import itertools
import math

import torch
from torch import nn
from torch.nn import functional as F


class Pool(nn.Module):
    """``pool`` over the grid tokens of (..., 1 + T·H·W, C), the class token kept, then the
    norm (if any) over every token."""

    def __init__(self, pool, norm=None):
        super().__init__()
        self.pool = pool
        self.norm_act = nn.Sequential(norm) if norm is not None else None

    def forward(self, x, thw):
        lead, c = x.shape[:-2], x.shape[-1]
        grid = x[..., 1:, :].reshape(-1, *thw, c).permute(0, 4, 1, 2, 3)
        grid = self.pool(grid)
        new = tuple(grid.shape[2:])
        grid = grid.flatten(2).transpose(1, 2).reshape(*lead, -1, c)
        x = torch.cat([x[..., :1, :], grid], -2)
        return (x if self.norm_act is None else self.norm_act(x)), new


def _table_rows(q, k):
    """Row of the (2·max(q, k) - 1)-row table for each query-key pair along an axis: the
    offset with the shorter axis stretched to the longer, shifted to start at 0."""
    q_ratio, k_ratio = max(k / q, 1.0), max(q / k, 1.0)
    return (torch.arange(q)[:, None] * q_ratio
            - (torch.arange(k)[None, :] + (1.0 - k)) * k_ratio).long()


class Attention(nn.Module):
    def __init__(self, grid, setting, dim_out, flags, eps):
        super().__init__()
        heads, dim_in, _, kernel_q, kernel_kv, stride_q, stride_kv = setting
        self.residual_pool, self.with_cls, rel, _ = flags
        self.heads, self.dim_out, d = heads, dim_out, dim_out // heads
        if rel:
            size = max(grid[1:])
            q_size = size // stride_q[1] if stride_q else size
            kv_size = size // stride_kv[1] if stride_kv else size
            self.rel_pos_h = nn.Parameter(torch.randn(2 * max(q_size, kv_size) - 1, d))
            self.rel_pos_w = nn.Parameter(torch.randn(2 * max(q_size, kv_size) - 1, d))
            self.rel_pos_t = nn.Parameter(torch.randn(2 * grid[0] - 1, d))
        self.qkv = nn.Linear(dim_in, 3 * dim_out)
        self.project = nn.Sequential(nn.Linear(dim_out, dim_out))

        def pool(kernel, stride):
            conv = nn.Conv3d(d, d, kernel, stride, [k // 2 for k in kernel], groups=d, bias=False)
            return Pool(conv, nn.LayerNorm(d, eps=eps))

        self.pool_q = (pool(kernel_q, stride_q)
                       if math.prod(kernel_q) > 1 or math.prod(stride_q) > 1 else None)
        pools_kv = math.prod(kernel_kv) > 1 or math.prod(stride_kv) > 1
        self.pool_k = pool(kernel_kv, stride_kv) if pools_kv else None
        self.pool_v = pool(kernel_kv, stride_kv) if pools_kv else None
        self.rel = rel

    def relative(self, q, q_thw, k_thw):
        """(B, heads, 1 + Nq, 1 + Nk): q_i · (R_t + R_h + R_w) at each pair's offsets, zero
        for pairs with a class token."""
        tables = []
        for table, qs, ks in zip((self.rel_pos_t, self.rel_pos_h, self.rel_pos_w), q_thw, k_thw):
            size = 2 * max(qs, ks) - 1
            if table.shape[0] != size:
                table = F.interpolate(table.T[None], size=size, mode="linear")[0].T
            tables.append(table[_table_rows(qs, ks)])  # (qs, ks, d)
        qc = torch.tensor(list(itertools.product(*map(range, q_thw))))
        out = q.new_zeros(*q.shape[:-1], 1 + math.prod(k_thw))
        for j, (kt, kh, kw) in enumerate(itertools.product(*map(range, k_thw))):
            r = tables[0][qc[:, 0], kt] + tables[1][qc[:, 1], kh] + tables[2][qc[:, 2], kw]
            out[:, :, 1:, 1 + j] = (q[:, :, 1:] * r).sum(-1)
        return out

    def forward(self, x, thw):
        b, n, _ = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, -1))
        k_thw = thw
        if self.pool_k is not None:
            k, k_thw = self.pool_k(k, thw)
            v = self.pool_v(v, thw)[0]
        if self.pool_q is not None:
            q, thw = self.pool_q(q, thw)
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if self.rel:
            logits = logits + self.relative(q, thw, k_thw)
        out = logits.softmax(-1) @ v
        if self.residual_pool:
            out = out + q if self.with_cls else torch.cat([out[:, :, :1],
                                                          out[:, :, 1:] + q[:, :, 1:]], 2)
        return self.project(out.transpose(1, 2).reshape(b, -1, self.dim_out)), thw


class Block(nn.Module):
    def __init__(self, grid, setting, flags, eps=1e-6):
        super().__init__()
        _, dim_in, dim_out, _, _, stride_q, _ = setting
        self.proj_after = flags[3]
        if math.prod(stride_q) > 1:
            kernel = [s + 1 if s > 1 else s for s in stride_q]
            self.pool_skip = Pool(nn.MaxPool3d(kernel, stride_q, [k // 2 for k in kernel]))
        else:
            self.pool_skip = None
        attn_dim = dim_out if self.proj_after else dim_in
        self.norm1 = nn.LayerNorm(dim_in, eps=eps)
        self.norm2 = nn.LayerNorm(attn_dim, eps=eps)
        self.attn = Attention(grid, setting, attn_dim, flags, eps)
        self.mlp = nn.Sequential(nn.Linear(attn_dim, 4 * attn_dim), nn.GELU(), nn.Dropout(0.0),
                                 nn.Linear(4 * attn_dim, dim_out), nn.Dropout(0.0))
        self.project = nn.Linear(dim_in, dim_out) if dim_in != dim_out else None

    def forward(self, x, thw):
        h = self.norm1(x)
        attended, new = self.attn(h, thw)
        skip = self.project(h) if self.project is not None and self.proj_after else x
        if self.pool_skip is not None:
            skip = self.pool_skip(skip, thw)[0]
        x = skip + attended
        h = self.norm2(x)
        base = self.project(h) if self.project is not None and not self.proj_after else x
        return base + self.mlp(h), new


class MViT(nn.Module):
    def __init__(self, spatial, temporal, settings, flags, num_classes=400):
        super().__init__()
        width = settings[0][1]
        self.conv_proj = nn.Conv3d(3, width, (3, 7, 7), (2, 4, 4), (1, 3, 3))
        grid = [temporal // 2, spatial[0] // 4, spatial[1] // 4]
        self.pos_encoding = nn.Module()
        self.pos_encoding.class_token = nn.Parameter(torch.randn(width))
        self.rel = flags[2]
        if not self.rel:
            self.pos_encoding.spatial_pos = nn.Parameter(torch.randn(grid[1] * grid[2], width))
            self.pos_encoding.temporal_pos = nn.Parameter(torch.randn(grid[0], width))
            self.pos_encoding.class_pos = nn.Parameter(torch.randn(width))
        self.blocks = nn.ModuleList()
        for setting in settings:
            self.blocks.append(Block(grid, setting, flags))
            if setting[5]:
                grid = [g // s for g, s in zip(grid, setting[5])]
        self.norm = nn.LayerNorm(settings[-1][2], eps=1e-6)
        self.head = nn.Sequential(nn.Dropout(0.0), nn.Linear(settings[-1][2], num_classes))

    def forward(self, x):
        x = self.conv_proj(x)
        thw = tuple(x.shape[2:])
        x = x.flatten(2).transpose(1, 2)
        pe = self.pos_encoding
        cls = pe.class_token.expand(x.shape[0], 1, -1)
        if not self.rel:
            x = x + pe.temporal_pos.repeat_interleave(thw[1] * thw[2], 0) + pe.spatial_pos.repeat(
                thw[0], 1)
            cls = cls + pe.class_pos
        x = torch.cat([cls, x], 1)
        for block in self.blocks:
            x, thw = block(x, thw)
        return self.head(self.norm(x)[:, 0])
