"""torchvision's video ResNets and S3D rebuilt in plain torch.nn from torchvision's source
(torchvision itself is not installed) with its module names: the references for
``ember.vision.models.video``."""

from functools import partial

import torch
from torch import nn

SPATIAL, TEMPORAL = (1, 3, 3), (3, 1, 1)


def _conv(kind, i, o, mid, stride):
    """One of torchvision's conv makers: '3d' (3×3×3), '2d' (1×3×3, never strided in time) or
    '2+1d' (1×3×3 to ``mid`` channels, norm, ReLU, 3×1×1)."""
    if kind == "3d":
        return nn.Conv3d(i, o, 3, stride, 1, bias=False)
    if kind == "2d":
        return nn.Conv3d(i, o, SPATIAL, (1, stride, stride), (0, 1, 1), bias=False)
    return nn.Sequential(nn.Conv3d(i, mid, SPATIAL, (1, stride, stride), (0, 1, 1), bias=False),
                         nn.BatchNorm3d(mid), nn.ReLU(),
                         nn.Conv3d(mid, o, TEMPORAL, (stride, 1, 1), (1, 0, 0), bias=False))


class _Block(nn.Module):
    def __init__(self, kind, i, o, stride):
        super().__init__()
        mid = i * o * 27 // (i * 9 + 3 * o)  # both convolutions: the block's input width
        self.conv1 = nn.Sequential(_conv(kind, i, o, mid, stride), nn.BatchNorm3d(o), nn.ReLU())
        self.conv2 = nn.Sequential(_conv(kind, o, o, mid, 1), nn.BatchNorm3d(o))
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or i != o:
            time_stride = 1 if kind == "2d" else stride
            self.downsample = nn.Sequential(
                nn.Conv3d(i, o, 1, (time_stride, stride, stride), bias=False), nn.BatchNorm3d(o))

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(self.conv2(self.conv1(x)) + shortcut)


class VideoResNet(nn.Module):
    """``kinds``: the conv maker of each of the four stages; ``split_stem``: R(2+1)D's stem;
    ``blocks`` per stage (2 in torchvision's builders)."""

    def __init__(self, kinds, split_stem=False, num_classes=400, blocks=2):
        super().__init__()
        if split_stem:
            self.stem = nn.Sequential(
                nn.Conv3d(3, 45, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False),
                nn.BatchNorm3d(45), nn.ReLU(),
                nn.Conv3d(45, 64, TEMPORAL, 1, (1, 0, 0), bias=False), nn.BatchNorm3d(64),
                nn.ReLU())
        else:
            self.stem = nn.Sequential(nn.Conv3d(3, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                      nn.BatchNorm3d(64), nn.ReLU())
        widths = [64, 64, 128, 256, 512]
        for n, kind in enumerate(kinds, 1):
            i, o, stride = widths[n - 1], widths[n], 1 if n == 1 else 2
            setattr(self, f"layer{n}", nn.Sequential(
                _Block(kind, i, o, stride), *(_Block(kind, o, o, 1) for _ in range(1, blocks))))
        self.avgpool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.fc(self.avgpool(x).flatten(1))


def _cna(i, o, k, s=1, p=0, norm=nn.BatchNorm3d):
    """torchvision's Conv3dNormActivation: convolution without bias, norm, ReLU."""
    return nn.Sequential(nn.Conv3d(i, o, k, s, p, bias=False), norm(o), nn.ReLU())


def separable(i, o, k, s, p, norm):
    return nn.Sequential(_cna(i, o, (1, k, k), (1, s, s), (0, p, p), norm),
                         _cna(o, o, (k, 1, 1), (s, 1, 1), (p, 0, 0), norm))


class SepInception(nn.Module):
    def __init__(self, i, b0, b1_mid, b1, b2_mid, b2, b3, norm):
        super().__init__()
        self.branch0 = _cna(i, b0, 1, norm=norm)
        self.branch1 = nn.Sequential(_cna(i, b1_mid, 1, norm=norm),
                                     separable(b1_mid, b1, 3, 1, 1, norm))
        self.branch2 = nn.Sequential(_cna(i, b2_mid, 1, norm=norm),
                                     separable(b2_mid, b2, 3, 1, 1, norm))
        self.branch3 = nn.Sequential(nn.MaxPool3d(3, 1, 1), _cna(i, b3, 1, norm=norm))

    def forward(self, x):
        return torch.cat([self.branch0(x), self.branch1(x), self.branch2(x), self.branch3(x)], 1)


class S3D(nn.Module):
    def __init__(self, num_classes=400, dropout=0.2):
        super().__init__()
        norm = partial(nn.BatchNorm3d, eps=0.001, momentum=0.001)
        widths = [(192, 64, 96, 128, 16, 32, 32), (256, 128, 128, 192, 32, 96, 64), "pool",
                  (480, 192, 96, 208, 16, 48, 64), (512, 160, 112, 224, 24, 64, 64),
                  (512, 128, 128, 256, 24, 64, 64), (512, 112, 144, 288, 32, 64, 64),
                  (528, 256, 160, 320, 32, 128, 128), "pool2",
                  (832, 256, 160, 320, 32, 128, 128), (832, 384, 192, 384, 48, 128, 128)]
        layers = [separable(3, 64, 7, 2, 3, norm), nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)),
                  _cna(64, 64, 1, norm=norm), separable(64, 192, 3, 1, 1, norm),
                  nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1))]
        pools = {"pool": lambda: nn.MaxPool3d(3, 2, 1), "pool2": lambda: nn.MaxPool3d(2, 2)}
        layers += [pools[w]() if w in pools else SepInception(*w, norm) for w in widths]
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AvgPool3d((2, 7, 7), 1)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Conv3d(1024, num_classes, 1))

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x))).mean((2, 3, 4))
