"""torchvision's AlexNet, VGG, MobileNetV2 and Vision Transformer rebuilt in plain torch.nn
(torchvision itself is not installed) with its module names, so their state dicts are the
layouts torchvision's weights have, and their outputs are references for Ember's models."""

import math
from collections import OrderedDict

import torch
from torch import nn


def alexnet(num_classes=1000, dropout=0.5):
    model = nn.Module()
    model.features = nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(), nn.Conv2d(384, 256, 3, padding=1),
        nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2))
    model.avgpool = nn.AdaptiveAvgPool2d(6)
    model.classifier = nn.Sequential(
        nn.Dropout(dropout), nn.Linear(9216, 4096), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model


def vgg(cfg, batch_norm, num_classes=1000, dropout=0.5):
    layers, channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(channels, v, 3, padding=1)]
            layers += [nn.BatchNorm2d(v)] if batch_norm else []
            layers += [nn.ReLU()]
            channels = v
    model = nn.Module()
    model.features = nn.Sequential(*layers)
    model.avgpool = nn.AdaptiveAvgPool2d(7)
    model.classifier = nn.Sequential(
        nn.Linear(25088, 4096), nn.ReLU(), nn.Dropout(dropout), nn.Linear(4096, 4096), nn.ReLU(),
        nn.Dropout(dropout), nn.Linear(4096, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model


def _divisible(v, d=8):
    r = max(d, int(v + d / 2) // d * d)
    return r + d if r < 0.9 * v else r


def _cbr(i, o, k=3, s=1, groups=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(o), nn.ReLU6())


class _MBv2Block(nn.Module):
    def __init__(self, i, o, stride, t):
        super().__init__()
        hidden = int(round(i * t))
        self.res = stride == 1 and i == o
        layers = [_cbr(i, hidden, 1)] if t != 1 else []
        layers += [_cbr(hidden, hidden, 3, stride, hidden), nn.Conv2d(hidden, o, 1, bias=False),
                   nn.BatchNorm2d(o)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


def mobilenet_v2(num_classes=1000, width_mult=1.0, dropout=0.2):
    setting = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]
    channels, last = _divisible(32 * width_mult), _divisible(1280 * max(1.0, width_mult))
    features = [_cbr(3, channels, 3, 2)]
    for t, c, n, s in setting:
        for i in range(n):
            features.append(_MBv2Block(channels, _divisible(c * width_mult), s if i == 0 else 1, t))
            channels = _divisible(c * width_mult)
    features.append(_cbr(channels, last, 1))
    model = nn.Module()
    model.features = nn.Sequential(*features)
    model.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(last, num_classes))
    model.forward = lambda x: model.classifier(
        torch.flatten(nn.functional.adaptive_avg_pool2d(model.features(x), 1), 1))
    return model


class _EncoderBlock(nn.Module):
    def __init__(self, heads, hidden, mlp):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(hidden, mlp), nn.GELU(), nn.Dropout(0.0),
                                 nn.Linear(mlp, hidden), nn.Dropout(0.0))

    def forward(self, x):
        y = self.ln_1(x)
        x = x + self.self_attention(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch, layers, heads, hidden, mlp, num_classes=1000):
        super().__init__()
        self.patch, self.hidden = patch, hidden
        self.conv_proj = nn.Conv2d(3, hidden, patch, patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.encoder = nn.Module()
        self.encoder.pos_embedding = nn.Parameter(
            torch.randn(1, (image_size // patch) ** 2 + 1, hidden) * 0.02)
        self.encoder.layers = nn.Sequential(OrderedDict(
            (f"encoder_layer_{i}", _EncoderBlock(heads, hidden, mlp)) for i in range(layers)))
        self.encoder.ln = nn.LayerNorm(hidden, eps=1e-6)
        self.heads = nn.Sequential(OrderedDict(head=nn.Linear(hidden, num_classes)))
        std = math.sqrt(1 / (3 * patch * patch))
        nn.init.trunc_normal_(self.conv_proj.weight, std=std)

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, self.hidden, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], 1) + self.encoder.pos_embedding
        return self.heads(self.encoder.ln(self.encoder.layers(x))[:, 0])


class _LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class _CNBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(dim, dim, 7, padding=3, groups=dim), _Permute(),
                                   nn.LayerNorm(dim, eps=1e-6), nn.Linear(dim, 4 * dim),
                                   nn.GELU(), nn.Linear(4 * dim, dim), _Permute(back=True))
        self.layer_scale = nn.Parameter(torch.rand(dim, 1, 1))

    def forward(self, x):
        return x + self.layer_scale * self.block(x)


class _Permute(nn.Module):
    def __init__(self, back=False):
        super().__init__()
        self.dims = (0, 3, 1, 2) if back else (0, 2, 3, 1)

    def forward(self, x):
        return x.permute(*self.dims)


def convnext(widths, depths, num_classes=1000):
    """ConvNeXt without stochastic depth (its eval and train modes alike)."""
    layers = [nn.Sequential(nn.Conv2d(3, widths[0], 4, 4), _LayerNorm2d(widths[0], eps=1e-6))]
    for i, (w, d) in enumerate(zip(widths, depths)):
        layers.append(nn.Sequential(*[_CNBlock(w) for _ in range(d)]))
        if i + 1 < len(widths):
            layers.append(nn.Sequential(_LayerNorm2d(w, eps=1e-6),
                                        nn.Conv2d(w, widths[i + 1], 2, 2)))
    model = nn.Module()
    model.features = nn.Sequential(*layers)
    model.classifier = nn.Sequential(_LayerNorm2d(widths[-1], eps=1e-6), nn.Flatten(1),
                                     nn.Linear(widths[-1], num_classes))
    model.forward = lambda x: model.classifier(nn.functional.adaptive_avg_pool2d(
        model.features(x), 1))
    return model
