"""GoogLeNet (Inception v1, Szegedy et al. 2014) as torchvision builds it: batch-normalized
convolutions, nine Inception blocks (whose "5×5" branch is 3×3, torchvision's known quirk,
kept so its checkpoints load), and two auxiliary classifiers used in training.

Example:
    >>> model = googlenet(num_classes=10, aux_logits=False, init_weights=False).eval()
    >>> model(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_truncated_normal

__all__ = ["GoogLeNet", "GoogLeNetOutputs", "googlenet"]

# torchvision's names, in its order: the forward gives (logits, aux1's, aux2's) under them
GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])


class BasicConv2d(nn.Module):
    """Bias-free convolution (``kwargs`` to ``nn.Conv2d``), BatchNorm (eps 0.001), ReLU."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.bn(self.conv(x)))


def transform_input(x: Tensor) -> Tensor:
    """Re-normalizes ImageNet-normalized input to the [-1, 1] scaling the ported TensorFlow
    weights of GoogLeNet and Inception v3 expect."""
    scaled = [x[:, i:i + 1] * (std / 0.5) + (mean - 0.5) / 0.5
              for i, (mean, std) in enumerate([(0.485, 0.229), (0.456, 0.224), (0.406, 0.225)])]
    return ember.cat(scaled, 1)


class Inception(nn.Module):
    """Four branches concatenated: 1×1; 1×1 then 3×3; 1×1 then 3×3 (the paper's 5×5); 3×3
    max-pool then 1×1."""

    def __init__(self, in_channels: int, ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int,
                 ch5x5: int, pool_proj: int,
                 conv_block: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(conv_block(in_channels, ch3x3red, kernel_size=1),
                                     conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1))
        self.branch3 = nn.Sequential(conv_block(in_channels, ch5x5red, kernel_size=1),
                                     conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1, ceil_mode=True),
                                     conv_block(in_channels, pool_proj, kernel_size=1))

    def forward(self, x: Tensor) -> Tensor:
        return ember.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier: 4×4 adaptive average pool, 1×1 conv to 128, Linear to 1024,
    ReLU, dropout, Linear."""

    def __init__(self, in_channels: int, num_classes: int,
                 conv_block: Callable[..., nn.Module] | None = None,
                 dropout: float = 0.7) -> None:
        super().__init__()
        self.conv = (conv_block or BasicConv2d)(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv(F.adaptive_avg_pool2d(x, (4, 4))).flatten(1)
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


_INCEPTIONS = {"3a": (192, 64, 96, 128, 16, 32, 32), "3b": (256, 128, 128, 192, 32, 96, 64),
               "4a": (480, 192, 96, 208, 16, 48, 64), "4b": (512, 160, 112, 224, 24, 64, 64),
               "4c": (512, 128, 128, 256, 24, 64, 64), "4d": (512, 112, 144, 288, 32, 64, 64),
               "4e": (528, 256, 160, 320, 32, 128, 128),
               "5a": (832, 256, 160, 320, 32, 128, 128),
               "5b": (832, 384, 192, 384, 48, 128, 128)}


class GoogLeNet(nn.Module):
    """torchvision's ``GoogLeNet(num_classes=1000, aux_logits=True, transform_input=False,
    init_weights=None, blocks=None, dropout=0.2, dropout_aux=0.7)``: in training mode with
    ``aux_logits`` the forward returns :data:`GoogLeNetOutputs`, otherwise the logits.
    ``blocks`` replaces ``[BasicConv2d, Inception, InceptionAux]``; weights start truncated
    N(0, 0.01²) (``init_weights=None`` means True)."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True,
                 transform_input: bool = False, init_weights: bool | None = None,
                 blocks: list[Callable[..., nn.Module]] | None = None, dropout: float = 0.2,
                 dropout_aux: float = 0.7) -> None:
        super().__init__()
        blocks = blocks or [BasicConv2d, Inception, InceptionAux]
        if len(blocks) != 3:
            raise ArgumentError(f"blocks length should be 3 instead of {len(blocks)}")
        conv_block, inception_block, aux_block = blocks
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.conv1 = conv_block(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name in ("3a", "3b"):
            self.add_module(f"inception{name}", inception_block(*_INCEPTIONS[name]))
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name in ("4a", "4b", "4c", "4d", "4e"):
            self.add_module(f"inception{name}", inception_block(*_INCEPTIONS[name]))
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        for name in ("5a", "5b"):
            self.add_module(f"inception{name}", inception_block(*_INCEPTIONS[name]))
        self.aux1 = aux_block(512, num_classes, dropout=dropout_aux) if aux_logits else None
        self.aux2 = aux_block(528, num_classes, dropout=dropout_aux) if aux_logits else None
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)
        if init_weights is None or init_weights:
            init_truncated_normal(self, 0.01)

    def forward(self, x: Tensor) -> Tensor | GoogLeNetOutputs:
        if self.transform_input:
            x = transform_input(x)
        return self._outputs(*self._forward(x))

    def _forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """The logits and the auxiliary heads' (``None`` unless training with them)."""
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.inception4a(x)
        with_aux = self.training and self.aux1 is not None
        aux1 = self.aux1(x) if with_aux else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if with_aux else None
        x = self.maxpool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        return self.fc(self.dropout(self.avgpool(x).flatten(1))), aux2, aux1

    def _outputs(self, x: Tensor, aux2: Tensor | None,
                 aux1: Tensor | None) -> Tensor | GoogLeNetOutputs:
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


googlenet = make_builder("googlenet", GoogLeNet, "GoogLeNet (Inception v1)", __name__)
