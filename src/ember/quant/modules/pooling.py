"""Average pooling of quantized tensors: ``AdaptiveAvgPool2d``, the module ``convert`` puts in
place of ``nn.AdaptiveAvgPool2d`` (PyTorch's float module takes quantized tensors; Ember's
takes ordinary ones only), and :func:`adaptive_avg_pool2d`, its integer kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import nn
from ember.errors import ArgumentError, ShapeError
from ember.nn.module import Module
from ember.ops.creation import from_numpy
from ember.quant.modules.quantized import _quantized_input
from ember.quant.qtensor import QuantizedTensor, quantize_per_tensor
from ember.quant.qtypes import qint8, quint8
from ember.tensor import Tensor

__all__ = ["AdaptiveAvgPool2d", "adaptive_avg_pool2d", "mean"]


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    """The input rows (or columns) that output row ``i`` averages, as PyTorch's."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


# channels PyTorch's x86 kernel quantizes per vector (8, its AVX2 kernel: torch 2.13 runs it on
# AVX-512 machines too); the channels left over one by one
_VECTOR = 8


def _average(acc: np.ndarray, count: int, zero_point: int) -> np.ndarray:
    """``acc`` (integer sums less ``zero_point * count``, channels on axis -1) over
    ``count``, quantized again at the input's scale and zero point as PyTorch's x86 kernel:
    the multiplier ``1 / count`` in float32, inverted twice (``quantize_val`` is given its
    reciprocal as the scale), ``zero_point + acc * multiplier`` rounded to float32 once (a
    fused multiply-add) in whole vectors of channels, twice for the channels left over,
    then to the nearest integer, ties to even."""
    one = np.float32(1)
    multiplier = one / (one / (one / np.float32(count)))
    # (float64 holds the product of a float32 and an int32 sum exactly: one rounding, as FMA)
    fused = (acc.astype(np.float64) * np.float64(multiplier) + zero_point).astype(np.float32)
    vectors = acc.shape[-1] - acc.shape[-1] % _VECTOR
    fused[..., vectors:] = acc[..., vectors:].astype(np.float32) * multiplier + \
        np.float32(zero_point)
    return np.rint(fused)


def adaptive_avg_pool2d(input: QuantizedTensor, output_size: Any) -> QuantizedTensor:
    """Adaptive average pooling of a per-tensor ``quint8``/``qint8`` tensor ``(N, C, H, W)``
    or ``(C, H, W)``, output at the input's scale and zero point, with the integers of
    PyTorch's x86 kernel (``torch.nn.functional.adaptive_avg_pool2d`` on a channels-last
    quantized tensor, as quantized convolutions give).

    Example:
        >>> q = ember.quantize_per_tensor(ember.arange(4.0).reshape(1, 1, 2, 2), 0.5, 0,
        ...                               ember.quint8)
        >>> adaptive_avg_pool2d(q, 1).int_repr().flatten().tolist()
        [3]
    """
    x = _quantized_input("adaptive_avg_pool2d", input, (quint8, qint8))
    if x.ndim not in (3, 4) or 0 in x.shape[1:]:
        raise ShapeError(f"quantized adaptive_avg_pool2d: expected a 3-D or 4-D input with "
                         f"non-empty channel and spatial sizes, got shape {tuple(x.shape)}")
    size = [output_size] * 2 if isinstance(output_size, int) else list(output_size)
    if len(size) != 2:
        raise ArgumentError(f"quantized adaptive_avg_pool2d: output_size must be an int or "
                            f"two sizes, got {output_size!r}")
    height, width = x.shape[-2:]
    size = [s if s is not None else full for s, full in zip(size, (height, width))]
    if any(not isinstance(s, int) or s < 1 for s in size):
        raise ArgumentError(f"quantized adaptive_avg_pool2d: output sizes must be positive, "
                            f"got {output_size!r}")
    values = x._int.numpy().astype(np.int64)
    if values.ndim == 3:
        values = values[None]
    zero_point = int(x._zero_point)
    out = np.empty((*values.shape[:-2], *size), dtype=np.float32)
    for i, (top, bottom) in enumerate(_windows(height, size[0])):
        for j, (left, right) in enumerate(_windows(width, size[1])):
            count = (bottom - top) * (right - left)
            acc = values[..., top:bottom, left:right].sum((-2, -1)) - zero_point * count
            out[..., i, j] = _average(acc, count, zero_point)
    out = out.reshape(*x.shape[:-2], *size)
    ints = np.clip(out, x.dtype.min, x.dtype.max).astype(x._int.numpy().dtype)
    return QuantizedTensor(from_numpy(ints), x.dtype, x._scale, x._zero_point)


def mean(input: QuantizedTensor, dim: Any, keepdim: bool = False) -> QuantizedTensor:
    """The mean of a per-tensor quantized tensor over ``dim``, as PyTorch's for a
    channels-last tensor (what ShuffleNetV2 pools): the float mean of the dequantized values,
    quantized at the input's scale and zero point (float32 sums in another order may round
    a value within an ulp of a tie the other way).

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([[1.0, 2.0]]), 0.5, 0, ember.quint8)
        >>> mean(q, 1).int_repr().tolist()
        [3]
    """
    x = _quantized_input("mean", input, (quint8, qint8))
    return quantize_per_tensor(x.dequantize().mean(dim, keepdim=keepdim), x.q_scale(),
                               x.q_zero_point(), x.dtype)


class AdaptiveAvgPool2d(nn.AdaptiveAvgPool2d):
    """Adaptive average pooling of a quantized tensor (:func:`adaptive_avg_pool2d`), float
    pooling of a float one.

    Example:
        >>> AdaptiveAvgPool2d((1, 1))
        AdaptiveAvgPool2d(output_size=(1, 1))
    """

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):  # (after the quantized region: float pooling)
            return super().forward(input)
        return adaptive_avg_pool2d(input, self.output_size)

    @classmethod
    def from_float(cls, mod: Module) -> AdaptiveAvgPool2d:
        return cls(mod.output_size)
