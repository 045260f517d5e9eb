"""MNASNet 0.5/0.75/1.0/1.3 (Tan et al. 2018) as torchvision builds them (its version 2
stem, whose widths follow the depth multiplier): stacks of inverted residual blocks with ReLU
and batch norms of momentum 0.0003.

Example:
    >>> mnasnet0_5(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from functools import partial

from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms
from ember.vision.models._utils import make_divisible

__all__ = ["MNASNet", "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"]

_BN_MOMENTUM = 1 - 0.9997  # TensorFlow's decay 0.9997


class _InvertedResidual(nn.Module):
    """1×1 expansion, depthwise ``kernel_size`` convolution, linear 1×1 projection (each
    batch-normalized, ReLU after the first two); a residual sum when shapes allow."""

    def __init__(self, in_ch: int, out_ch: int, kernel_size: int, stride: int,
                 expansion_factor: int, bn_momentum: float = 0.1) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ArgumentError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in (3, 5):
            raise ArgumentError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid = in_ch * expansion_factor
        norm = partial(nn.BatchNorm2d, momentum=bn_momentum)
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(in_ch, mid, 1, bias=False), norm(mid), nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, kernel_size, padding=kernel_size // 2, stride=stride,
                      groups=mid, bias=False), norm(mid), nn.ReLU(inplace=True),
            nn.Conv2d(mid, out_ch, 1, bias=False), norm(out_ch))

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x) + x if self.apply_residual else self.layers(x)


def _stack(in_ch: int, out_ch: int, kernel_size: int, stride: int, exp_factor: int,
           repeats: int) -> nn.Sequential:
    if repeats < 1:
        raise ArgumentError(f"repeats should be >= 1, instead got {repeats}")
    return nn.Sequential(
        _InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, _BN_MOMENTUM),
        *[_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, _BN_MOMENTUM)
          for _ in range(1, repeats)])


class MNASNet(nn.Module):
    """torchvision's ``MNASNet(alpha, num_classes=1000, dropout=0.2)``: ``alpha`` scales
    every width (rounded to multiples of 8); the last convolution has 1280 channels."""

    def __init__(self, alpha: float, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        if alpha <= 0.0:
            raise ArgumentError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha = alpha
        d = [make_divisible(w * alpha, 8) for w in (32, 16, 24, 40, 80, 96, 192, 320)]
        norm = partial(nn.BatchNorm2d, momentum=_BN_MOMENTUM)
        self.layers = nn.Sequential(
            nn.Conv2d(3, d[0], 3, padding=1, stride=2, bias=False), norm(d[0]),
            nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[0], 3, padding=1, stride=1, groups=d[0], bias=False), norm(d[0]),
            nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[1], 1, padding=0, stride=1, bias=False), norm(d[1]),
            _stack(d[1], d[2], 3, 2, 3, 3), _stack(d[2], d[3], 5, 2, 3, 3),
            _stack(d[3], d[4], 5, 2, 6, 3), _stack(d[4], d[5], 3, 1, 6, 2),
            _stack(d[5], d[6], 5, 2, 6, 4), _stack(d[6], d[7], 3, 1, 6, 1),
            nn.Conv2d(d[7], 1280, 1, padding=0, stride=1, bias=False), norm(1280),
            nn.ReLU(inplace=True))
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(1280, num_classes))
        init_convs_and_norms(self, linear=_fan_out_uniform_linear)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.layers(x).mean([2, 3]))


def _fan_out_uniform_linear(m: nn.Linear) -> None:
    init.kaiming_uniform_(m.weight, mode="fan_out", nonlinearity="sigmoid")
    init.zeros_(m.bias)


def _builder(name: str, alpha: float):
    return make_builder(name, partial(MNASNet, alpha), f"MNASNet with depth multiplier {alpha}",
                        __name__)


mnasnet0_5 = _builder("mnasnet0_5", 0.5)
mnasnet0_75 = _builder("mnasnet0_75", 0.75)
mnasnet1_0 = _builder("mnasnet1_0", 1.0)
mnasnet1_3 = _builder("mnasnet1_3", 1.3)
