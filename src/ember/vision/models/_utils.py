"""Channel rounding shared by the MobileNets, EfficientNets, MNASNet and RegNet, the renaming of
old checkpoint keys, and the feature extractor the segmentation models put on their
backbones."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ember import Tensor, nn
from ember.errors import ArgumentError


def make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``, default
    ``divisor``), bumped up one multiple if rounding lost more than 10%."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


class LegacyKeys:
    """Mixin for a model whose published torchvision checkpoints predate its module names:
    ``load_state_dict`` renames keys matching ``LEGACY_KEYS`` (regex, replacement) pairs
    before loading, as torchvision's builders do when they fetch those files. The caller's
    dict is left as it is."""

    LEGACY_KEYS: tuple[tuple[re.Pattern, str], ...] = ()

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> Any:
        renamed = dict(state_dict)
        for key in list(renamed):
            for pattern, replacement in self.LEGACY_KEYS:
                new = pattern.sub(replacement, key)
                if new != key:
                    renamed[new] = renamed.pop(key)
                    break
        return super().load_state_dict(renamed, strict, assign)  # type: ignore[misc]


class IntermediateLayerGetter(nn.ModuleDict):
    """The children of ``model`` up to the last one named in ``return_layers`` (later ones are
    dropped); the forward runs them in order and returns an ``OrderedDict`` of the outputs of
    those named, under their ``return_layers`` names. Only direct children can be returned.

    Example:
        >>> body = IntermediateLayerGetter(nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid()),
        ...                                {"0": "low", "1": "high"})
        >>> list(body(ember.zeros(1)))
        ['low', 'high']
    """

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        children = [name for name, _ in model.named_children()]
        if not set(return_layers).issubset(children):
            raise ArgumentError(f"return_layers are not present in model: "
                                f"{sorted(set(return_layers) - set(children))} are not among its "
                                f"children {children}")
        wanted = {str(k): str(v) for k, v in return_layers.items()}
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            wanted.pop(name, None)
            if not wanted:
                break
        super().__init__(layers)
        self.return_layers = {str(k): str(v) for k, v in return_layers.items()}

    def forward(self, x: Tensor) -> OrderedDict[str, Tensor]:
        out: OrderedDict[str, Tensor] = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out
