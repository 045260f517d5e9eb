"""``fuse_modules``: folds a batch norm into the layer before it and pairs a layer with the
ReLU after it (``ConvReLU1d/2d/3d``, ``LinearReLU``), so quantization treats them as one op."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ember import nn
from ember.nn.module import Module
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ember.quant.modules import intrinsic as nni

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules"]


def _same_mode(layer: Module, bn: Module) -> None:
    if layer.training != bn.training:
        raise ValueError(f"{type(layer).__name__} and {type(bn).__name__} both must be in the "
                         "same mode (train or eval).")


def _bn_fold(layer: Module, bn: Module, is_qat: bool) -> Module:
    _same_mode(layer, bn)
    conv = isinstance(layer, (nn.Conv1d, nn.Conv2d, nn.Conv3d))
    if is_qat or bn.training:
        torch_name = f"ConvBn{type(layer).__name__[4:]}" if conv else "LinearBn1d"
        raise NotImplementedError(f"fusing a batch norm for quantization-aware training "
                                  f"(PyTorch's {torch_name}) is not supported in Ember; fuse in "
                                  "eval mode, which folds the batch norm into the layer")
    if conv:
        return fuse_conv_bn_eval(layer, bn)
    return fuse_linear_bn_eval(layer, bn)


_FUSERS: dict[tuple[type, ...], Callable[..., Module]] = {
    (nn.Linear, nn.ReLU): lambda qat, lin, r: nni.LinearReLU(lin, r),
    (nn.Linear, nn.BatchNorm1d): lambda qat, lin, b: _bn_fold(lin, b, qat),
}
for _conv, _bn, _fused in ((nn.Conv1d, nn.BatchNorm1d, nni.ConvReLU1d),
                           (nn.Conv2d, nn.BatchNorm2d, nni.ConvReLU2d),
                           (nn.Conv3d, nn.BatchNorm3d, nni.ConvReLU3d)):
    _FUSERS[_conv, _bn] = lambda qat, c, b: _bn_fold(c, b, qat)
    _FUSERS[_conv, _bn, nn.ReLU] = lambda qat, c, b, r, f=_fused: f(_bn_fold(c, b, qat), r)
    _FUSERS[_conv, nn.ReLU] = lambda qat, c, r, f=_fused: f(c, r)


def fuse_known_modules(mod_list: Sequence[Module], is_qat: bool = False,
                       additional_fuser_method_mapping: dict | None = None) -> list[Module]:
    """The fused module followed by ``Identity`` for each other member of ``mod_list``."""
    fusers = {**_FUSERS, **(additional_fuser_method_mapping or {})}  # fn(is_qat, *modules)
    types = tuple(type(m) for m in mod_list)
    if types not in fusers:
        raise NotImplementedError(f"Cannot fuse modules: {tuple(t.__name__ for t in types)}; "
                                  "Ember fuses (ConvNd, BatchNormNd[, ReLU]), (ConvNd, ReLU) for "
                                  "N = 1, 2, 3, (Linear, ReLU) and (Linear, BatchNorm1d)")
    fused = fusers[types](is_qat, *mod_list)
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
    """:func:`fuse_modules` for quantization-aware training (layer + ReLU pairs; a batch
    norm cannot be fused for training in Ember)."""
    return _fuse(model, modules_to_fuse, inplace, fuser_func, True)
