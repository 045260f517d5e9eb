"""Quantization-aware-training modules (``torch.ao.nn.qat`` and the fused ``intrinsic.qat``):
float layers whose weight passes through a fake quantizer (``qconfig.weight``) in every
forward, so training sees the rounding the quantized model will do."""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.utils.fusion import fuse_conv_bn_weights
from ember.nn.utils.parametrize import is_parametrized, transfer_parametrizations_and_params
from ember.quant.modules import intrinsic as nni
from ember.quant.modules.qat_embedding import Embedding, EmbeddingBag
from ember.tensor import Tensor

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d", "LinearReLU", "ConvReLU1d", "ConvReLU2d",
           "ConvReLU3d", "Embedding", "EmbeddingBag", "ConvBn1d", "ConvBn2d", "ConvBn3d",
           "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "freeze_bn_stats", "update_bn_stats"]


def _share_weights(layer: Module, qat: Module) -> None:
    for name in ("weight", "bias"):  # (a sparsifier's mask: kept, on the same original)
        if is_parametrized(layer, name):
            transfer_parametrizations_and_params(layer, qat, name)
        else:
            setattr(qat, name, getattr(layer, name))


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
        _share_weights(layer, qat)
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
        return self._finish(self._conv_forward(input, self.weight_fake_quant(self.weight),
                                               self.bias))


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


class _ConvBn(_Conv):
    """A convolution and the batch norm after it (``bn``) for quantization-aware training:
    the weight scaled by ``bn.weight / sqrt(running_var + eps)`` is fake-quantized (the weight
    the quantized model will fold), the convolution's output unscaled and put through ``bn``
    (batch statistics while it trains, unless frozen: :meth:`freeze_bn_stats`). ``convert``
    folds ``bn`` into the weight and bias."""

    _float_type: type

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: Any = None,
                 padding_mode: str = "zeros", eps: float = 1e-5, momentum: float | None = 0.1,
                 freeze_bn: bool = False, qconfig: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bool(bias), padding_mode, qconfig)
        self.bn = self._float_type.types[1](out_channels, eps, momentum)
        self.weight_fake_quant = self._modules.pop("weight_fake_quant")  # (after bn: PyTorch's
        # state-dict order)
        init.uniform_(self.bn.weight)
        if freeze_bn:
            self.freeze_bn_stats()
        else:
            self.update_bn_stats()

    def freeze_bn_stats(self) -> _ConvBn:
        """``bn`` uses (and keeps) its running statistics, also in training mode."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def update_bn_stats(self) -> _ConvBn:
        """``bn`` follows the module's mode again (batch statistics while training)."""
        self.freeze_bn = False
        self.bn.training = True
        return self

    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ArgumentError("training mode is expected to be boolean")
        self.training = mode
        if not self.freeze_bn:  # (a frozen bn stays in eval mode)
            for module in self.children():
                module.train(mode)
        return self

    def forward(self, input: Tensor) -> Tensor:
        bn = self.bn
        factor = bn.weight / (bn.running_var + bn.eps).sqrt()
        lead = (1,) * (self.weight.dim() - 2)
        weight = self.weight_fake_quant(self.weight * factor.reshape(-1, 1, *lead))
        out = self._conv_forward(input, weight, None) / factor.reshape(1, -1, *lead)
        if self.bias is not None:
            out = out + self.bias.reshape(1, -1, *lead)
        return self._finish(bn(out))

    def fused_weight_bias(self) -> tuple[Tensor, Tensor]:
        """The weight and bias with ``bn``'s running statistics folded in (what ``convert``
        quantizes)."""
        bn = self.bn
        return fuse_conv_bn_weights(self.weight, self.bias, bn.running_mean, bn.running_var,
                                    bn.eps, bn.weight, bn.bias)

    @classmethod
    def from_float(cls, mod: Module) -> Module:
        if type(mod) is not cls._float_type:
            raise ArgumentTypeError(f"qat.{cls.__name__}.from_float: expected a fused "
                                    f"{cls._float_type.__name__}, got {type(mod).__name__}")
        qconfig = getattr(mod, "qconfig", None)
        if qconfig is None:
            raise ArgumentError(f"qat.{cls.__name__}.from_float: the input module needs a "
                                "qconfig (set it, or use prepare_qat)")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, qconfig)
        _share_weights(conv, qat)
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            setattr(qat.bn, name, getattr(bn, name))
        return qat


class ConvBn1d(_ConvBn, nn.Conv1d):
    """QAT ``Conv1d`` and ``BatchNorm1d`` (from a fused ``ConvBn1d``)."""

    _float_type = nni.ConvBn1d


class ConvBn2d(_ConvBn, nn.Conv2d):
    """QAT ``Conv2d`` and ``BatchNorm2d`` (from a fused ``ConvBn2d``).

    Example:
        >>> from ember.ao.quantization import get_default_qat_qconfig
        >>> m = ConvBn2d(1, 4, 3, qconfig=get_default_qat_qconfig("qnnpack"))
        >>> m(ember.randn(2, 1, 5, 5)).shape
        ember.Size([2, 4, 3, 3])
    """

    _float_type = nni.ConvBn2d


class ConvBn3d(_ConvBn, nn.Conv3d):
    """QAT ``Conv3d`` and ``BatchNorm3d`` (from a fused ``ConvBn3d``)."""

    _float_type = nni.ConvBn3d


class ConvBnReLU1d(ConvBn1d):
    """QAT ``ConvBn1d`` then ReLU (from a fused ``ConvBnReLU1d``)."""

    relu, _float_type = True, nni.ConvBnReLU1d


class ConvBnReLU2d(ConvBn2d):
    """QAT ``ConvBn2d`` then ReLU (from a fused ``ConvBnReLU2d``)."""

    relu, _float_type = True, nni.ConvBnReLU2d


class ConvBnReLU3d(ConvBn3d):
    """QAT ``ConvBn3d`` then ReLU (from a fused ``ConvBnReLU3d``)."""

    relu, _float_type = True, nni.ConvBnReLU3d


def freeze_bn_stats(mod: Module) -> None:
    """Freezes the batch-norm statistics of ``mod`` if it is a QAT ``ConvBn*`` (for
    ``model.apply``, late in quantization-aware training)."""
    if isinstance(mod, _ConvBn):
        mod.freeze_bn_stats()


def update_bn_stats(mod: Module) -> None:
    """Lets the batch-norm statistics of ``mod`` update again if it is a QAT ``ConvBn*``."""
    if isinstance(mod, _ConvBn):
        mod.update_bn_stats()
