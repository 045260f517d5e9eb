"""torchvision's video ResNets (Tran et al., "A Closer Look at Spatiotemporal Convolutions",
2018) on clips shaped (N, C, T, H, W): R3D-18 (3×3×3 convolutions throughout), MC3-18 (3-D in
the stem and first stage, 1×3×3 after) and R(2+1)D-18 (each 3×3×3 convolution split into a
1×3×3 spatial and a 3×1×1 temporal one, with about as many parameters). Module names,
widths and initialization are torchvision's, so its Kinetics-400 state dicts load.

Example:
    >>> r3d_18(num_classes=5)(ember.randn(1, 3, 4, 32, 32)).shape
    ember.Size([1, 5])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms, small_normal_linear

__all__ = ["VideoResNet", "r3d_18", "mc3_18", "r2plus1d_18"]


class Conv3DSimple(nn.Conv3d):
    """A full 3×3×3 convolution, strided in time and space alike."""

    def __init__(self, in_planes: int, out_planes: int, midplanes: int | None = None,
                 stride: int = 1, padding: int = 1) -> None:
        super().__init__(in_planes, out_planes, 3, stride=stride, padding=padding, bias=False)

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return stride, stride, stride


class Conv3DNoTemporal(nn.Conv3d):
    """A 1×3×3 convolution: spatial only, frames stay apart and are never strided."""

    def __init__(self, in_planes: int, out_planes: int, midplanes: int | None = None,
                 stride: int = 1, padding: int = 1) -> None:
        super().__init__(in_planes, out_planes, (1, 3, 3), stride=(1, stride, stride),
                         padding=(0, padding, padding), bias=False)

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return 1, stride, stride


class Conv2Plus1D(nn.Sequential):
    """A 1×3×3 spatial convolution to ``midplanes`` channels, batch norm and ReLU, then a
    3×1×1 temporal convolution."""

    def __init__(self, in_planes: int, out_planes: int, midplanes: int, stride: int = 1,
                 padding: int = 1) -> None:
        super().__init__(
            nn.Conv3d(in_planes, midplanes, (1, 3, 3), stride=(1, stride, stride),
                      padding=(0, padding, padding), bias=False),
            nn.BatchNorm3d(midplanes), nn.ReLU(),
            nn.Conv3d(midplanes, out_planes, (3, 1, 1), stride=(stride, 1, 1),
                      padding=(padding, 0, 0), bias=False))

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return stride, stride, stride


ConvMaker = Callable[..., nn.Module]


def _midplanes(inplanes: int, planes: int) -> int:
    """The (2+1)-D middle width that keeps the parameter count of a 3×3×3 convolution."""
    return (inplanes * planes * 27) // (inplanes * 9 + 3 * planes)


class BasicBlock(nn.Module):
    """Two convolutions from ``conv_builder`` with batch norms, and a shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, conv_builder: ConvMaker, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        mid = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(conv_builder(inplanes, planes, mid, stride),
                                   nn.BatchNorm3d(planes), nn.ReLU())
        self.conv2 = nn.Sequential(conv_builder(planes, planes, mid), nn.BatchNorm3d(planes))
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(self.conv2(self.conv1(x)) + shortcut)


class Bottleneck(nn.Module):
    """1×1×1 reduce, a ``conv_builder`` convolution (strided), 1×1×1 expand by 4, and a
    shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, conv_builder: ConvMaker, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv3d(inplanes, planes, 1, bias=False),
                                   nn.BatchNorm3d(planes), nn.ReLU())
        mid = _midplanes(inplanes, planes)
        self.conv2 = nn.Sequential(conv_builder(planes, planes, mid, stride),
                                   nn.BatchNorm3d(planes), nn.ReLU())
        self.conv3 = nn.Sequential(nn.Conv3d(planes, planes * 4, 1, bias=False),
                                   nn.BatchNorm3d(planes * 4))
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(self.conv3(self.conv2(self.conv1(x))) + shortcut)


class BasicStem(nn.Sequential):
    """A 3×7×7 convolution to 64 channels, stride 2 in space only, batch norm and ReLU."""

    def __init__(self) -> None:
        super().__init__(nn.Conv3d(3, 64, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3),
                                   bias=False),
                         nn.BatchNorm3d(64), nn.ReLU())


class R2Plus1dStem(nn.Sequential):
    """The stem split as the blocks are: 1×7×7 to 45 channels, then 3×1×1 to 64."""

    def __init__(self) -> None:
        super().__init__(nn.Conv3d(3, 45, (1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3),
                                   bias=False),
                         nn.BatchNorm3d(45), nn.ReLU(),
                         nn.Conv3d(45, 64, (3, 1, 1), padding=(1, 0, 0), bias=False),
                         nn.BatchNorm3d(64), nn.ReLU())


class VideoResNet(nn.Module):
    """A stem, four stages of ``block`` (widths 64–512, stride 2 from the second stage, each
    stage's convolutions from its entry in ``conv_makers``), global average pooling over time
    and space, and a linear classifier. ``zero_init_residual`` starts each block's last batch
    norm at weight 0, so every block begins as its shortcut (torchvision's flag does nothing
    for these models).

    Example:
        >>> net = VideoResNet(BasicBlock, [Conv3DSimple] * 4, [1, 1, 1, 1], BasicStem, 3)
        >>> net(ember.randn(2, 3, 2, 16, 16)).shape
        ember.Size([2, 3])
    """

    def __init__(self, block: type[BasicBlock | Bottleneck], conv_makers: Sequence[ConvMaker],
                 layers: Sequence[int], stem: Callable[[], nn.Module], num_classes: int = 400,
                 zero_init_residual: bool = False) -> None:
        super().__init__()
        if len(conv_makers) != 4 or len(layers) != 4:
            raise ArgumentError(f"VideoResNet: conv_makers and layers need one entry per stage "
                                f"(4), got {len(conv_makers)} and {len(layers)}")
        self.inplanes = 64
        self.stem = stem()
        self.layer1 = self._make_layer(block, conv_makers[0], 64, layers[0], stride=1)
        self.layer2 = self._make_layer(block, conv_makers[1], 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, conv_makers[2], 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, conv_makers[3], 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        init_convs_and_norms(self, linear=small_normal_linear)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, (BasicBlock, Bottleneck)):
                    last = m.conv3 if isinstance(m, Bottleneck) else m.conv2
                    init.zeros_(last[1].weight)

    def _make_layer(self, block: type[BasicBlock | Bottleneck], conv_builder: ConvMaker,
                    planes: int, blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        width = planes * block.expansion
        if stride != 1 or self.inplanes != width:
            downsample = nn.Sequential(
                nn.Conv3d(self.inplanes, width, 1,
                          stride=conv_builder.get_downsample_stride(stride), bias=False),
                nn.BatchNorm3d(width))
        first = block(self.inplanes, planes, conv_builder, stride, downsample)
        self.inplanes = width
        return nn.Sequential(first, *(block(width, planes, conv_builder)
                                      for _ in range(1, blocks)))

    def forward(self, x: Tensor) -> Tensor:
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.fc(self.avgpool(x).flatten(1))


def _builder(name: str, conv_makers: list[ConvMaker], stem: Callable[[], nn.Module],
             doc: str):
    return make_builder(name, partial(VideoResNet, BasicBlock, conv_makers, [2, 2, 2, 2], stem),
                        doc, __name__)


r3d_18 = _builder("r3d_18", [Conv3DSimple] * 4, BasicStem, "R3D-18 (3-D convolutions)")
mc3_18 = _builder("mc3_18", [Conv3DSimple] + [Conv3DNoTemporal] * 3, BasicStem,
                  "MC3-18 (mixed convolutions: 3-D in the first stage, 2-D after)")
r2plus1d_18 = _builder("r2plus1d_18", [Conv2Plus1D] * 4, R2Plus1dStem,
                       "R(2+1)D-18 (factorized spatial and temporal convolutions)")
