"""Inception v3 (Szegedy et al. 2015) as torchvision builds it: a convolutional stem, Inception
blocks A–E with factorized (1×7, 7×1, 1×3, 3×1) convolutions and grid reductions, and an
auxiliary classifier used in training. Inputs should be at least 75×75 (299×299 as trained).

Example:
    >>> model = inception_v3(num_classes=10, aux_logits=False, init_weights=False).eval()
    >>> model(ember.randn(1, 3, 75, 75)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_truncated_normal
from ember.vision.models.googlenet import BasicConv2d, transform_input

__all__ = ["Inception3", "InceptionOutputs", "inception_v3"]

InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])

Conv = Callable[..., nn.Module]


class _Branches(nn.Module):
    """An Inception block's pooling and concatenations, as methods a quantizable twin
    overrides (``ember.quant.models.inception``)."""

    def _avg_pool(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)

    def _max_pool(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, kernel_size=3, stride=2)

    def _cat(self, tensors: list[Tensor], which: int = 0) -> Tensor:
        """``tensors`` concatenated on channels (``which``: the block's how manyth cat)."""
        return ember.cat(tensors, 1)


class InceptionA(_Branches):
    """35×35 block: 1×1; 1×1→5×5; 1×1→3×3→3×3; average pool→1×1 (``pool_features``)."""

    def __init__(self, in_channels: int, pool_features: int, conv_block: Conv | None = None):
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch1x1 = conv(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = conv(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = conv(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = conv(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv(96, 96, kernel_size=3, padding=1)
        self.branch_pool = conv(in_channels, pool_features, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return self._cat([self.branch1x1(x), b5, b3, self.branch_pool(self._avg_pool(x))])


class InceptionB(_Branches):
    """35→17 reduction: strided 3×3; 1×1→3×3→strided 3×3; strided 3×3 max-pool."""

    def __init__(self, in_channels: int, conv_block: Conv | None = None) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch3x3 = conv(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv(96, 96, kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return self._cat([self.branch3x3(x), b3, self._max_pool(x)])


class InceptionC(_Branches):
    """17×17 block with 7×7 convolutions factorized into 1×7 and 7×1 (``channels_7x7``
    wide inside)."""

    def __init__(self, in_channels: int, channels_7x7: int, conv_block: Conv | None = None):
        super().__init__()
        conv, c7 = conv_block or BasicConv2d, channels_7x7
        row, col = {"kernel_size": (1, 7), "padding": (0, 3)}, {"kernel_size": (7, 1),
                                                                 "padding": (3, 0)}
        self.branch1x1 = conv(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = conv(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv(c7, c7, **row)
        self.branch7x7_3 = conv(c7, 192, **col)
        self.branch7x7dbl_1 = conv(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = conv(c7, c7, **col)
        self.branch7x7dbl_3 = conv(c7, c7, **row)
        self.branch7x7dbl_4 = conv(c7, c7, **col)
        self.branch7x7dbl_5 = conv(c7, 192, **row)
        self.branch_pool = conv(in_channels, 192, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        d = x
        for layer in (self.branch7x7dbl_1, self.branch7x7dbl_2, self.branch7x7dbl_3,
                      self.branch7x7dbl_4, self.branch7x7dbl_5):
            d = layer(d)
        return self._cat([self.branch1x1(x), b7, d, self.branch_pool(self._avg_pool(x))])


class InceptionD(_Branches):
    """17→8 reduction: 1×1→strided 3×3; 1×1→1×7→7×1→strided 3×3; strided max-pool."""

    def __init__(self, in_channels: int, conv_block: Conv | None = None) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch3x3_1 = conv(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = conv(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = conv(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = conv(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = conv(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = conv(192, 192, kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return self._cat([b3, b7, self._max_pool(x)])


class InceptionE(_Branches):
    """8×8 block whose 3×3 branches split into parallel 1×3 and 3×1 convolutions."""

    def __init__(self, in_channels: int, conv_block: Conv | None = None) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        row, col = {"kernel_size": (1, 3), "padding": (0, 1)}, {"kernel_size": (3, 1),
                                                                 "padding": (1, 0)}
        self.branch1x1 = conv(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv(384, 384, **row)
        self.branch3x3_2b = conv(384, 384, **col)
        self.branch3x3dbl_1 = conv(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv(384, 384, **row)
        self.branch3x3dbl_3b = conv(384, 384, **col)
        self.branch_pool = conv(in_channels, 192, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        b3 = self.branch3x3_1(x)
        b3 = self._cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        d = self._cat([self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d)], 2)
        return self._cat([self.branch1x1(x), b3, d, self.branch_pool(self._avg_pool(x))],
                         3)


class InceptionAux(nn.Module):
    """Auxiliary classifier on the 17×17 grid: 5×5 stride-3 average pool, 1×1 conv to 128,
    5×5 conv to 768, global pool, Linear (init std 0.001)."""

    def __init__(self, in_channels: int, num_classes: int, conv_block: Conv | None = None):
        super().__init__()
        conv = conv_block or BasicConv2d
        self.conv0 = conv(in_channels, 128, kernel_size=1)
        self.conv1 = conv(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        return self.fc(F.adaptive_avg_pool2d(x, (1, 1)).flatten(1))


class Inception3(nn.Module):
    """torchvision's ``Inception3(num_classes=1000, aux_logits=True, transform_input=False,
    inception_blocks=None, init_weights=None, dropout=0.5)``: in training mode with
    ``aux_logits`` the forward returns :data:`InceptionOutputs`, otherwise the logits.
    ``inception_blocks`` replaces ``[BasicConv2d, InceptionA, …, InceptionE, InceptionAux]``;
    weights start truncated N(0, σ²) with σ 0.1 unless the layer sets ``stddev``
    (``init_weights=None`` means True)."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True,
                 transform_input: bool = False,
                 inception_blocks: list[Callable[..., nn.Module]] | None = None,
                 init_weights: bool | None = None, dropout: float = 0.5) -> None:
        super().__init__()
        inception_blocks = inception_blocks or [BasicConv2d, InceptionA, InceptionB, InceptionC,
                                                InceptionD, InceptionE, InceptionAux]
        if len(inception_blocks) != 7:
            raise ArgumentError(f"length of inception_blocks should be 7 instead of "
                                f"{len(inception_blocks)}")
        conv, block_a, block_b, block_c, block_d, block_e, aux = inception_blocks
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.Conv2d_1a_3x3 = conv(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = block_a(192, pool_features=32)
        self.Mixed_5c = block_a(256, pool_features=64)
        self.Mixed_5d = block_a(288, pool_features=64)
        self.Mixed_6a = block_b(288)
        self.Mixed_6b = block_c(768, channels_7x7=128)
        self.Mixed_6c = block_c(768, channels_7x7=160)
        self.Mixed_6d = block_c(768, channels_7x7=160)
        self.Mixed_6e = block_c(768, channels_7x7=192)
        self.AuxLogits = aux(768, num_classes) if aux_logits else None
        self.Mixed_7a = block_d(768)
        self.Mixed_7b = block_e(1280)
        self.Mixed_7c = block_e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)
        if init_weights is None or init_weights:
            # as torchvision: only a Conv2d or Linear's own ``stddev`` counts, so the aux
            # classifier's fc takes 0.001 and its conv1 (a BasicConv2d) 0.1 like the rest
            init_truncated_normal(self, 0.1)

    def forward(self, x: Tensor) -> Tensor | InceptionOutputs:
        if self.transform_input:
            x = transform_input(x)
        return self._outputs(*self._forward(x))

    def _forward(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """The logits and the auxiliary classifier's (``None`` unless training with it)."""
        x = self.maxpool1(self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x))))
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)))
        for name in ("5b", "5c", "5d", "6a", "6b", "6c", "6d", "6e"):
            x = getattr(self, f"Mixed_{name}")(x)
        aux = self.AuxLogits(x) if self.training and self.AuxLogits is not None else None
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
        return self.fc(self.dropout(self.avgpool(x)).flatten(1)), aux

    def _outputs(self, x: Tensor, aux: Tensor | None) -> Tensor | InceptionOutputs:
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


inception_v3 = make_builder("inception_v3", Inception3, "Inception v3", __name__)
