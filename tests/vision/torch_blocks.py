"""Plain torch.nn references for the layers of torchvision's Swin Transformers, Inception
networks, RegNets and segmentation heads (torchvision itself is not installed), written from
the papers' definitions: window attention loops over the windows one by one, builds the shift
mask from the regions of the rolled image, and reads position biases entry by entry. Module
names are torchvision's, so Ember's state dicts load into them and their outputs are
references for Ember's layers."""

import math

import torch
from torch import nn
from torch.nn import functional as F


class WindowAttention(nn.Module):
    """(Shifted) window attention of an (N, H, W, C) input; ``v2``: cosine attention and the
    continuous position bias. Parameters and buffers registered in torchvision's order."""

    def __init__(self, dim, window, shift, heads, v2=False):
        super().__init__()
        self.window, self.shift, self.heads, self.v2 = list(window), list(shift), heads, v2
        wh, ww = window
        offsets = [(dy, dx) for dy in range(-(wh - 1), wh) for dx in range(-(ww - 1), ww)]
        if v2:
            def log_spaced(d, w):
                c = d / (w - 1) * 8
                return math.copysign(math.log2(abs(c) + 1.0), c) / 3.0
            coords = [[log_spaced(dy, wh), log_spaced(dx, ww)] for dy, dx in offsets]
            self.register_buffer("relative_coords_table", torch.tensor(
                coords).reshape(1, 2 * wh - 1, 2 * ww - 1, 2))
        else:
            self.relative_position_bias_table = nn.Parameter(torch.randn(len(offsets), heads))
        cells = [(y, x) for y in range(wh) for x in range(ww)]
        index = [offsets.index((yi - yj, xi - xj)) for yi, xi in cells for yj, xj in cells]
        self.register_buffer("relative_position_index", torch.tensor(index))
        if v2:
            self.logit_scale = nn.Parameter(torch.randn(heads, 1, 1))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        if v2:
            self.cpb_mlp = nn.Sequential(nn.Linear(2, 512), nn.ReLU(),
                                         nn.Linear(512, heads, bias=False))

    def bias(self):
        """(heads, n, n): entry (i, j) is the table's row for token i's offset from token j."""
        table = (self.cpb_mlp(self.relative_coords_table).reshape(-1, self.heads) if self.v2
                 else self.relative_position_bias_table)
        n = self.window[0] * self.window[1]
        bias = torch.stack([table[self.relative_position_index[i * n + j]]
                            for i in range(n) for j in range(n)]).reshape(n, n, -1)
        bias = bias.permute(2, 0, 1)
        return 16 * torch.sigmoid(bias) if self.v2 else bias

    def forward(self, x):
        b, h, w, c = x.shape
        (wh, ww), d = self.window, c // self.heads
        ph, pw = -(-h // wh) * wh, -(-w // ww) * ww
        x = F.pad(x, (0, 0, 0, pw - w, 0, ph - h))
        sh = self.shift[0] if wh < ph else 0
        sw = self.shift[1] if ww < pw else 0
        region = torch.zeros(ph, pw)
        if sh or sw:
            bounds_h = [(0, ph - wh), (ph - wh, ph - sh), (ph - sh, ph)]
            bounds_w = [(0, pw - ww), (pw - ww, pw - sw), (pw - sw, pw)]
            for i, (h0, h1) in enumerate(bounds_h):
                for j, (w0, w1) in enumerate(bounds_w):
                    region[h0:h1, w0:w1] = 3 * i + j
        x = torch.roll(x, (-sh, -sw), (1, 2))
        qkv_bias = self.qkv.bias
        if self.v2:
            qkv_bias = torch.cat([qkv_bias[:c], torch.zeros_like(qkv_bias[c:2 * c]),
                                  qkv_bias[2 * c:]])
        bias = self.bias()
        out = torch.zeros_like(x)
        for n in range(b):
            for y in range(0, ph, wh):
                for z in range(0, pw, ww):
                    tokens = x[n, y:y + wh, z:z + ww].reshape(-1, c)
                    q, k, v = F.linear(tokens, self.qkv.weight, qkv_bias).split(c, -1)
                    q, k, v = (t.reshape(-1, self.heads, d).transpose(0, 1) for t in (q, k, v))
                    if self.v2:
                        scale = self.logit_scale.clamp(max=math.log(100.0)).exp()
                        cosine = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(1, 2)
                        logits = cosine * scale
                    else:
                        logits = q @ k.transpose(1, 2) / math.sqrt(d)
                    labels = region[y:y + wh, z:z + ww].reshape(-1)
                    mask = (labels[:, None] != labels[None, :]) * -100.0
                    attn = torch.softmax(logits + bias + mask, -1)
                    o = (attn @ v).transpose(0, 1).reshape(-1, c)
                    out[n, y:y + wh, z:z + ww] = self.proj(o).reshape(wh, ww, c)
        return torch.roll(out, (sh, sw), (1, 2))[:, :h, :w]


def _mlp(dim, hidden):
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.0),
                         nn.Linear(hidden, dim), nn.Dropout(0.0))


class SwinBlock(nn.Module):
    def __init__(self, dim, heads, window, shift, v2):
        super().__init__()
        self.v2 = v2
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window, shift, heads, v2)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = _mlp(dim, 4 * dim)

    def forward(self, x):
        if self.v2:
            x = x + self.norm1(self.attn(x))
            return x + self.norm2(self.mlp(x))
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Merge(nn.Module):
    def __init__(self, dim, v2):
        super().__init__()
        self.v2 = v2
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(2 * dim if v2 else 4 * dim)

    def forward(self, x):
        h, w = x.shape[1], x.shape[2]
        x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
        # the 2x2 patch's pixels top-left, bottom-left, top-right, bottom-right
        x = torch.cat([x[:, dy::2, dx::2] for dx in (0, 1) for dy in (0, 1)], -1)
        return self.norm(self.reduction(x)) if self.v2 else self.reduction(self.norm(x))


class ToChannelsLast(nn.Module):
    def forward(self, x):
        return x.permute(0, 2, 3, 1)


def swin(patch, dim, depths, heads, window, num_classes, v2=False):
    layers = [nn.Sequential(nn.Conv2d(3, dim, patch, patch), ToChannelsLast(),
                            nn.LayerNorm(dim))]
    for i, depth in enumerate(depths):
        width = dim * 2 ** i
        layers.append(nn.Sequential(*[
            SwinBlock(width, heads[i], window, [0, 0] if j % 2 == 0 else [w // 2 for w in window],
                      v2) for j in range(depth)]))
        if i < len(depths) - 1:
            layers.append(Merge(width, v2))
    model = nn.Module()
    model.features = nn.Sequential(*layers)
    model.norm = nn.LayerNorm(dim * 2 ** (len(depths) - 1))
    model.head = nn.Linear(dim * 2 ** (len(depths) - 1), num_classes)
    model.forward = lambda x: model.head(model.norm(model.features(x)).mean((1, 2)))
    return model


class BasicConv2d(nn.Module):
    def __init__(self, i, o, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(i, o, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(o, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Branches(nn.Module):
    """Named chains of layers run on the same input and concatenated on channels; a chain
    entry that is a tuple holds parallel layers whose outputs are concatenated."""

    def __init__(self, chains, pools):
        super().__init__()
        self.chains, self.pools = chains, pools
        for chain in chains:
            for name, layer in chain:
                for n, m in zip(name if isinstance(name, tuple) else (name,),
                                layer if isinstance(layer, tuple) else (layer,)):
                    self.add_module(n, m)

    def forward(self, x):
        outs = []
        for chain, pool in zip(self.chains, self.pools):
            y = pool(x) if pool is not None else x
            for _name, layer in chain:
                y = (torch.cat([m(y) for m in layer], 1) if isinstance(layer, tuple)
                     else layer(y))
            outs.append(y)
        return torch.cat(outs, 1)


def _c(i, o, k, s=1, p=0):
    return BasicConv2d(i, o, kernel_size=k, stride=s, padding=p)


def _avg3(x):
    return F.avg_pool2d(x, 3, 1, 1)


def inception_c(i, c7):
    row, col = {"k": (1, 7), "p": (0, 3)}, {"k": (7, 1), "p": (3, 0)}
    return Branches(
        [[("branch1x1", _c(i, 192, 1))],
         [("branch7x7_1", _c(i, c7, 1)), ("branch7x7_2", _c(c7, c7, **row)),
          ("branch7x7_3", _c(c7, 192, **col))],
         [("branch7x7dbl_1", _c(i, c7, 1)), ("branch7x7dbl_2", _c(c7, c7, **col)),
          ("branch7x7dbl_3", _c(c7, c7, **row)), ("branch7x7dbl_4", _c(c7, c7, **col)),
          ("branch7x7dbl_5", _c(c7, 192, **row))],
         [("branch_pool", _c(i, 192, 1))]], [None, None, None, _avg3])


def inception_e(i):
    row, col = {"k": (1, 3), "p": (0, 1)}, {"k": (3, 1), "p": (1, 0)}
    return Branches(
        [[("branch1x1", _c(i, 320, 1))],
         [("branch3x3_1", _c(i, 384, 1)),
          (("branch3x3_2a", "branch3x3_2b"), (_c(384, 384, **row), _c(384, 384, **col)))],
         [("branch3x3dbl_1", _c(i, 448, 1)), ("branch3x3dbl_2", _c(448, 384, 3, p=1)),
          (("branch3x3dbl_3a", "branch3x3dbl_3b"), (_c(384, 384, **row), _c(384, 384, **col)))],
         [("branch_pool", _c(i, 192, 1))]], [None, None, None, _avg3])


def googlenet_inception(i, c1, c3r, c3, c5r, c5, pool):
    model = nn.Module()
    model.branch1 = _c(i, c1, 1)
    model.branch2 = nn.Sequential(_c(i, c3r, 1), _c(c3r, c3, 3, p=1))
    model.branch3 = nn.Sequential(_c(i, c5r, 1), _c(c5r, c5, 3, p=1))
    model.branch4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), _c(i, pool, 1))
    model.forward = lambda x: torch.cat([model.branch1(x), model.branch2(x), model.branch3(x),
                                         model.branch4(x)], 1)
    return model


def _cbr(i, o, k=1, s=1, groups=1, act=True, dilation=1):
    layers = [nn.Conv2d(i, o, k, s, (k - 1) // 2 * dilation, dilation=dilation, groups=groups,
                        bias=False), nn.BatchNorm2d(o)]
    return nn.Sequential(*layers, *([nn.ReLU()] if act else []))


class SqueezeExcitation(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3), keepdim=True)))))


def regnet_block(w_in, w_out, stride, group_width, se_ratio):
    """ResBottleneckBlock with bottleneck multiplier 1."""
    model = nn.Module()
    model.proj = _cbr(w_in, w_out, 1, stride, act=False)
    f = nn.Module()
    f.a = _cbr(w_in, w_out)
    f.b = _cbr(w_out, w_out, 3, stride, groups=w_out // group_width)
    f.se = SqueezeExcitation(w_out, int(round(se_ratio * w_in)))
    f.c = _cbr(w_out, w_out, act=False)
    model.f = f
    model.forward = lambda x: F.relu(model.proj(x) + f.c(f.se(f.b(f.a(x)))))
    return model


def aspp(i, rates, width):
    model = nn.Module()
    model.convs = nn.ModuleList([_cbr(i, width)] + [_cbr(i, width, 3, dilation=r) for r in rates]
                                + [nn.Sequential(nn.Identity(), *_cbr(i, width))])
    model.project = nn.Sequential(*_cbr(width * (len(rates) + 2), width), nn.Dropout(0.5))

    def forward(x):
        outs = [conv(x) for conv in model.convs[:-1]]
        pooled = model.convs[-1](x.mean((2, 3), keepdim=True))
        outs.append(pooled.expand(-1, -1, *x.shape[-2:]))  # a 1x1 map upsampled
        return model.project(torch.cat(outs, 1))

    model.forward = forward
    return model


def deeplab_head(i, num_classes, rates):
    return nn.Sequential(aspp(i, rates, 256), *_cbr(256, 256, 3), nn.Conv2d(256, num_classes, 1))


def lraspp_head(low, high, num_classes, inter):
    model = nn.Module()
    model.cbr = _cbr(high, inter)
    model.scale = nn.Sequential(nn.Identity(), nn.Conv2d(high, inter, 1, bias=False))
    model.low_classifier = nn.Conv2d(low, num_classes, 1)
    model.high_classifier = nn.Conv2d(inter, num_classes, 1)

    def forward(features):
        lo, hi = features["low"], features["high"]
        gated = model.cbr(hi) * torch.sigmoid(model.scale(hi.mean((2, 3), keepdim=True)))
        up = F.interpolate(gated, size=lo.shape[-2:], mode="bilinear", align_corners=False)
        return model.low_classifier(lo) + model.high_classifier(up)

    model.forward = forward
    return model


class RelativeAttention(nn.Module):
    """MaxViT's attention over sequences of ``size``² tokens laid out as a square, with keys
    scaled by the feature width's inverse square root (torchvision's choice)."""

    def __init__(self, dim, head_dim, size):
        super().__init__()
        self.heads, self.dim = dim // head_dim, dim
        offsets = [(dy, dx) for dy in range(-(size - 1), size) for dx in range(-(size - 1), size)]
        self.relative_position_bias_table = nn.Parameter(torch.randn(len(offsets), self.heads))
        cells = [(y, x) for y in range(size) for x in range(size)]
        self.register_buffer("relative_position_index", torch.tensor(
            [[offsets.index((yi - yj, xi - xj)) for yj, xj in cells] for yi, xi in cells]))
        self.to_qkv = nn.Linear(dim, 3 * dim)
        self.merge = nn.Linear(dim, dim)

    def forward(self, tokens):  # (n, dim) -> (n, dim)
        q, k, v = (t.reshape(len(tokens), self.heads, -1).transpose(0, 1)
                   for t in self.to_qkv(tokens).split(self.dim, -1))
        bias = self.relative_position_bias_table[self.relative_position_index].permute(2, 0, 1)
        attn = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.dim) + bias, -1)
        return self.merge((attn @ v).transpose(0, 1).reshape(len(tokens), -1))


class PartitionAttention(nn.Module):
    """MaxViT's window ("window": ``size``² blocks) or grid ("grid": pixels ``H / size``
    apart) attention and MLP on an (N, C, H, W) map, token sets gathered one by one."""

    def __init__(self, dim, head_dim, size, kind, mlp_ratio=4):
        super().__init__()
        self.size, self.kind = size, kind
        self.attn_layer = nn.Sequential(nn.LayerNorm(dim), RelativeAttention(dim, head_dim, size),
                                        nn.Dropout(0.0))
        self.mlp_layer = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * mlp_ratio),
                                       nn.GELU(), nn.Linear(dim * mlp_ratio, dim), nn.Dropout(0.0))

    def token_sets(self, h, w):
        s = self.size
        if self.kind == "window":
            return [(slice(y, y + s), slice(x, x + s)) for y in range(0, h, s)
                    for x in range(0, w, s)]
        step_h, step_w = h // s, w // s
        return [(slice(y, h, step_h), slice(x, w, step_w)) for y in range(step_h)
                for x in range(step_w)]

    def forward(self, x):
        out = x.clone()
        for n in range(x.shape[0]):
            for rows, cols in self.token_sets(x.shape[2], x.shape[3]):
                tokens = x[n, :, rows, cols]
                shape = tokens.shape
                t = tokens.reshape(shape[0], -1).T
                t = t + self.attn_layer[1](self.attn_layer[0](t))
                t = t + self.mlp_layer(t)
                out[n, :, rows, cols] = t.T.reshape(shape)
        return out
