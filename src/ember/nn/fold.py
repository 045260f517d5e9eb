"""``Fold`` and ``Unfold``: col2im and im2col as layers, over ``F.fold`` and ``F.unfold``."""

from __future__ import annotations

from typing import Any

from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["Fold", "Unfold"]


class Unfold(Module):
    """Extracts sliding blocks of a (N, C, *spatial) input as columns (N, C·∏kernel, L).

    Example:
        >>> nn.Unfold(kernel_size=2)(ember.randn(1, 3, 4, 5)).shape
        ember.Size([1, 12, 12])
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Sums columns (N, C·∏kernel, L) of sliding blocks back into an image of
    ``output_size``, the adjoint of :class:`Unfold`.

    Example:
        >>> nn.Fold(output_size=(4, 5), kernel_size=2)(ember.randn(1, 12, 12)).shape
        ember.Size([1, 3, 4, 5])
    """

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
