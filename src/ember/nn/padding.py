"""Padding layers over ``F.pad``: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``,
``ReplicationPad`` and ``CircularPad``, each in 1-D, 2-D and 3-D, with PyTorch's arguments
(``padding`` an int, or ``(left, right, top, bottom, front, back)`` as many as there are dims).

Example:
    >>> nn.ReflectionPad2d((1, 1, 2, 0))(ember.randn(1, 3, 4, 4)).shape
    ember.Size([1, 3, 6, 6])
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = [f"{kind}Pad{n}d" for kind in ("Zero", "Constant", "Reflection", "Replication",
                                         "Circular") for n in (1, 2, 3)]


class _PadNd(Module):
    """Pads the last ``_n`` dims in mode ``_mode``; ``padding`` is one int for every side or
    ``2·_n`` amounts, last dim first."""

    _n = 1
    _mode = "constant"

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__()
        sides = 2 * self._n
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else \
            (padding,) * sides
        if len(self.padding) != sides:
            raise ArgumentError(f"{type(self).__name__}: padding must be an int or {sides} "
                                f"amounts, got {padding}")

    def forward(self, input: Tensor) -> Tensor:
        if isinstance(input, Tensor):  # (a tensor-like, an ember.fx Proxy, goes to F.pad)
            self._check_input_dim(input)
        return F.pad(input, self.padding, mode=self._mode)

    def _check_input_dim(self, input: Tensor) -> None:
        """Refuses an input of a rank the mode cannot pad (the constant modes pad any)."""

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _EdgePadNd(_PadNd):
    """Reflection and replication: (C, *) or (N, C, *) inputs, with PyTorch's error."""

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._n
        if input.ndim >= n and input.ndim not in (n + 1, n + 2):
            raise NotImplementedError(
                f"Padding size {2 * n} is not supported for {input.ndim}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


class _ConstantPadNd(_PadNd):
    """Pads with the constant ``value``."""

    def __init__(self, padding: int | tuple[int, ...], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, mode="constant", value=self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    """Pads with zeros."""

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class _ReflectionPadNd(_EdgePadNd):
    """Pads with the input's reflection (PyTorch's base of ``ReflectionPad{1,2,3}d``)."""

    _mode = "reflect"


class _ReplicationPadNd(_EdgePadNd):
    """Pads by repeating the input's edge (PyTorch's base of ``ReplicationPad{1,2,3}d``)."""

    _mode = "replicate"


class _CircularPadNd(_PadNd):
    """Pads by wrapping around (PyTorch's base of ``CircularPad{1,2,3}d``)."""

    _mode = "circular"

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise ArgumentError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")


def _layer(kind: str, n: int, base: type, what: str) -> Any:
    name = f"{kind}Pad{n}d"
    doc = f"Pads the last {n} dim{'s' if n > 1 else ''} of the input {what}."
    return type(name, (base,), {"_n": n, "__doc__": doc, "__module__": __name__,
                                "__qualname__": name})


ZeroPad1d, ZeroPad2d, ZeroPad3d = (_layer("Zero", n, _ZeroPadNd, "with zeros")
                                   for n in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (
    _layer("Constant", n, _ConstantPadNd, "with ``value``") for n in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (
    _layer("Reflection", n, _ReflectionPadNd, "with its reflection (edge not repeated)")
    for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (
    _layer("Replication", n, _ReplicationPadNd, "by repeating its edge") for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (
    _layer("Circular", n, _CircularPadNd, "by wrapping around") for n in (1, 2, 3))
