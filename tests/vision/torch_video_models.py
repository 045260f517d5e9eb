"""torchvision's video ResNets rebuilt in plain torch.nn from torchvision's source (torchvision
itself is not installed) with its module names: the references for
``ember.vision.models.video``."""

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
    """``kinds``: the conv maker of each of the four stages; ``split_stem``: R(2+1)D's stem."""

    def __init__(self, kinds, split_stem=False, num_classes=400):
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
            setattr(self, f"layer{n}", nn.Sequential(_Block(kind, i, o, stride),
                                                     _Block(kind, o, o, 1)))
        self.avgpool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.fc(self.avgpool(x).flatten(1))
