"""PyTorch's top-level quantization functions: the getters of quantized tensors as functions
(``ember.q_scale(q)``, …), ``quantize_per_tensor_dynamic``, ``quantized_max_pool1d/2d`` and
``fused_moving_avg_obs_fake_quant`` (the fused observer and fake quantizer's kernel)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    refuse_non_tensor,
    type_name,
)
from ember.nn import functional as F
from ember.ops.creation import from_numpy
from ember.ops.fake_quantize import (
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)
from ember.quant import kernels
from ember.quant.fake_quantize import fused_nonfinite, fused_qparams, moving_range
from ember.quant.qtensor import (
    QuantizedTensor,
    _check_input,
    check_channels,
    quantize_per_tensor,
)
from ember.quant.qtypes import QDType, qint8, qint32, quint8
from ember.tensor import Tensor

__all__ = ["q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
           "q_per_channel_axis", "int_repr", "quantize_per_tensor_dynamic",
           "quantized_max_pool1d", "quantized_max_pool2d", "fused_moving_avg_obs_fake_quant",
           "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor"]


def _quantized(op: str, input: Any) -> QuantizedTensor:
    if not isinstance(input, QuantizedTensor):
        raise ArgumentTypeError(f"{op}: expected a quantized tensor, got a {type_name(input)}. "
                                "Hint: make one with ember.quantize_per_tensor")
    return input


def q_scale(input: QuantizedTensor) -> float:
    """The scale of a per-tensor quantized tensor (``input.q_scale()``).

    Example:
        >>> ember.q_scale(ember.quantize_per_tensor(ember.ones(2), 0.5, 1, ember.quint8))
        0.5
    """
    return _quantized("q_scale", input).q_scale()


def q_zero_point(input: QuantizedTensor) -> int:
    """The zero point of a per-tensor quantized tensor (``input.q_zero_point()``)."""
    return _quantized("q_zero_point", input).q_zero_point()


def q_per_channel_scales(input: QuantizedTensor) -> Tensor:
    """The scales of a per-channel quantized tensor, float64."""
    return _quantized("q_per_channel_scales", input).q_per_channel_scales()


def q_per_channel_zero_points(input: QuantizedTensor) -> Tensor:
    """The zero points of a per-channel quantized tensor, int64."""
    return _quantized("q_per_channel_zero_points", input).q_per_channel_zero_points()


def q_per_channel_axis(input: QuantizedTensor) -> int:
    """The channel axis of a per-channel quantized tensor."""
    return _quantized("q_per_channel_axis", input).q_per_channel_axis()


def int_repr(input: QuantizedTensor) -> Tensor:
    """The integers of a quantized tensor (``input.int_repr()``)."""
    return _quantized("int_repr", input).int_repr()


def quantize_per_tensor_dynamic(input: Tensor, dtype: QDType,
                                reduce_range: bool) -> QuantizedTensor:
    """``input`` quantized to ``dtype`` (``quint8`` or ``qint8``) with a scale and zero point
    chosen from its range (PyTorch's ``ChooseQuantizationParams``; ``reduce_range`` halves
    the integer range).

    Example:
        >>> q = ember.quantize_per_tensor_dynamic(ember.tensor([-1.0, 3.0]), ember.quint8, False)
        >>> q.int_repr(), q.q_zero_point()
        (tensor([  0, 255], dtype=ember.uint8), 64)
    """
    if dtype not in (quint8, qint8):
        raise DTypeError(f"quantize_per_tensor_dynamic: dtype must be ember.quint8 or "
                         f"ember.qint8, got {dtype!r}")
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise DTypeError(f"quantize_per_tensor_dynamic: expected a float tensor, got "
                         f"{getattr(input, 'dtype', type(input).__name__)}")
    x = input.detach().float().numpy()
    low, high = (dtype.min // 2, dtype.max // 2) if reduce_range else (dtype.min, dtype.max)
    lo = float(x.min()) if x.size else 0.0
    hi = float(x.max()) if x.size else 0.0
    scale, zero_point = kernels.choose_qparams_for_range(lo, hi, low, high)
    return quantize_per_tensor(input.detach().float(), scale, zero_point, dtype)


def _max_pool(op: str, dims: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool) -> QuantizedTensor:
    x = _quantized(op, input)
    if x._axis is not None:
        raise ArgumentError(f"{op}: expected a per-tensor quantized tensor, got qscheme "
                            f"{x.qscheme()!r}")
    kernel, pad = (np.broadcast_to(np.asarray(v, dtype=object), (dims,)).tolist()
                   if np.size(v) in (1, dims) else None for v in (kernel_size, padding))
    if kernel and pad and any(2 * p > k for k, p in zip(kernel, pad, strict=True)):
        raise ArgumentError(f"{op}: padding {padding} should be at most half of kernel_size "
                            f"{kernel_size} (as PyTorch's quantized kernel; dilation aside)")
    if x.ndim not in (dims + 1, dims + 2):
        raise ArgumentError(f"{op}: expected a {dims + 1}-D or {dims + 2}-D input, got shape "
                            f"{tuple(x.shape)}")
    stride = None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride
    pool = F.max_pool1d if dims == 1 else F.max_pool2d
    pooled = pool(x._int.float(), kernel_size, stride, padding, dilation, ceil_mode=ceil_mode)
    # (a window of padding alone: the dtype's lowest integer, as PyTorch)
    pooled = pooled.clamp(min=x.dtype.min).to(x._int.dtype)
    return QuantizedTensor(pooled, x.dtype, x._scale, x._zero_point)


def quantized_max_pool1d(input: QuantizedTensor, kernel_size: Any, stride: Any = (),
                         padding: Any = 0, dilation: Any = 1,
                         ceil_mode: bool = False) -> QuantizedTensor:
    """1-D max pooling of a quantized tensor's integers (exact: dequantization is
    increasing); same scale and zero point. ``stride`` defaults to ``kernel_size``.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 1.0, 0,
        ...                               ember.quint8)
        >>> ember.quantized_max_pool1d(q, [2]).int_repr()
        tensor([[3, 2]], dtype=ember.uint8)
    """
    return _max_pool("quantized_max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode)


def quantized_max_pool2d(input: QuantizedTensor, kernel_size: Any, stride: Any = (),
                         padding: Any = 0, dilation: Any = 1,
                         ceil_mode: bool = False) -> QuantizedTensor:
    """2-D max pooling of a quantized tensor's integers; same scale and zero point.
    ``stride`` defaults to ``kernel_size``."""
    return _max_pool("quantized_max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode)


def fused_moving_avg_obs_fake_quant(
        input: Tensor, observer_on: Tensor, fake_quant_on: Tensor, running_min: Tensor,
        running_max: Tensor, scale: Tensor, zero_point: Tensor, averaging_const: float,
        quant_min: int, quant_max: int, ch_axis: int, per_row_fake_quant: bool = False,
        symmetric_quant: bool = False) -> Tensor:
    """With ``observer_on``, moves ``running_min``/``running_max`` towards ``input``'s
    minimum and maximum (per row, ``ch_axis`` 0, with ``per_row_fake_quant``; the first
    time, from infinities, to them) by ``averaging_const``, in place; with ``fake_quant_on``,
    writes the scale and zero point PyTorch's ``ChooseQuantizationParams`` picks for the
    running range into ``scale`` and ``zero_point`` and returns ``input`` fake-quantized by
    them (else ``input``, the scale and zero point left as they are).

    Example:
        >>> lo, hi = ember.tensor([float("inf")]), ember.tensor([float("-inf")])
        >>> s, z = ember.tensor([1.0]), ember.tensor([0], dtype=ember.int32)
        >>> on = ember.tensor([1])
        >>> ember.fused_moving_avg_obs_fake_quant(ember.tensor([-1.0, 0.3, 1.0]), on, on, lo,
        ...                                       hi, s, z, 0.01, 0, 255, 0)
        tensor([-0.9961,  0.2980,  0.9961])
        >>> s, z
        (tensor([0.0078]), tensor([127], dtype=ember.int32))
    """
    if not isinstance(input, Tensor):  # (a PyTorch tensor's detach/float/numpy would run)
        refuse_non_tensor("fused_moving_avg_obs_fake_quant", "input", input)
    if per_row_fake_quant and ch_axis != 0:
        raise ArgumentError(f"fused_moving_avg_obs_fake_quant: per-row fake quantization is only "
                            f"supported along ch_axis 0 (as PyTorch's), got ch_axis {ch_axis}. "
                            "Hint: move the channels first")
    if not input.numel():  # (as PyTorch's kernel: nothing observed, no new scale)
        return input.clone()
    if int(observer_on.reshape(-1)[0].item()):
        x = input.detach().float().numpy()
        if per_row_fake_quant:
            rows = x.reshape(x.shape[0], -1)
            low, high = rows.min(axis=1), rows.max(axis=1)
        else:
            low, high = np.atleast_1d(x.min()), np.atleast_1d(x.max())
        if running_min.numel() != low.size:
            raise ArgumentError(f"fused_moving_avg_obs_fake_quant: running_min has "
                                f"{running_min.numel()} elements, the input has {low.size} "
                                f"{'rows' if per_row_fake_quant else 'range'}. "
                                "Hint: give one element per row, set to inf (and -inf)")
        low, high = moving_range(running_min.numpy().reshape(-1),
                                 running_max.numpy().reshape(-1), low, high, averaging_const)
        running_min[...] = from_numpy(low.reshape(running_min.shape))
        running_max[...] = from_numpy(high.reshape(running_max.shape))
    if not int(fake_quant_on.reshape(-1)[0].item()):
        return input
    # (the scale and zero point from the running range whenever it fake-quantizes, as PyTorch)
    new_scale, new_zero_point = fused_qparams(running_min.numpy(), running_max.numpy(),
                                              quant_min, quant_max, symmetric_quant)
    scale[...] = new_scale.reshape(scale.shape)
    zero_point[...] = new_zero_point.reshape(zero_point.shape).to(zero_point.dtype)
    if per_row_fake_quant:
        return fake_quantize_per_channel_affine(input, scale, zero_point, ch_axis, quant_min,
                                                quant_max)
    if not np.isfinite(new_scale.numpy()).all():  # (a NaN or infinite running range)
        return fused_nonfinite(input, scale, zero_point, quant_min, quant_max)
    return fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max)


_STORED = {"int8": qint8, "uint8": quint8, "int32": qint32}


def _qdtype_of(op: str, input: Any) -> QDType:
    refuse_non_tensor(op, "input", input)
    if input.dtype.name not in _STORED:
        raise DTypeError(f"{op}: expected the integers of a quantized tensor (int8 for qint8, "
                         f"uint8 for quint8, int32 for qint32), got {input.dtype.name}")
    return _STORED[input.dtype.name]


def _make_per_tensor_quantized_tensor(input: Tensor, scale: float, zero_point: int
                                      ) -> QuantizedTensor:
    """A quantized tensor of a copy of the integers ``input`` (int8, uint8 or int32 for qint8,
    quint8 or qint32) with one ``scale`` and ``zero_point``, as PyTorch's.

    Example:
        >>> ember._make_per_tensor_quantized_tensor(ember.tensor([1, 2], dtype=ember.uint8),
        ...                                         0.5, 1).dequantize()
        tensor([0.0000, 0.5000])
    """
    op = "_make_per_tensor_quantized_tensor"
    dtype = _qdtype_of(op, input)
    _check_input(op, input.float(), dtype, int(zero_point))
    return QuantizedTensor(input.detach().clone(), dtype, float(scale), int(zero_point))


def _make_per_channel_quantized_tensor(input: Tensor, scale: Tensor, zero_point: Tensor,
                                       axis: int) -> QuantizedTensor:
    """A per-channel quantized tensor of a copy of the integers ``input`` with ``scale[c]``
    and ``zero_point[c]`` along ``axis``, as PyTorch's.

    Example:
        >>> q = ember._make_per_channel_quantized_tensor(
        ...     ember.tensor([[1, -2], [3, 4]], dtype=ember.int8),
        ...     ember.tensor([0.5, 0.25], dtype=ember.float64), ember.tensor([0, 1]), 1)
        >>> q.dequantize()
        tensor([[ 0.5000, -0.7500],
                [ 1.5000,  0.7500]])
    """
    op = "_make_per_channel_quantized_tensor"
    dtype = _qdtype_of(op, input)
    check_channels(op, input, scale, zero_point, axis)
    zero_points = zero_point.detach().numpy().astype(np.int64)
    _check_input(op, input.float(), dtype, zero_points)
    return QuantizedTensor(input.detach().clone(), dtype,
                           scale.detach().numpy().astype(np.float64), zero_points, axis)
