"""ResNets (He et al. 2015) as torchvision builds them: the same module names (``conv1``,
``bn1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``, …), blocks, widths, groups,
dilation and initialization, so torchvision's state dicts load. :func:`resnet18` here has the
CIFAR stem (a 3×3 stride-1 first convolution and no max-pool, for 32×32 inputs); the
ImageNet-shaped family is in :mod:`ember.vision.models`."""

from __future__ import annotations

from collections.abc import Callable

from ember import Tensor, nn
from ember.errors import ArgumentError

Norm = Callable[[int], nn.Module]


def _conv3x3(inplanes: int, planes: int, stride: int = 1, groups: int = 1,
             dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(inplanes, planes, 3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


class BasicBlock(nn.Module):
    """Two 3×3 conv + norm layers with an identity (or 1×1 conv) shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None, groups: int = 1, base_width: int = 64,
                 dilation: int = 1, norm_layer: Norm | None = None) -> None:
        super().__init__()
        if groups != 1 or base_width != 64:
            raise ArgumentError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        norm_layer = norm_layer or nn.BatchNorm2d
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1×1 reduce, 3×3 (grouped, strided, dilated), 1×1 expand by 4, with a shortcut; the
    stride sits on the 3×3 convolution (ResNet v1.5, as torchvision)."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None, groups: int = 1, base_width: int = 64,
                 dilation: int = 1, norm_layer: Norm | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = norm_layer(width)
        self.conv2 = _conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """Four stages of ``block`` with 64, 128, 256 and 512 base channels, torchvision's
    arguments and initialization (He-normal convolutions, unit norms, optionally the last
    norm of each block zeroed).

    Ember extensions: ``in_channels`` (torchvision fixes 3) lets it read grey images, and
    ``small_input`` swaps the stem for the CIFAR one (3×3 stride 1, no max-pool) and keeps
    the layers' default initialization, which :func:`resnet18` has always trained from
    (``zero_init_residual`` still zeroes each block's last norm).

    Example:
        >>> model = ResNet(BasicBlock, [1, 1, 1, 1], zero_init_residual=True, small_input=True)
        >>> model.layer1[0].bn2.weight.abs().sum().item()
        0.0
    """

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int],
                 num_classes: int = 1000, zero_init_residual: bool = False, groups: int = 1,
                 width_per_group: int = 64,
                 replace_stride_with_dilation: list[bool] | None = None,
                 norm_layer: Norm | None = None, *, in_channels: int = 3,
                 small_input: bool = False) -> None:
        super().__init__()
        self._norm_layer = norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes, self.dilation = 64, 1
        dilate = replace_stride_with_dilation or [False, False, False]
        if len(dilate) != 3:
            raise ArgumentError("replace_stride_with_dilation should be None or a 3-element "
                                f"tuple, got {replace_stride_with_dilation}")
        self.groups, self.base_width = groups, width_per_group
        if small_input:
            self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.Identity() if small_input else nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2, dilate[0])
        self.layer3 = self._make_layer(block, 256, layers[2], 2, dilate[1])
        self.layer4 = self._make_layer(block, 512, layers[3], 2, dilate[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        if not small_input:
            _init_like_torchvision(self)
        if zero_init_residual:
            _zero_init_residual(self)

    def _make_layer(self, block: type[BasicBlock | Bottleneck], planes: int, blocks: int,
                    stride: int = 1, dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride=stride,
                          bias=False),
                norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups,
                        self.base_width, previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=norm_layer)
                   for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def _init_like_torchvision(model: ResNet) -> None:
    """He-normal convolutions (fan-out), unit-scale norms."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


def _zero_init_residual(model: ResNet) -> None:
    """Each block's last norm starts at zero, so every block starts as the identity."""
    for m in model.modules():
        if isinstance(m, (BasicBlock, Bottleneck)):
            last = m.bn3 if isinstance(m, Bottleneck) else m.bn2
            if getattr(last, "weight", None) is not None:
                nn.init.constant_(last.weight, 0)


def resnet18(num_classes: int = 10, in_channels: int = 3) -> ResNet:
    """ResNet-18: [2, 2, 2, 2] basic blocks, CIFAR stem (input 3×32×32).

    Example:
        >>> ember.models.resnet18()(ember.randn(2, 3, 32, 32)).shape
        ember.Size([2, 10])
    """
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, in_channels=in_channels,
                  small_input=True)
