"""The initialization most torchvision classifiers share: He-normal convolutions with zero
biases, unit-scale zero-shift norms, and a model-specific rule for the linear layers; and the
truncated normals of GoogLeNet and Inception v3."""

from __future__ import annotations

from collections.abc import Callable

from ember import nn
from ember.nn import init


def init_convs_and_norms(model: nn.Module, conv_mode: str = "fan_out",
                         linear: Callable[[nn.Linear], object] | None = None) -> None:
    """2-D and 3-D convolutions He-normal (``conv_mode`` fan, ReLU gain) with zero biases; batch
    and group norms to weight 1, bias 0; each ``nn.Linear`` through ``linear`` when given."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Conv3d)):
            init.kaiming_normal_(m.weight, mode=conv_mode, nonlinearity="relu")
            if m.bias is not None:
                init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.BatchNorm3d, nn.GroupNorm)):
            init.ones_(m.weight)
            init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and linear is not None:
            linear(m)


def small_normal_linear(m: nn.Linear) -> None:
    """Weight from N(0, 0.01²), zero bias (VGG, the MobileNets)."""
    init.normal_(m.weight, 0.0, 0.01)
    init.zeros_(m.bias)


def init_truncated_normal(model: nn.Module, default_std: float) -> None:
    """GoogLeNet's and Inception v3's rule: each ``nn.Conv2d`` and ``nn.Linear`` weight from
    N(0, σ²) truncated to [-2, 2], σ its layer's ``stddev`` attribute or ``default_std``;
    batch norms to weight 1, bias 0."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            init.trunc_normal_(m.weight, mean=0.0, std=getattr(m, "stddev", default_std), a=-2,
                               b=2)
        elif isinstance(m, nn.BatchNorm2d):
            init.ones_(m.weight)
            init.zeros_(m.bias)
