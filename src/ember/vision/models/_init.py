"""The initialization most torchvision classifiers share: He-normal convolutions with zero
biases, unit-scale zero-shift norms, and a model-specific rule for the linear layers."""

from __future__ import annotations

from collections.abc import Callable

from ember import nn
from ember.nn import init


def init_convs_and_norms(model: nn.Module, conv_mode: str = "fan_out",
                         linear: Callable[[nn.Linear], object] | None = None) -> None:
    """Convolutions He-normal (``conv_mode`` fan, ReLU gain) with zero biases; batch and group
    norms to weight 1, bias 0; each ``nn.Linear`` through ``linear`` when given."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            init.kaiming_normal_(m.weight, mode=conv_mode, nonlinearity="relu")
            if m.bias is not None:
                init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            init.ones_(m.weight)
            init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and linear is not None:
            linear(m)


def small_normal_linear(m: nn.Linear) -> None:
    """Weight from N(0, 0.01²), zero bias (VGG, the MobileNets)."""
    init.normal_(m.weight, 0.0, 0.01)
    init.zeros_(m.bias)
