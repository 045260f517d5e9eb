"""torchvision's ResNet family under its names and signatures (``torchvision.models`` →
``ember.vision.models``): the architectures, module names and initialization, so a state dict
saved from torchvision loads. No pretrained weights are bundled: ``weights`` must be None.

Example:
    >>> model = ember.vision.models.resnet50(num_classes=10)
    >>> model(ember.randn(1, 3, 64, 64)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ember.models.resnet import BasicBlock, Bottleneck, ResNet

__all__ = ["ResNet", "get_model", "list_models", "resnet18", "resnet34", "resnet50",
           "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
           "wide_resnet50_2", "wide_resnet101_2"]


def _no_weights(name: str, asked: str) -> ValueError:
    return ValueError(f"{name}: no pretrained weights are bundled with Ember (got {asked}). "
                      "Hint: build it with weights=None and load a state dict, e.g. "
                      "model.load_state_dict(ember.load(path)) or "
                      "ember.hub.load_state_dict_from_url(url)")


def _resnet(name: str, block: type, layers: list[int], weights: Any, progress: bool,
            **kwargs: Any) -> ResNet:
    if weights is not None:
        raise _no_weights(name, f"weights={weights!r}")
    return ResNet(block, layers, **kwargs)


def _builder(name: str, block: type, layers: list[int], doc: str,
             **preset: Any) -> Callable[..., ResNet]:
    def build(*, weights: Any = None, progress: bool = True, pretrained: bool | None = None,
              **kwargs: Any) -> ResNet:
        if pretrained is not None:  # torchvision < 0.13's flag, still taken with a warning
            warnings.warn(f"{name}: the parameter 'pretrained' is deprecated since torchvision "
                          "0.13, please use 'weights' instead", UserWarning, stacklevel=2)
            if pretrained:
                raise _no_weights(name, "pretrained=True")
        for key, value in preset.items():
            if key in kwargs and kwargs[key] != value:
                raise ValueError(f"{name}: {key} is fixed at {value} for this model, got "
                                 f"{kwargs[key]}")
        return _resnet(name, block, layers, weights, progress, **{**preset, **kwargs})

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{doc}, as torchvision's ``{name}``; ``kwargs`` go to :class:`ResNet`."
    return build


resnet18 = _builder("resnet18", BasicBlock, [2, 2, 2, 2], "ResNet-18")
resnet34 = _builder("resnet34", BasicBlock, [3, 4, 6, 3], "ResNet-34")
resnet50 = _builder("resnet50", Bottleneck, [3, 4, 6, 3], "ResNet-50")
resnet101 = _builder("resnet101", Bottleneck, [3, 4, 23, 3], "ResNet-101")
resnet152 = _builder("resnet152", Bottleneck, [3, 8, 36, 3], "ResNet-152")
resnext50_32x4d = _builder("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], "ResNeXt-50 32x4d",
                           groups=32, width_per_group=4)
resnext101_32x8d = _builder("resnext101_32x8d", Bottleneck, [3, 4, 23, 3],
                            "ResNeXt-101 32x8d", groups=32, width_per_group=8)
resnext101_64x4d = _builder("resnext101_64x4d", Bottleneck, [3, 4, 23, 3],
                            "ResNeXt-101 64x4d", groups=64, width_per_group=4)
wide_resnet50_2 = _builder("wide_resnet50_2", Bottleneck, [3, 4, 6, 3], "Wide ResNet-50-2",
                           width_per_group=128)
wide_resnet101_2 = _builder("wide_resnet101_2", Bottleneck, [3, 4, 23, 3],
                            "Wide ResNet-101-2", width_per_group=128)

_MODELS = {f.__name__: f for f in (resnet18, resnet34, resnet50, resnet101, resnet152,
                                   resnext50_32x4d, resnext101_32x8d, resnext101_64x4d,
                                   wide_resnet50_2, wide_resnet101_2)}


def list_models() -> list[str]:
    """The names :func:`get_model` builds.

    Example:
        >>> list_models()[:3]
        ['resnet101', 'resnet152', 'resnet18']
    """
    return sorted(_MODELS)


def get_model(name: str, **config: Any) -> ResNet:
    """Builds the model called ``name`` with ``config``.

    Example:
        >>> type(get_model("resnet18", num_classes=5)).__name__
        'ResNet'
    """
    if name not in _MODELS:
        raise ValueError(f"get_model: unknown model {name!r}; the models are {list_models()}")
    return _MODELS[name](**config)
