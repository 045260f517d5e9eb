"""Fused float modules (``torch.ao.nn.intrinsic``): a layer with the batch norm and/or ReLU
after it, kept together so that quantization sees one output to observe, and converts them to
one kernel (``ConvBn*``: fused for quantization-aware training, ``fuse_modules_qat``)."""

from __future__ import annotations

from ember import nn
from ember.errors import ArgumentTypeError

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "ConvBn1d", "ConvBn2d",
           "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "BNReLU2d", "BNReLU3d"]


class _FusedModule(nn.Sequential):
    """A fused group: runs like ``Sequential`` of its members, whose types are ``types``."""

    types: tuple[type, ...] = ()

    def __init__(self, *modules: object) -> None:
        got = tuple(type(m) for m in modules)
        if got != self.types:
            raise ArgumentTypeError(f"{type(self).__name__}: expected "
                                    f"{' and '.join(t.__name__ for t in self.types)}, got "
                                    f"{' and '.join(t.__name__ for t in got)}")
        super().__init__(*modules)


class ConvReLU1d(_FusedModule):
    """``Conv1d`` then ``ReLU``, fused."""

    types = (nn.Conv1d, nn.ReLU)


class ConvReLU2d(_FusedModule):
    """``Conv2d`` then ``ReLU``, fused.

    Example:
        >>> m = ConvReLU2d(nn.Conv2d(1, 2, 3), nn.ReLU())
        >>> bool((m(ember.randn(1, 1, 5, 5)) >= 0).all())
        True
    """

    types = (nn.Conv2d, nn.ReLU)


class ConvReLU3d(_FusedModule):
    """``Conv3d`` then ``ReLU``, fused."""

    types = (nn.Conv3d, nn.ReLU)


class LinearReLU(_FusedModule):
    """``Linear`` then ``ReLU``, fused."""

    types = (nn.Linear, nn.ReLU)


class ConvBn1d(_FusedModule):
    """``Conv1d`` then ``BatchNorm1d``, fused for quantization-aware training."""

    types = (nn.Conv1d, nn.BatchNorm1d)


class ConvBn2d(_FusedModule):
    """``Conv2d`` then ``BatchNorm2d``, fused for quantization-aware training (``prepare_qat``
    makes it a ``qat.ConvBn2d``).

    Example:
        >>> m = ConvBn2d(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
        >>> m(ember.randn(1, 1, 5, 5)).shape
        ember.Size([1, 2, 3, 3])
    """

    types = (nn.Conv2d, nn.BatchNorm2d)


class ConvBn3d(_FusedModule):
    """``Conv3d`` then ``BatchNorm3d``, fused for quantization-aware training."""

    types = (nn.Conv3d, nn.BatchNorm3d)


class ConvBnReLU1d(_FusedModule):
    """``Conv1d``, ``BatchNorm1d`` then ``ReLU``, fused for quantization-aware training."""

    types = (nn.Conv1d, nn.BatchNorm1d, nn.ReLU)


class ConvBnReLU2d(_FusedModule):
    """``Conv2d``, ``BatchNorm2d`` then ``ReLU``, fused for quantization-aware training."""

    types = (nn.Conv2d, nn.BatchNorm2d, nn.ReLU)


class ConvBnReLU3d(_FusedModule):
    """``Conv3d``, ``BatchNorm3d`` then ``ReLU``, fused for quantization-aware training."""

    types = (nn.Conv3d, nn.BatchNorm3d, nn.ReLU)


class BNReLU2d(_FusedModule):
    """``BatchNorm2d`` then ``ReLU``, fused (``convert`` makes it a quantized ``BNReLU2d``).

    Example:
        >>> m = BNReLU2d(nn.BatchNorm2d(2), nn.ReLU())
        >>> bool((m(ember.randn(1, 2, 3, 3)) >= 0).all())
        True
    """

    types = (nn.BatchNorm2d, nn.ReLU)


class BNReLU3d(_FusedModule):
    """``BatchNorm3d`` then ``ReLU``, fused."""

    types = (nn.BatchNorm3d, nn.ReLU)
