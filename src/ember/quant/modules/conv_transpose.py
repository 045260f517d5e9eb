"""Quantized transposed convolutions (``torch.ao.nn.quantized.ConvTranspose1d/2d/3d``):
uint8 input and output, int8 per-tensor weights (PyTorch's fbgemm has no per-channel ones for
them), the exact integer accumulator requantized as the other quantized layers'."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.nn.module import Module
from ember.ops.creation import tensor
from ember.quant import kernels
from ember.quant.modules.quantized import _ConvLayer
from ember.quant.qtensor import QuantizedTensor, quantize_per_tensor
from ember.quant.qtypes import qint8

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvTransposeNd(_ConvLayer):
    _kind, _op = "ConvTranspose", "conv_transpose"
    _per_channel_weights = False  # (as PyTorch's fbgemm)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros") -> None:
        super().__init__()
        self._set_geometry(in_channels, out_channels, kernel_size, stride, padding, dilation,
                           groups, padding_mode)
        self.output_padding = self._sizes("output_padding", output_padding, 0)
        for op, st, d in zip(self.output_padding, self.stride, self.dilation):
            if op >= max(st, d):
                raise ArgumentError(f"quantized {self._name}: output_padding {self.output_padding} "
                                    f"must be smaller than either stride {self.stride} or "
                                    f"dilation {self.dilation}")
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        w = quantize_per_tensor(tensor(np.zeros(shape, np.float32)), 1.0, 0, qint8)
        self._set_weight(w, tensor(np.zeros(out_channels, np.float32)) if bias else None)

    @classmethod
    def _like(cls, layer: Module) -> _ConvTransposeNd:
        return cls(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
                   layer.padding, layer.output_padding, layer.groups, layer.bias is not None,
                   layer.dilation, layer.padding_mode)

    @classmethod
    def from_float(cls, mod: Module) -> _ConvTransposeNd:
        """The quantized twin of an observed float ``ConvTranspose{n}d``; its qconfig's
        weight observer must be per tensor (as PyTorch's)."""
        observer = mod.qconfig.weight()
        if observer.qscheme.per_channel:
            raise ArgumentError(f"{cls.__name__}.from_float: Per channel weight observer is not "
                                f"supported yet for {cls._kind}{cls._n}d (as in PyTorch's fbgemm). "
                                "Hint: use a per-tensor weight observer, as "
                                "get_default_qconfig_mapping() does for transposed convolutions")
        return super().from_float(mod)

    def forward(self, input: QuantizedTensor) -> QuantizedTensor:  # noqa: A002 - PyTorch's
        x = self._checked_input(input)
        acc = kernels.conv_transpose_accumulate(
            kernels.centred(x._int.numpy(), x._zero_point), self._w_centred, self.stride,
            self.padding, self.output_padding, self.dilation, self.groups)
        if any(size <= 0 for size in acc.shape[2:]):
            raise ArgumentError(f"quantized {self._name}: the output of input {tuple(x.shape)} "
                                f"would be empty, {tuple(acc.shape)} (padding {self.padding})")
        return self._output(acc, x, 1)


class ConvTranspose1d(_ConvTransposeNd):
    """A quantized ``nn.ConvTranspose1d``: uint8 (N, C, L) input and output, int8 weight.

    Example:
        >>> m = ConvTranspose1d(2, 3, 3, stride=2)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 2, 4), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 3, 9])
    """

    _n, _layout = 1, "(N, C, L)"


class ConvTranspose2d(_ConvTransposeNd):
    """A quantized ``nn.ConvTranspose2d``: uint8 (N, C, H, W) input and output, int8 weight.

    Example:
        >>> m = ConvTranspose2d(2, 3, 2, stride=2)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 2, 3, 3), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 3, 6, 6])
    """

    _n, _layout = 2, "(N, C, H, W)"


class ConvTranspose3d(_ConvTransposeNd):
    """A quantized ``nn.ConvTranspose3d``: uint8 (N, C, D, H, W) input and output, int8
    weight.

    Example:
        >>> m = ConvTranspose3d(1, 2, 2)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 1, 2, 2, 2), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 2, 3, 3, 3])
    """

    _n, _layout = 3, "(N, C, D, H, W)"
