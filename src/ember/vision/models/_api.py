"""The model registry and builder factory behind ``ember.vision.models``: every builder takes
torchvision's ``weights``/``progress`` keywords (and the legacy ``pretrained`` flag), refuses
pretrained weights (none are bundled), and registers itself for :func:`get_model`."""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from ember import nn
from ember.errors import ArgumentError

__all__ = ["get_model", "get_model_builder", "list_models", "make_builder"]

_BUILDERS: dict[str, Callable[..., nn.Module]] = {}


def _no_weights(name: str, asked: str) -> ValueError:
    return ValueError(f"{name}: no pretrained weights are bundled with Ember (got {asked}). "
                      "Hint: build it with weights=None and load a state dict, e.g. "
                      "model.load_state_dict(ember.load(path)) or "
                      "ember.hub.load_state_dict_from_url(url), with torchvision's .pth "
                      "weight files too")


def make_builder(name: str, make: Callable[..., nn.Module], doc: str, module: str,
                 defaults: Mapping[str, Any] | None = None,
                 fixed: Mapping[str, Any] | None = None, registered: str | None = None,
                 listed_in: str | None = None) -> Callable[..., nn.Module]:
    """A torchvision-style builder ``name(*, weights=None, progress=True, **kwargs)`` that
    returns ``make(**{**defaults, **kwargs, **fixed})``; a keyword of ``fixed`` given with
    another value raises, as torchvision's. The builder is registered under ``registered``
    (default ``name``; e.g. ``quantized_resnet18`` for the builder ``resnet18``) and listed
    by ``list_models`` for the package ``listed_in`` (default: the one above ``module``)."""
    registered = registered or name
    defaults, fixed = dict(defaults or {}), dict(fixed or {})

    def build(*, weights: Any = None, progress: bool = True, pretrained: bool | None = None,
              **kwargs: Any) -> nn.Module:
        if pretrained is not None:  # torchvision < 0.13's flag, still taken with a warning
            warnings.warn(f"{name}: the parameter 'pretrained' is deprecated since torchvision "
                          "0.13, please use 'weights' instead", UserWarning, stacklevel=2)
            if pretrained:
                raise _no_weights(name, "pretrained=True")
        if weights is not None:
            raise _no_weights(name, f"weights={weights!r}")
        for key, value in fixed.items():
            if key in kwargs and kwargs[key] != value:
                raise ArgumentError(f"{name}: {key} is fixed at {value} for this model, got "
                                    f"{kwargs[key]}")
        return make(**{**defaults, **kwargs, **fixed})

    build.__name__ = build.__qualname__ = name
    build.__module__ = module
    build.__doc__ = (f"{doc}, as torchvision's ``{name}`` (``weights`` must be None: no "
                     "pretrained weights are bundled); ``kwargs`` go to the model class.")
    build._listed_in = listed_in or module.rsplit(".", 1)[0]  # type: ignore[attr-defined]
    if registered in _BUILDERS:
        raise ArgumentError(f"make_builder: a model is already registered under {registered!r}")
    _BUILDERS[registered] = build
    return build


def list_models(module: ModuleType | None = None, include: str | Iterable[str] | None = None,
                exclude: str | Iterable[str] | None = None) -> list[str]:
    """The sorted names :func:`get_model` builds, optionally only those of ``module`` and
    filtered by ``fnmatch`` patterns (``include`` keeps, ``exclude`` then drops; an empty
    pattern list filters nothing, as in torchvision).

    Example:
        >>> list_models(include="vgg1*", exclude="*_bn")
        ['vgg11', 'vgg13', 'vgg16', 'vgg19']
    """
    names = [n for n, f in _BUILDERS.items()
             if module is None or f._listed_in == module.__name__]  # type: ignore[attr-defined]
    if include:
        patterns = [include] if isinstance(include, str) else list(include)
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if exclude:
        patterns = [exclude] if isinstance(exclude, str) else list(exclude)
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in patterns)]
    return sorted(names)


def get_model_builder(name: str) -> Callable[..., nn.Module]:
    """The builder registered under ``name`` (case-insensitive).

    Example:
        >>> get_model_builder("ResNet18").__name__
        'resnet18'
    """
    try:
        return _BUILDERS[name.lower()]
    except KeyError:
        raise ArgumentError(f"get_model_builder: unknown model {name!r}; list_models() gives the "
                            f"{len(_BUILDERS)} known names") from None


def get_model(name: str, **config: Any) -> nn.Module:
    """Builds the model called ``name`` with ``config`` (the builder's keywords).

    Example:
        >>> type(get_model("resnet18", num_classes=5)).__name__
        'ResNet'
    """
    return get_model_builder(name)(**config)
