"""Quantization-aware-training modules (``torch.ao.nn.qat`` and the fused ``intrinsic.qat``):
float layers whose weight passes through a fake quantizer (``qconfig.weight``) in every
forward, so training sees the rounding the quantized model will do."""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.utils.parametrize import is_parametrized, transfer_parametrizations_and_params
from ember.quant.modules.qat_embedding import Embedding, EmbeddingBag
from ember.tensor import Tensor

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d", "LinearReLU", "ConvReLU1d", "ConvReLU2d",
           "ConvReLU3d", "Embedding", "EmbeddingBag"]


class _QATLayer:
    """Builds a QAT layer from a float one (sharing its parameters) with ``qconfig``."""

    relu = False

    @classmethod
    def from_float(cls, mod: Module) -> Module:
        layer = mod[0] if isinstance(mod, nn.Sequential) else mod
        qconfig = getattr(mod, "qconfig", None)
        if qconfig is None:
            raise ArgumentError(f"{cls.__name__}.from_float: the input module needs a qconfig "
                                "(set it, or use prepare_qat)")
        qat = cls._like(layer, qconfig)
        for name in ("weight", "bias"):  # (a sparsifier's mask: kept, on the same original)
            if is_parametrized(layer, name):
                transfer_parametrizations_and_params(layer, qat, name)
            else:
                setattr(qat, name, getattr(layer, name))
        return qat

    def _finish(self, out: Tensor) -> Tensor:
        return F.relu(out) if self.relu else out


class Linear(_QATLayer, nn.Linear):
    """``nn.Linear`` with a fake-quantized weight.

    Example:
        >>> from ember.ao.quantization import get_default_qat_qconfig
        >>> m = Linear(3, 2, qconfig=get_default_qat_qconfig("x86"))
        >>> m(ember.randn(4, 3)).shape
        ember.Size([4, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 qconfig: Any = None) -> None:
        super().__init__(in_features, out_features, bias)
        if qconfig is None:
            raise ArgumentError("qat.Linear: qconfig must be provided for a QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    @classmethod
    def _like(cls, layer: Module, qconfig: Any) -> Linear:
        return cls(layer.in_features, layer.out_features, layer.bias is not None, qconfig)

    def forward(self, input: Tensor) -> Tensor:
        return self._finish(F.linear(input, self.weight_fake_quant(self.weight), self.bias))


class _Conv(_QATLayer):
    """A convolution with a fake-quantized weight (mixed in before ``nn.Conv{n}d``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", qconfig: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode)
        if qconfig is None:
            raise ArgumentError(f"qat.{type(self).__name__}: qconfig must be provided for a QAT "
                                "module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    @classmethod
    def _like(cls, layer: Module, qconfig: Any) -> _Conv:
        return cls(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
                   layer.padding, layer.dilation, layer.groups, layer.bias is not None,
                   layer.padding_mode, qconfig)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            input = F.pad(input, self._pad, mode=self.padding_mode)
            padding = 0
        else:
            padding = self.padding
        conv = getattr(F, self._fn)
        return self._finish(conv(input, self.weight_fake_quant(self.weight), self.bias,
                                 self.stride, padding, self.dilation, self.groups))


class Conv1d(_Conv, nn.Conv1d):
    """``nn.Conv1d`` with a fake-quantized weight."""


class Conv2d(_Conv, nn.Conv2d):
    """``nn.Conv2d`` with a fake-quantized weight."""


class Conv3d(_Conv, nn.Conv3d):
    """``nn.Conv3d`` with a fake-quantized weight."""


class LinearReLU(Linear):
    """QAT ``Linear`` then ReLU (from a fused ``LinearReLU``)."""

    relu = True


class ConvReLU1d(Conv1d):
    """QAT ``Conv1d`` then ReLU (from a fused ``ConvReLU1d``)."""

    relu = True


class ConvReLU2d(Conv2d):
    """QAT ``Conv2d`` then ReLU (from a fused ``ConvReLU2d``)."""

    relu = True


class ConvReLU3d(Conv3d):
    """QAT ``Conv3d`` then ReLU (from a fused ``ConvReLU3d``)."""

    relu = True
