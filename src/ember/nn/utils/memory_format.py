"""Converting convolution weights to a memory format, as ``torch.nn.utils.memory_format``."""

from __future__ import annotations

from typing import Any, TypeVar

from ember.nn.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ember.nn.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

M = TypeVar("M", bound=Module)


def _convert(module: M, kinds: tuple[type, ...], memory_format: Any) -> M:
    for m in module.modules():
        if isinstance(m, kinds):
            m.weight.data = m.weight.detach().clone().contiguous(memory_format=memory_format)
    return module


def convert_conv2d_weight_memory_format(module: M, memory_format: Any) -> M:
    """Lays out the weight of every ``Conv2d`` and ``ConvTranspose2d`` in ``module`` in
    ``memory_format`` (e.g. ``ember.channels_last``), in place (the parameter objects stay);
    returns ``module``.

    Example:
        >>> m = nn.utils.convert_conv2d_weight_memory_format(
        ...     nn.Sequential(nn.Conv2d(2, 4, 3)), ember.channels_last)
        >>> m[0].weight.is_contiguous(memory_format=ember.channels_last)
        True
    """
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module: M, memory_format: Any) -> M:
    """Lays out the weight of every ``Conv3d`` and ``ConvTranspose3d`` in ``module`` in
    ``memory_format`` (e.g. ``ember.channels_last_3d``), in place; returns ``module``.

    Example:
        >>> m = nn.utils.convert_conv3d_weight_memory_format(
        ...     nn.Conv3d(2, 4, 3), ember.channels_last_3d)
        >>> m.weight.is_contiguous(memory_format=ember.channels_last_3d)
        True
    """
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
