"""torchvision's S3D (Xie et al., "Rethinking Spatiotemporal Feature Learning", 2018): an
Inception network whose 3-D convolutions are separated into a 1×k×k spatial and a k×1×1
temporal one, with torchvision's module names and PyTorch's default initialization. Clips
(N, C, T, H, W) need at least 13 frames of 209×209 (the final 2×7×7 average pool; torchvision
trains on 16 × 224 × 224).

Example:
    >>> model = s3d(num_classes=5).eval()
    >>> model(ember.randn(1, 3, 13, 224, 224)).shape  # doctest: +SKIP
    ember.Size([1, 5])
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import ember
from ember import Tensor, nn
from ember.vision.models._api import make_builder
from ember.vision.ops import Conv3dNormActivation

__all__ = ["S3D", "s3d"]

Norm = Callable[..., nn.Module]


class TemporalSeparableConv(nn.Sequential):
    """A 1×k×k convolution (spatial stride) then a k×1×1 one (temporal stride), each with its
    norm and ReLU."""

    def __init__(self, in_planes: int, out_planes: int, kernel_size: int, stride: int,
                 padding: int, norm_layer: Norm) -> None:
        k, s, p = kernel_size, stride, padding
        super().__init__(
            Conv3dNormActivation(in_planes, out_planes, (1, k, k), (1, s, s), (0, p, p),
                                 bias=False, norm_layer=norm_layer),
            Conv3dNormActivation(out_planes, out_planes, (k, 1, 1), (s, 1, 1), (p, 0, 0),
                                 bias=False, norm_layer=norm_layer))


class SepInceptionBlock3D(nn.Module):
    """Four branches joined on channels: a 1×1×1 convolution; 1×1×1 then a separable 3×3×3
    (two of these, of their own widths); and a 3×3×3 max pool then a 1×1×1 convolution."""

    def __init__(self, in_planes: int, b0_out: int, b1_mid: int, b1_out: int, b2_mid: int,
                 b2_out: int, b3_out: int, norm_layer: Norm) -> None:
        super().__init__()
        point = partial(Conv3dNormActivation, kernel_size=1, norm_layer=norm_layer)
        separable = partial(TemporalSeparableConv, kernel_size=3, stride=1, padding=1,
                            norm_layer=norm_layer)
        self.branch0 = point(in_planes, b0_out)
        self.branch1 = nn.Sequential(point(in_planes, b1_mid), separable(b1_mid, b1_out))
        self.branch2 = nn.Sequential(point(in_planes, b2_mid), separable(b2_mid, b2_out))
        self.branch3 = nn.Sequential(nn.MaxPool3d(3, stride=1, padding=1),
                                     point(in_planes, b3_out))

    def forward(self, x: Tensor) -> Tensor:
        return ember.cat([self.branch0(x), self.branch1(x), self.branch2(x), self.branch3(x)], 1)


class S3D(nn.Module):
    """S3D's separable stem, nine separable Inception blocks between max pools, a 2×7×7
    average pool (stride 1), dropout and a 1×1×1 convolution as classifier, averaged over
    the remaining time and space. The default norm is torchvision's
    ``BatchNorm3d(eps=1e-3, momentum=1e-3)``.

    Example:
        >>> S3D(num_classes=3).classifier[1]
        Conv3d(1024, 3, kernel_size=(1, 1, 1), stride=(1, 1, 1))
    """

    def __init__(self, num_classes: int = 400, dropout: float = 0.2,
                 norm_layer: Norm | None = None) -> None:
        super().__init__()
        norm = norm_layer or partial(nn.BatchNorm3d, eps=0.001, momentum=0.001)
        block = partial(SepInceptionBlock3D, norm_layer=norm)
        spatial_pool = partial(nn.MaxPool3d, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.features = nn.Sequential(
            TemporalSeparableConv(3, 64, 7, 2, 3, norm), spatial_pool(),
            Conv3dNormActivation(64, 64, 1, norm_layer=norm),
            TemporalSeparableConv(64, 192, 3, 1, 1, norm), spatial_pool(),
            block(192, 64, 96, 128, 16, 32, 32), block(256, 128, 128, 192, 32, 96, 64),
            nn.MaxPool3d(3, stride=2, padding=1),
            block(480, 192, 96, 208, 16, 48, 64), block(512, 160, 112, 224, 24, 64, 64),
            block(512, 128, 128, 256, 24, 64, 64), block(512, 112, 144, 288, 32, 64, 64),
            block(528, 256, 160, 320, 32, 128, 128),
            nn.MaxPool3d(2, stride=2),
            block(832, 256, 160, 320, 32, 128, 128), block(832, 384, 192, 384, 48, 128, 128))
        self.avgpool = nn.AvgPool3d((2, 7, 7), stride=1)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Conv3d(1024, num_classes, 1))

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x))).mean((2, 3, 4))


s3d = make_builder("s3d", S3D, "S3D (separable 3-D Inception)", __name__)
