"""``Hardtanh``, ``Threshold`` and ``Upsample`` of quantized tensors: the modules ``convert``
puts in place of the float ones, which PyTorch runs unchanged on quantized tensors (its
functions take them; Ember's take ordinary ones only). A float tensor (after a
``DeQuantize``) gets the float module's answer."""

from __future__ import annotations

from ember import nn
from ember.nn.module import Module
from ember.ops.interpolate import _sizes
from ember.quant.modules import functional as qF
from ember.quant.qtensor import QuantizedTensor
from ember.tensor import Tensor

__all__ = ["Hardtanh", "Threshold", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Hardtanh(nn.Hardtanh):
    """The integers clamped to ``min_val`` and ``max_val`` quantized (:func:`hardtanh` of
    ``ember.ao.nn.quantized.functional``; in place with ``inplace``), same scale and zero
    point.

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-2.0, 0.5, 3.0]), 0.5, 8, ember.quint8)
        >>> Hardtanh()(x).dequantize()
        tensor([-1.0000,  0.5000,  1.0000])
    """

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return super().forward(input)
        return qF.hardtanh(input, self.min_val, self.max_val, self.inplace)

    @classmethod
    def from_float(cls, mod: Module) -> Hardtanh:
        return cls(mod.min_val, mod.max_val, mod.inplace)


class Threshold(nn.Threshold):
    """``x`` where its real value is above ``threshold``, else ``value``, at the input's scale
    and zero point (:func:`threshold` of ``ember.ao.nn.quantized.functional``).

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-2.0, 0.5, 3.0]), 0.5, 8, ember.quint8)
        >>> Threshold(1.0, 0.0)(x).dequantize()
        tensor([0., 0., 3.])
    """

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return super().forward(input)
        return qF.threshold(input, self.threshold, self.value)

    @classmethod
    def from_float(cls, mod: Module) -> Threshold:
        return cls(mod.threshold, mod.value, mod.inplace)


class Upsample(nn.Upsample):
    """Resizing of a quantized tensor, same scale and zero point (:func:`interpolate` of
    ``ember.ao.nn.quantized.functional``: the nearest modes and 'bilinear').

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([[[1.0, 2.0]]]), 0.5, 0, ember.quint8)
        >>> Upsample(scale_factor=2)(x).dequantize()
        tensor([[[1., 1., 2., 2.]]])
    """

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return super().forward(input)
        size, scale_factor = self.size, self.scale_factor
        if self.recompute_scale_factor:  # (as the float path: the sizes, not the factors)
            size, scale_factor = _sizes(input, size, scale_factor, True)[0], None
        return qF.interpolate(input, size, scale_factor, self.mode, self.align_corners)

    @classmethod
    def from_float(cls, mod: Module) -> Upsample:
        return cls(mod.size, mod.scale_factor, mod.mode, mod.align_corners,
                   mod.recompute_scale_factor)


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` of a quantized tensor (the float module's repr)."""

    @classmethod
    def from_float(cls, mod: Module) -> UpsamplingNearest2d:
        return cls(mod.size, mod.scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` of a quantized tensor (the float
    module's repr)."""

    @classmethod
    def from_float(cls, mod: Module) -> UpsamplingBilinear2d:
        return cls(mod.size, mod.scale_factor, "bilinear", True)
