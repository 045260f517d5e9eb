"""torchvision's Video Swin Transformer rebuilt in plain torch.nn from the paper's definitions
(torchvision itself is not installed), with torchvision's module names: window attention
loops over the 3-D windows one by one and builds the shift mask from the regions of the
rolled clip; patch merging is the 2-D reference's, frame by frame. The references for
``ember.vision.models.video.swin_transformer``."""

import itertools
import math

import torch
from torch import nn
from torch.nn import functional as F

from tests.vision import torch_blocks


class WindowAttention3d(nn.Module):
    """(Shifted) window attention of a (B, T, H, W, C) input. A window longer than the clip
    along an axis shrinks to it, unshifted there; its position bias is then that of the first
    tokens of the full window, in row-major order (torchvision's slicing of its index)."""

    def __init__(self, dim, window, shift, heads):
        super().__init__()
        self.window, self.shift, self.heads = list(window), list(shift), heads
        rows = math.prod(2 * w - 1 for w in window)
        self.relative_position_bias_table = nn.Parameter(torch.randn(rows, heads))
        cells = torch.cartesian_prod(*[torch.arange(w) for w in window])  # (N, 3)
        offsets = cells[:, None] - cells[None, :] + torch.tensor(window) - 1  # (N, N, 3)
        strides = torch.tensor([(2 * window[1] - 1) * (2 * window[2] - 1), 2 * window[2] - 1, 1])
        self.register_buffer("relative_position_index", (offsets * strides).sum(-1))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, *sizes, c = x.shape
        d = c // self.heads
        window = [min(s, w) for s, w in zip(sizes, self.window)]
        shift = [0 if s <= w else sh for s, w, sh in zip(sizes, self.window, self.shift)]
        padded = [-(-s // w) * w for s, w in zip(sizes, window)]
        x = F.pad(x, (0, 0, 0, padded[2] - sizes[2], 0, padded[1] - sizes[1], 0,
                      padded[0] - sizes[0]))
        region = torch.zeros(padded)
        if any(shift):
            bounds = [[(0, p - w), (p - w, p - s), (p - s, p)]
                      for p, w, s in zip(padded, window, shift)]
            for labels in itertools.product(range(3), repeat=3):
                (t0, t1), (h0, h1), (w0, w1) = (bounds[a][i] for a, i in enumerate(labels))
                region[t0:t1, h0:h1, w0:w1] = 9 * labels[0] + 3 * labels[1] + labels[2]
        x = torch.roll(x, [-s for s in shift], (1, 2, 3))
        n = math.prod(window)
        index = self.relative_position_index[:n, :n]
        bias = self.relative_position_bias_table[index.reshape(-1)].reshape(n, n, -1)
        bias = bias.permute(2, 0, 1)
        out = torch.zeros_like(x)
        wt, wh, ww = window
        for i in range(b):
            for t, y, z in itertools.product(*[range(0, p, w) for p, w in zip(padded, window)]):
                cell = (i, slice(t, t + wt), slice(y, y + wh), slice(z, z + ww))
                tokens = x[cell].reshape(-1, c)
                q, k, v = self.qkv(tokens).split(c, -1)
                q, k, v = (u.reshape(-1, self.heads, d).transpose(0, 1) for u in (q, k, v))
                labels = region[cell[1:]].reshape(-1)
                mask = (labels[:, None] != labels[None, :]) * -100.0
                attn = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d) + bias + mask, -1)
                out[cell] = self.proj((attn @ v).transpose(0, 1).reshape(-1, c)).reshape(
                    wt, wh, ww, c)
        out = torch.roll(out, shift, (1, 2, 3))
        return out[:, :sizes[0], :sizes[1], :sizes[2]]


class SwinBlock3d(torch_blocks.SwinBlock):
    """The 2-D reference's pre-norm block around 3-D window attention."""

    def __init__(self, dim, heads, window, shift):
        nn.Module.__init__(self)
        self.v2 = False
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention3d(dim, window, shift, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = torch_blocks._mlp(dim, 4 * dim)


class FrameMerge(torch_blocks.Merge):
    """The 2-D reference's patch merging (v1) on each frame."""

    def __init__(self, dim):
        super().__init__(dim, False)

    def forward(self, x):
        b, t = x.shape[:2]
        x = super().forward(x.flatten(0, 1))
        return x.reshape(b, t, *x.shape[1:])


class PatchEmbed(nn.Module):
    def __init__(self, patch, dim):
        super().__init__()
        self.patch = patch
        self.proj = nn.Conv3d(3, dim, patch, patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        pad = []
        for size, p in zip(reversed(x.shape[2:]), reversed(self.patch)):
            pad += [0, -size % p]
        return self.norm(self.proj(F.pad(x, pad)).permute(0, 2, 3, 4, 1))


class SwinTransformer3d(nn.Module):
    def __init__(self, patch, dim, depths, heads, window, num_classes=400):
        super().__init__()
        self.patch_embed = PatchEmbed(patch, dim)
        layers = []
        for i, depth in enumerate(depths):
            width = dim * 2 ** i
            layers.append(nn.Sequential(*[
                SwinBlock3d(width, heads[i], window,
                            [0, 0, 0] if j % 2 == 0 else [w // 2 for w in window])
                for j in range(depth)]))
            if i < len(depths) - 1:
                layers.append(FrameMerge(width))
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim * 2 ** (len(depths) - 1))
        self.head = nn.Linear(dim * 2 ** (len(depths) - 1), num_classes)

    def forward(self, x):
        x = self.norm(self.features(self.patch_embed(x)))
        return self.head(x.mean((1, 2, 3)))
