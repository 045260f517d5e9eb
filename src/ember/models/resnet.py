"""ResNet-18 (He et al. 2015) with torchvision's module names (``conv1``, ``bn1``,
``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``, …) and the CIFAR stem: a 3×3
stride-1 first convolution and no max-pool, for 32×32 inputs."""

from __future__ import annotations

from ember import Tensor, nn


class BasicBlock(nn.Module):
    """Two 3×3 conv + BatchNorm layers with an identity (or 1×1 conv) shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """A ResNet of :class:`BasicBlock` stages with 64, 128, 256 and 512 channels.

    ``in_channels`` (an Ember extension; torchvision fixes 3) lets it read grey images.
    """

    def __init__(self, layers: list[int], num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet18(num_classes: int = 10, in_channels: int = 3) -> ResNet:
    """ResNet-18: [2, 2, 2, 2] basic blocks, CIFAR stem (input 3×32×32).

    Example:
        >>> ember.models.resnet18()(ember.randn(2, 3, 32, 32)).shape
        ember.Size([2, 10])
    """
    return ResNet([2, 2, 2, 2], num_classes=num_classes, in_channels=in_channels)
