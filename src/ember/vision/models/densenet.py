"""DenseNet-121/161/169/201 (Huang et al. 2016) as torchvision builds them: dense blocks whose
layers (BN-ReLU-1×1 conv-BN-ReLU-3×3 conv) see every earlier feature map, joined by
BN-ReLU-1×1 conv-2×2 average-pool transitions.

Example:
    >>> model = DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, num_classes=10)
    >>> model.eval()(ember.randn(1, 3, 32, 32)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import partial

import ember
from ember import Tensor, nn
from ember.nn import functional as F
from ember.nn import init
from ember.utils.checkpoint import checkpoint
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms
from ember.vision.models._utils import LegacyKeys

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int,
                 drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1,
                               stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1,
                               padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: list[Tensor]) -> Tensor:
        return self.conv1(self.relu1(self.norm1(ember.cat(inputs, 1))))

    def forward(self, inputs: Tensor | list[Tensor]) -> Tensor:
        inputs = [inputs] if isinstance(inputs, Tensor) else inputs
        needs_grad = any(t.requires_grad for t in inputs)
        if self.memory_efficient and needs_grad:  # recompute the concatenation in backward
            bottleneck = checkpoint(lambda *ts: self.bn_function(list(ts)), *inputs,
                                    use_reentrant=False)
        else:
            bottleneck = self.bn_function(inputs)
        out = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            out = F.dropout(out, p=self.drop_rate, training=self.training)
        return out


class _DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers: int, num_input_features: int, bn_size: int,
                 growth_rate: int, drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(
                num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate,
                memory_efficient))

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__(OrderedDict([
            ("norm", nn.BatchNorm2d(num_input_features)), ("relu", nn.ReLU(inplace=True)),
            ("conv", nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1,
                               bias=False)),
            ("pool", nn.AvgPool2d(kernel_size=2, stride=2))]))


class DenseNet(LegacyKeys, nn.Module):
    """torchvision's ``DenseNet(growth_rate=32, block_config=(6, 12, 24, 16),
    num_init_features=64, bn_size=4, drop_rate=0, num_classes=1000, memory_efficient=False)``;
    ``memory_efficient`` recomputes each layer's concatenation in backward
    (:func:`ember.utils.checkpoint.checkpoint`). ``load_state_dict`` also takes torchvision's
    published checkpoint files, whose layer keys are ``denselayer1.norm.1.weight`` for
    ``denselayer1.norm1.weight``."""

    LEGACY_KEYS = ((re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.([12])\."
                               r"(weight|bias|running_mean|running_var|num_batches_tracked)$"),
                   r"\1\2.\3"),)

    def __init__(self, growth_rate: int = 32, block_config: tuple[int, ...] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0,
                 num_classes: int = 1000, memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3,
                                bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)), ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]))
        channels = num_init_features
        for i, num_layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(
                num_layers, channels, bn_size, growth_rate, drop_rate, memory_efficient))
            channels += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}",
                                         _Transition(channels, channels // 2))
                channels //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(channels))
        self.classifier = nn.Linear(channels, num_classes)
        init_convs_and_norms(self, conv_mode="fan_in", linear=lambda m: init.zeros_(m.bias))

    def forward(self, x: Tensor) -> Tensor:
        out = F.adaptive_avg_pool2d(F.relu(self.features(x)), (1, 1))
        return self.classifier(out.flatten(1))


def _builder(name: str, growth_rate: int, block_config: tuple[int, ...], num_init: int):
    make = partial(DenseNet, growth_rate, block_config, num_init)
    return make_builder(name, make, f"DenseNet-{name[8:]}", __name__)


densenet121 = _builder("densenet121", 32, (6, 12, 24, 16), 64)
densenet161 = _builder("densenet161", 48, (6, 12, 36, 24), 96)
densenet169 = _builder("densenet169", 32, (6, 12, 32, 32), 64)
densenet201 = _builder("densenet201", 32, (6, 12, 48, 32), 64)
