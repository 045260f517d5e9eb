"""Fused float modules (``torch.ao.nn.intrinsic``): a layer and the ReLU after it, kept
together so that quantization sees one output to observe, and converts them to one kernel."""

from __future__ import annotations

from ember import nn
from ember.errors import ArgumentTypeError

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"]


class _FusedModule(nn.Sequential):
    """A fused pair: runs like ``Sequential(layer, relu)``."""

    layer_type: type = type(None)

    def __init__(self, layer: object, relu: object) -> None:
        if type(layer) is not self.layer_type or type(relu) is not nn.ReLU:
            raise ArgumentTypeError(f"{type(self).__name__}: expected "
                                    f"{self.layer_type.__name__} and ReLU, got "
                                    f"{type(layer).__name__} and {type(relu).__name__}")
        super().__init__(layer, relu)


class ConvReLU1d(_FusedModule):
    """``Conv1d`` then ``ReLU``, fused."""

    layer_type = nn.Conv1d


class ConvReLU2d(_FusedModule):
    """``Conv2d`` then ``ReLU``, fused.

    Example:
        >>> m = ConvReLU2d(nn.Conv2d(1, 2, 3), nn.ReLU())
        >>> bool((m(ember.randn(1, 1, 5, 5)) >= 0).all())
        True
    """

    layer_type = nn.Conv2d


class ConvReLU3d(_FusedModule):
    """``Conv3d`` then ``ReLU``, fused."""

    layer_type = nn.Conv3d


class LinearReLU(_FusedModule):
    """``Linear`` then ``ReLU``, fused."""

    layer_type = nn.Linear
