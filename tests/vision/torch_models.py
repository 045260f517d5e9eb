"""torchvision's classifiers rebuilt in plain torch.nn from torchvision's source (torchvision
itself is not installed) with its module names, so their state dicts are the layouts
torchvision's weights have, and their outputs are references for Ember's models. ``hidden``
narrows AlexNet's and VGG's 4096-wide classifiers (a float64 twin of those costs gigabytes)."""

import math
from collections import OrderedDict
from functools import partial

import torch
from torch import nn
from torch.nn import functional as F


def alexnet(num_classes=1000, dropout=0.5, hidden=4096):
    model = nn.Module()
    model.features = nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(), nn.Conv2d(384, 256, 3, padding=1),
        nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2))
    model.avgpool = nn.AdaptiveAvgPool2d(6)
    model.classifier = nn.Sequential(
        nn.Dropout(dropout), nn.Linear(9216, hidden), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model


def vgg(cfg, batch_norm, num_classes=1000, dropout=0.5, hidden=4096):
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
        nn.Linear(25088, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
        nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model


def divisible(v, d=8):
    r = max(d, int(v + d / 2) // d * d)
    return r + d if r < 0.9 * v else r


def _cna(i, o, k=3, s=1, groups=1, norm=nn.BatchNorm2d, act=nn.ReLU6, dilation=1):
    """Conv2dNormActivation: "same" padding, a bias only without a norm."""
    layers = [nn.Conv2d(i, o, k, s, (k - 1) // 2 * dilation, dilation=dilation, groups=groups,
                        bias=norm is None)]
    layers += [norm(o)] if norm is not None else []
    layers += [act()] if act is not None else []
    return nn.Sequential(*layers)


class _MBv2Block(nn.Module):
    def __init__(self, i, o, stride, t):
        super().__init__()
        hidden = int(round(i * t))
        self.res = stride == 1 and i == o
        layers = [_cna(i, hidden, 1)] if t != 1 else []
        layers += [_cna(hidden, hidden, 3, stride, hidden), nn.Conv2d(hidden, o, 1, bias=False),
                   nn.BatchNorm2d(o)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


def mobilenet_v2(num_classes=1000, width_mult=1.0, dropout=0.2):
    setting = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]
    channels, last = divisible(32 * width_mult), divisible(1280 * max(1.0, width_mult))
    features = [_cna(3, channels, 3, 2)]
    for t, c, n, s in setting:
        for i in range(n):
            features.append(_MBv2Block(channels, divisible(c * width_mult), s if i == 0 else 1, t))
            channels = divisible(c * width_mult)
    features.append(_cna(channels, last, 1))
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


class _Fire(nn.Module):
    def __init__(self, inp, squeeze, e1, e3):
        super().__init__()
        self.squeeze, self.squeeze_activation = nn.Conv2d(inp, squeeze, 1), nn.ReLU()
        self.expand1x1, self.expand1x1_activation = nn.Conv2d(squeeze, e1, 1), nn.ReLU()
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU()

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


def squeezenet(version, num_classes=1000, dropout=0.5):
    def pool():
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    if version == "1_0":
        features = [nn.Conv2d(3, 96, 7, 2), nn.ReLU(), pool(), _Fire(96, 16, 64, 64),
                    _Fire(128, 16, 64, 64), _Fire(128, 32, 128, 128), pool(),
                    _Fire(256, 32, 128, 128), _Fire(256, 48, 192, 192), _Fire(384, 48, 192, 192),
                    _Fire(384, 64, 256, 256), pool(), _Fire(512, 64, 256, 256)]
    else:
        features = [nn.Conv2d(3, 64, 3, 2), nn.ReLU(), pool(), _Fire(64, 16, 64, 64),
                    _Fire(128, 16, 64, 64), pool(), _Fire(128, 32, 128, 128),
                    _Fire(256, 32, 128, 128), pool(), _Fire(256, 48, 192, 192),
                    _Fire(384, 48, 192, 192), _Fire(384, 64, 256, 256), _Fire(512, 64, 256, 256)]
    model = nn.Module()
    model.features = nn.Sequential(*features)
    model.classifier = nn.Sequential(nn.Dropout(dropout), nn.Conv2d(512, num_classes, 1),
                                     nn.ReLU(), nn.AdaptiveAvgPool2d(1))
    model.forward = lambda x: torch.flatten(model.classifier(model.features(x)), 1)
    return model


class _ShuffleUnit(nn.Module):
    def __init__(self, inp, out, stride):
        super().__init__()
        self.stride, half = stride, out // 2
        self.branch1 = nn.Sequential()
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(inp, inp, 3, stride, 1, groups=inp, bias=False), nn.BatchNorm2d(inp),
                nn.Conv2d(inp, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU())
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if stride > 1 else half, half, 1, bias=False), nn.BatchNorm2d(half),
            nn.ReLU(), nn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False),
            nn.BatchNorm2d(half), nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half),
            nn.ReLU())

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), 1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), 1)
        n, c, h, w = out.shape  # channel shuffle, two groups
        return out.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)


def shufflenet_v2(repeats, widths, num_classes=1000):
    model = nn.Module()
    model.conv1 = nn.Sequential(nn.Conv2d(3, widths[0], 3, 2, 1, bias=False),
                                nn.BatchNorm2d(widths[0]), nn.ReLU())
    model.maxpool = nn.MaxPool2d(3, 2, 1)
    c = widths[0]
    for name, r, o in zip(["stage2", "stage3", "stage4"], repeats, widths[1:]):
        units = [_ShuffleUnit(c, o, 2)] + [_ShuffleUnit(o, o, 1) for _ in range(r - 1)]
        setattr(model, name, nn.Sequential(*units))
        c = o
    model.conv5 = nn.Sequential(nn.Conv2d(c, widths[-1], 1, bias=False),
                                nn.BatchNorm2d(widths[-1]), nn.ReLU())
    model.fc = nn.Linear(widths[-1], num_classes)
    model.forward = lambda x: model.fc(model.conv5(model.stage4(model.stage3(model.stage2(
        model.maxpool(model.conv1(x)))))).mean([2, 3]))
    return model


class _SE(nn.Module):
    def __init__(self, channels, squeeze, act=nn.ReLU, scale=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1, self.fc2 = nn.Conv2d(channels, squeeze, 1), nn.Conv2d(squeeze, channels, 1)
        self.activation, self.scale_activation = act(), scale()

    def forward(self, x):
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x))))) * x


class _Residual(nn.Module):
    """``block(x) (+ x when the shapes allow)``, the blocks' forward in the MobileNets,
    EfficientNets and MNASNet (stochastic depth aside: the twins are built without it)."""

    def __init__(self, residual, block, name="block"):
        super().__init__()
        self.residual, self.name = residual, name
        setattr(self, name, block)

    def forward(self, x):
        y = getattr(self, self.name)(x)
        return y + x if self.residual else y


def _mbv3_block(i, k, e, o, se, hardswish, stride, norm):
    act = nn.Hardswish if hardswish else nn.ReLU
    layers = [_cna(i, e, 1, norm=norm, act=act)] if e != i else []
    layers.append(_cna(e, e, k, stride, e, norm, act))
    layers += [_SE(e, divisible(e // 4), scale=nn.Hardsigmoid)] if se else []
    layers.append(_cna(e, o, 1, norm=norm, act=None))
    return _Residual(stride == 1 and i == o, nn.Sequential(*layers))


def mobilenet_v3_small(num_classes=1000, dropout=0.2, width_mult=1.0):
    norm = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)

    def scale(c):
        return divisible(c * width_mult)

    rows = [(16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2),
            (24, 3, 88, 24, False, False, 1), (24, 5, 96, 40, True, True, 2),
            (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
            (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1),
            (48, 5, 288, 96, True, True, 2), (96, 5, 576, 96, True, True, 1),
            (96, 5, 576, 96, True, True, 1)]
    layers = [_cna(3, scale(16), 3, 2, norm=norm, act=nn.Hardswish)]
    layers += [_mbv3_block(scale(i), k, scale(e), scale(o), se, hs, s, norm)
               for i, k, e, o, se, hs, s in rows]
    last_in, last = scale(96), scale(1024)
    layers.append(_cna(last_in, 6 * last_in, 1, norm=norm, act=nn.Hardswish))
    model = nn.Module()
    model.features = nn.Sequential(*layers)
    model.avgpool = nn.AdaptiveAvgPool2d(1)
    model.classifier = nn.Sequential(nn.Linear(6 * last_in, last), nn.Hardswish(),
                                     nn.Dropout(dropout), nn.Linear(last, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model


def _mbconv(ratio, k, stride, i, o, norm):
    e = divisible(i * ratio)
    layers = [_cna(i, e, 1, norm=norm, act=nn.SiLU)] if e != i else []
    layers += [_cna(e, e, k, stride, e, norm, nn.SiLU), _SE(e, max(1, i // 4), act=nn.SiLU),
               _cna(e, o, 1, norm=norm, act=None)]
    return _Residual(stride == 1 and i == o, nn.Sequential(*layers))


def _fused_mbconv(ratio, k, stride, i, o, norm):
    e = divisible(i * ratio)
    if e != i:
        layers = [_cna(i, e, k, stride, norm=norm, act=nn.SiLU), _cna(e, o, 1, norm=norm, act=None)]
    else:
        layers = [_cna(i, o, k, stride, norm=norm, act=nn.SiLU)]
    return _Residual(stride == 1 and i == o, nn.Sequential(*layers))


def efficientnet(stages, num_classes=1000, norm=nn.BatchNorm2d, last_channel=None):
    """``stages``: (fused, expansion, kernel, stride, input, output, blocks), channels final."""
    layers = [_cna(3, stages[0][4], 3, 2, norm=norm, act=nn.SiLU)]
    for fused, t, k, s, i, o, n in stages:
        block = _fused_mbconv if fused else _mbconv
        layers.append(nn.Sequential(*[block(t, k, s if b == 0 else 1, i if b == 0 else o, o, norm)
                                      for b in range(n)]))
    last_in = stages[-1][5]
    last = last_channel or 4 * last_in
    layers.append(_cna(last_in, last, 1, norm=norm, act=nn.SiLU))
    model = nn.Module()
    model.features = nn.Sequential(*layers)
    model.avgpool = nn.AdaptiveAvgPool2d(1)
    model.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(last, num_classes))
    model.forward = lambda x: model.classifier(torch.flatten(model.avgpool(model.features(x)), 1))
    return model


class _DenseLayer(nn.Module):
    def __init__(self, inp, growth, bn_size):
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(inp), nn.ReLU()
        self.conv1 = nn.Conv2d(inp, bn_size * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(bn_size * growth), nn.ReLU()
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, features):
        x = self.conv1(self.relu1(self.norm1(torch.cat(features, 1))))
        return self.conv2(self.relu2(self.norm2(x)))


class _DenseBlock(nn.ModuleDict):
    def __init__(self, layers, inp, bn_size, growth):
        super().__init__()
        for j in range(layers):
            self.add_module(f"denselayer{j + 1}", _DenseLayer(inp + j * growth, growth, bn_size))

    def forward(self, x):
        features = [x]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


def densenet(growth, blocks, init, bn_size=4, num_classes=1000):
    model = nn.Module()
    model.features = nn.Sequential(OrderedDict([
        ("conv0", nn.Conv2d(3, init, 7, 2, 3, bias=False)), ("norm0", nn.BatchNorm2d(init)),
        ("relu0", nn.ReLU()), ("pool0", nn.MaxPool2d(3, 2, 1))]))
    c = init
    for i, n in enumerate(blocks):
        model.features.add_module(f"denseblock{i + 1}", _DenseBlock(n, c, bn_size, growth))
        c += n * growth
        if i != len(blocks) - 1:
            model.features.add_module(f"transition{i + 1}", nn.Sequential(OrderedDict([
                ("norm", nn.BatchNorm2d(c)), ("relu", nn.ReLU()),
                ("conv", nn.Conv2d(c, c // 2, 1, bias=False)), ("pool", nn.AvgPool2d(2, 2))])))
            c //= 2
    model.features.add_module("norm5", nn.BatchNorm2d(c))
    model.classifier = nn.Linear(c, num_classes)
    model.forward = lambda x: model.classifier(torch.flatten(
        F.adaptive_avg_pool2d(F.relu(model.features(x)), 1), 1))
    return model


def mnasnet(alpha, num_classes=1000):
    bn = partial(nn.BatchNorm2d, momentum=1 - 0.9997)

    def block(i, o, k, s, t):
        mid = i * t
        return _Residual(i == o and s == 1, nn.Sequential(
            nn.Conv2d(i, mid, 1, bias=False), bn(mid), nn.ReLU(),
            nn.Conv2d(mid, mid, k, s, k // 2, groups=mid, bias=False), bn(mid), nn.ReLU(),
            nn.Conv2d(mid, o, 1, bias=False), bn(o)), name="layers")

    def stack(i, o, k, s, t, n):
        return nn.Sequential(block(i, o, k, s, t), *[block(o, o, k, 1, t) for _ in range(n - 1)])

    d = [divisible(w * alpha) for w in [32, 16, 24, 40, 80, 96, 192, 320]]
    model = nn.Module()
    model.layers = nn.Sequential(
        nn.Conv2d(3, d[0], 3, 2, 1, bias=False), bn(d[0]), nn.ReLU(),
        nn.Conv2d(d[0], d[0], 3, 1, 1, groups=d[0], bias=False), bn(d[0]), nn.ReLU(),
        nn.Conv2d(d[0], d[1], 1, bias=False), bn(d[1]),
        stack(d[1], d[2], 3, 2, 3, 3), stack(d[2], d[3], 5, 2, 3, 3), stack(d[3], d[4], 5, 2, 6, 3),
        stack(d[4], d[5], 3, 1, 6, 2), stack(d[5], d[6], 5, 2, 6, 4), stack(d[6], d[7], 3, 1, 6, 1),
        nn.Conv2d(d[7], 1280, 1, bias=False), bn(1280), nn.ReLU())
    model.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(1280, num_classes))
    model.forward = lambda x: model.classifier(model.layers(x).mean([2, 3]))
    return model
