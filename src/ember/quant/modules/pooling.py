"""Average pooling of quantized tensors: ``AdaptiveAvgPool2d`` and ``AvgPool2d``, the modules
``convert`` puts in place of ``nn.AdaptiveAvgPool2d`` and ``nn.AvgPool2d`` (PyTorch's float
modules take quantized tensors; Ember's take ordinary ones only), and
:func:`adaptive_avg_pool2d` and :func:`avg_pool2d`, their integer kernels."""

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

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "adaptive_avg_pool2d", "avg_pool2d", "mean"]


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    """The input rows (or columns) that output row ``i`` averages, as PyTorch's."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


# channels PyTorch's x86 kernel quantizes per vector (8, its AVX2 kernel: torch 2.13 runs it on
# AVX-512 machines too); the channels left over one by one
_VECTOR = 8


def _average(acc: np.ndarray, divisor: int, zero_point: int, fused: bool) -> np.ndarray:
    """``acc`` (integer sums less ``zero_point`` per element summed, channels on axis -1)
    over ``divisor``, quantized again at the input's scale and zero point as PyTorch's x86
    kernels, with the multiplier ``1 / divisor`` in float32. In whole vectors of channels:
    adaptive pooling (``fused``) rounds ``zero_point + acc * multiplier`` once (a fused
    multiply-add, the multiplier inverted twice: ``quantize_val`` is given its reciprocal as
    the scale), pooling rounds ``acc * multiplier`` and adds the zero point. The channels
    left over round ``zero_point + acc * multiplier`` twice (the multiplier inverted twice).
    Then to the nearest integer, ties to even."""
    one = np.float32(1)
    multiplier = one / np.float32(divisor)
    twice = one / (one / multiplier)
    if fused:  # (float64 holds a float32 times an int32 sum exactly: one rounding, as FMA)
        out = np.rint((acc.astype(np.float64) * np.float64(twice) + zero_point)
                      .astype(np.float32))
    else:
        out = np.rint(acc.astype(np.float32) * multiplier) + zero_point
        rest = np.flatnonzero(_quantize_avx2_rest(acc.shape[-1] - acc.shape[-1] % _VECTOR))
        out[..., rest] = np.rint(acc[..., rest].astype(np.float32) * multiplier
                                 + np.float32(zero_point))
    vectors = acc.shape[-1] - acc.shape[-1] % _VECTOR
    out[..., vectors:] = np.rint(acc[..., vectors:].astype(np.float32) * twice
                                 + np.float32(zero_point))
    return out


def _quantize_avx2_rest(channels: int) -> np.ndarray:
    """Of the first ``channels`` channels (whole vectors), those PyTorch's pooling kernel
    quantizes one by one after the vectors: it hands them over in blocks of 128 and
    quantizes each block 16 at a time, the rest of the block singly."""
    offset = np.arange(channels) % 128
    block = np.minimum(128, channels - (np.arange(channels) - offset))
    return offset >= block // 16 * 16


def _checked(op: str, input: Any) -> tuple[QuantizedTensor, np.ndarray]:
    """The quantized ``(N, C, H, W)`` or ``(C, H, W)`` input and its integers as int64
    ``(N, C, H, W)``."""
    x = _quantized_input(op, input, (quint8, qint8))
    if x.ndim not in (3, 4) or 0 in x.shape[1:]:
        raise ShapeError(f"quantized {op}: expected a 3-D or 4-D input with non-empty "
                         f"channel and spatial sizes, got shape {tuple(x.shape)}")
    values = x._int.numpy().astype(np.int64)
    return x, values[None] if values.ndim == 3 else values


def _output(x: QuantizedTensor, out: np.ndarray) -> QuantizedTensor:
    """``out`` (float integers, 4-D) clamped to ``x``'s dtype, shaped as ``x``'s batch."""
    out = out.reshape(*x.shape[:-2], *out.shape[-2:])
    ints = np.clip(out, x.dtype.min, x.dtype.max).astype(x._int.numpy().dtype)
    return QuantizedTensor(from_numpy(ints), x.dtype, x._scale, x._zero_point)


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
    x, values = _checked("adaptive_avg_pool2d", input)
    size = [output_size] * 2 if isinstance(output_size, int) else list(output_size)
    if len(size) != 2:
        raise ArgumentError(f"quantized adaptive_avg_pool2d: output_size must be an int or "
                            f"two sizes, got {output_size!r}")
    height, width = x.shape[-2:]
    size = [s if s is not None else full for s, full in zip(size, (height, width))]
    if any(not isinstance(s, int) or s < 1 for s in size):
        raise ArgumentError(f"quantized adaptive_avg_pool2d: output sizes must be positive, "
                            f"got {output_size!r}")
    zero_point = int(x._zero_point)
    out = np.empty((*values.shape[:-2], *size), dtype=np.float32)
    for i, (top, bottom) in enumerate(_windows(height, size[0])):
        for j, (left, right) in enumerate(_windows(width, size[1])):
            count = (bottom - top) * (right - left)
            acc = values[..., top:bottom, left:right].sum((-2, -1)) - zero_point * count
            out[..., i, j] = _average(acc, count, zero_point, fused=True)
    return _output(x, out)


def _pair(op: str, name: str, value: Any, least: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or any(not isinstance(v, int) or v < least for v in pair):
        raise ArgumentError(f"quantized {op}: {name} must be an int or two ints of at least "
                            f"{least}, got {value!r}")
    return pair


def _pooled_size(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool) -> int:
    out = -(-(size + 2 * pad - kernel) // stride) if ceil_mode else \
        (size + 2 * pad - kernel) // stride
    out += 1
    if ceil_mode and (out - 1) * stride >= size + pad:  # (a window starting in the padding)
        out -= 1
    return out


def avg_pool2d(input: QuantizedTensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> QuantizedTensor:
    """Average pooling of a per-tensor ``quint8``/``qint8`` tensor ``(N, C, H, W)`` or
    ``(C, H, W)`` (``torch.nn.functional.avg_pool2d``'s arguments), output at the input's
    scale and zero point, with the integers of PyTorch's x86 kernel for channels-last
    quantized tensors (what Inception v3 pools).

    Example:
        >>> q = ember.quantize_per_tensor(ember.arange(4.0).reshape(1, 1, 2, 2), 0.5, 0,
        ...                               ember.quint8)
        >>> avg_pool2d(q, 2).int_repr().flatten().tolist()
        [3]
    """
    x, values = _checked("avg_pool2d", input)
    kernel = _pair("avg_pool2d", "kernel_size", kernel_size, 1)
    strides = kernel if stride is None or (not isinstance(stride, int) and not stride) else \
        _pair("avg_pool2d", "stride", stride, 1)
    pads = _pair("avg_pool2d", "padding", padding, 0)
    if any(2 * p > k for p, k in zip(pads, kernel)):
        raise ArgumentError(f"quantized avg_pool2d: padding {padding} should be at most half "
                            f"of kernel_size {kernel_size}")
    if divisor_override is not None and divisor_override < 1:
        raise ArgumentError(f"quantized avg_pool2d: divisor_override must be positive, got "
                            f"{divisor_override}")
    height, width = x.shape[-2:]
    size = [_pooled_size(n, k, s, p, ceil_mode)
            for n, k, s, p in zip((height, width), kernel, strides, pads)]
    if min(size) < 1:
        raise ShapeError(f"quantized avg_pool2d: input of shape {tuple(x.shape)} is smaller "
                         f"than kernel_size {kernel_size} with padding {padding}")
    zero_point = int(x._zero_point)
    out = np.empty((*values.shape[:-2], *size), dtype=np.float32)
    for i in range(size[0]):
        top = i * strides[0] - pads[0]
        bottom = min(top + kernel[0], height + pads[0])
        for j in range(size[1]):
            left = j * strides[1] - pads[1]
            right = min(left + kernel[1], width + pads[1])
            window = (bottom - top) * (right - left)  # (padding included)
            top_, left_ = max(top, 0), max(left, 0)
            bottom_, right_ = min(bottom, height), min(right, width)
            count = (bottom_ - top_) * (right_ - left_)
            acc = values[..., top_:bottom_, left_:right_].sum((-2, -1)) - zero_point * count
            divisor = divisor_override or (window if count_include_pad else count)
            out[..., i, j] = _average(acc, divisor, zero_point, fused=False)
    return _output(x, out)


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


class AvgPool2d(nn.AvgPool2d):
    """Average pooling of a quantized tensor (:func:`avg_pool2d`), float pooling of a float one.

    Example:
        >>> q = ember.quantize_per_tensor(ember.arange(4.0).reshape(1, 1, 2, 2), 0.5, 0,
        ...                               ember.quint8)
        >>> AvgPool2d(2)(q).int_repr().flatten().tolist()
        [3]
    """

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):  # (after the quantized region: float pooling)
            return super().forward(input)
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)

    @classmethod
    def from_float(cls, mod: Module) -> AvgPool2d:
        return cls(mod.kernel_size, mod.stride, mod.padding, mod.ceil_mode,
                   mod.count_include_pad, mod.divisor_override)
