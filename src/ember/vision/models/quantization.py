"""torchvision's quantizable classifiers (``torchvision.models.quantization`` →
``ember.vision.models.quantization``): ``resnet18``, ``resnet50``, ``resnext101_32x8d``,
``resnext101_64x4d``, … with ``quantize=False`` (float, with quantization stubs and
``fuse_model``) or ``quantize=True`` (calibrated and converted to quantized modules).

They are quantization's models, so :mod:`ember.quant.models` defines them (this layer cannot
import quantization) and registers them here when it is imported (``import ember`` does); this
module serves what was registered, and :func:`~ember.vision.models.get_model` builds them by
their registered names (``quantized_resnet18``, …).

Example:
    >>> from ember.vision.models.quantization import resnet18
    >>> type(resnet18(quantize=True).fc).__name__
    'Linear'
    >>> ember.vision.models.list_models(ember.vision.models.quantization, include="*resnet*")
    ['quantized_resnet18', 'quantized_resnet50']
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError

_MODELS: dict[str, Any] = {}


def register(name: str, value: Any) -> None:
    """Serves ``value`` (a builder or a model class) as this module's attribute ``name``.

    Example:
        >>> register("resnet18", object())
        Traceback (most recent call last):
        ...
        ember.errors.ArgumentError: register: 'resnet18' is registered already
    """
    if name in _MODELS:
        raise ArgumentError(f"register: {name!r} is registered already")
    _MODELS[name] = value


def __getattr__(name: str) -> Any:
    try:
        return _MODELS[name]
    except KeyError:
        raise AttributeError(f"module 'ember.vision.models.quantization' has no attribute "
                             f"{name!r}") from None


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODELS])
