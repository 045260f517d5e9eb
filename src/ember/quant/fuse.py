"""``fuse_modules``: folds a batch norm into the layer before it and pairs a layer with the
ReLU after it (``ConvReLU1d/2d/3d``, ``LinearReLU``), so quantization treats them as one op."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ember import nn
from ember.nn.module import Module
from ember.quant.fuser_method_mappings import get_fuser_method

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules"]


def fuse_known_modules(mod_list: Sequence[Module], is_qat: bool = False,
                       additional_fuser_method_mapping: dict | None = None) -> list[Module]:
    """The fused module followed by ``Identity`` for each other member of ``mod_list``."""
    types = tuple(type(m) for m in mod_list)
    fused = get_fuser_method(types, additional_fuser_method_mapping)(is_qat, *mod_list)
    fused.train(mod_list[0].training)
    return [fused] + [nn.Identity() for _ in mod_list[1:]]


def _get(model: Module, name: str) -> Module:
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set(model: Module, name: str, module: Module) -> None:
    *path, last = name.split(".")
    for part in path:
        model = getattr(model, part)
    setattr(model, last, module)


def _fuse(model: Module, modules_to_fuse: Any, inplace: bool, fuser_func: Callable,
          is_qat: bool) -> Module:
    if not inplace:
        model = copy.deepcopy(model)
    groups = modules_to_fuse if all(isinstance(g, (list, tuple)) for g in modules_to_fuse) \
        else [modules_to_fuse]
    for names in groups:
        fused = fuser_func([_get(model, n) for n in names], is_qat)
        for name, module in zip(names, fused):
            _set(model, name, module)
    return model


def fuse_modules(model: Module, modules_to_fuse: Any, inplace: bool = False,
                 fuser_func: Callable = fuse_known_modules) -> Module:
    """Fuses each list of dotted submodule names in ``modules_to_fuse`` (or the one list):
    the first becomes the fused module, the others ``Identity``. Eval mode.

    Example:
        >>> m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU()).eval()
        >>> [type(c).__name__ for c in fuse_modules(m, ["0", "1", "2"])]
        ['ConvReLU2d', 'Identity', 'Identity']
    """
    return _fuse(model, modules_to_fuse, inplace, fuser_func, False)


def fuse_modules_qat(model: Module, modules_to_fuse: Any, inplace: bool = False,
                     fuser_func: Callable = fuse_known_modules) -> Module:
    """:func:`fuse_modules` for quantization-aware training: a convolution and its batch norm
    (and ReLU) become one ``ConvBn*d`` (``ConvBnReLU*d``), which ``prepare_qat`` trains with
    the batch norm and ``convert`` folds.

    Example:
        >>> m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
        >>> type(fuse_modules_qat(m, ["0", "1", "2"])[0]).__name__
        'ConvBnReLU2d'
    """
    return _fuse(model, modules_to_fuse, inplace, fuser_func, True)
