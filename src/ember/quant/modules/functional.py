"""``torch.ao.nn.quantized.functional``: functions on quantized tensors.

``linear`` and ``conv1d/2d/3d`` pack their int8 weight for the current engine at each call
(as PyTorch's) and compute as the quantized modules; the pools and activations are the
quantized modules' kernels. Each takes per-tensor quantized input and refuses a float one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.layouts import suggested_format
from ember.ops.creation import from_numpy
from ember.ops.interpolate import _linear_taps, _nearest_index, _sizes
from ember.quant import elementwise, kernels
from ember.quant.functions import quantized_max_pool1d, quantized_max_pool2d
from ember.quant.modules import activations, pooling
from ember.quant.modules.quantized import Conv1d, Conv2d, Conv3d, Linear
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import QDType, qint8, quint8
from ember.tensor import Tensor

__all__ = ["linear", "conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "avg_pool2d",
           "adaptive_avg_pool2d", "hardswish", "leaky_relu", "elu", "celu", "hardsigmoid",
           "clamp", "hardtanh", "threshold", "interpolate", "upsample", "upsample_nearest",
           "upsample_bilinear"]


def _quantized(op: str, input: Any) -> QuantizedTensor:
    if not isinstance(input, QuantizedTensor):
        raise DTypeError(f"quantized.functional.{op}: the input must be a quantized tensor, got "
                         f"a {type(input).__name__}. Hint: ember.quantize_per_tensor(x, scale, "
                         "zero_point, ember.quint8), or ember.nn.functional for float input")
    return input


def _weight(op: str, weight: Any) -> QuantizedTensor:
    if not isinstance(weight, QuantizedTensor) or weight.dtype is not qint8:
        shown = repr(weight.dtype) if isinstance(weight, QuantizedTensor) else type(weight).__name__
        raise DTypeError(f"quantized.functional.{op}: the weight must be an ember.qint8 "
                         f"quantized tensor (as PyTorch's), got {shown}. Hint: "
                         "ember.quantize_per_tensor(w, scale, 0, ember.qint8)")
    return weight


def linear(input: QuantizedTensor, weight: QuantizedTensor, bias: Tensor | None = None,
           scale: float | None = None, zero_point: int | None = None) -> QuantizedTensor:
    """``input @ weight.T + bias`` of a ``quint8`` input and a ``qint8`` weight ``(out, in)``,
    quantized to ``scale`` and ``zero_point`` (by default the input's).

    Example:
        >>> x = ember.quantize_per_tensor(ember.ones(2, 3), 0.1, 0, ember.quint8)
        >>> w = ember.quantize_per_tensor(ember.ones(4, 3), 0.5, 0, ember.qint8)
        >>> linear(x, w, scale=0.1, zero_point=0).dequantize()[0]
        tensor([3., 3., 3., 3.])
    """
    x = _quantized("linear", input)
    w = _weight("linear", weight)
    if w.ndim != 2:
        raise ShapeError(f"quantized.functional.linear: the weight must be 2-D (out_features, "
                         f"in_features), got shape {tuple(w.shape)}")
    layer = Linear(w.shape[1], w.shape[0], bias is not None)
    layer.scale = float(x.q_scale() if scale is None else scale)
    layer.zero_point = int(x.q_zero_point() if zero_point is None else zero_point)
    layer.set_weight_bias(w, bias)
    return layer(x)


def _conv(layer_type: type, dims: int, input: Any, weight: Any, bias: Tensor | None,
          stride: Any, padding: Any, dilation: Any, groups: int, padding_mode: str,
          scale: float, zero_point: int, dtype: QDType) -> QuantizedTensor:
    op = f"conv{dims}d"
    x = _quantized(op, input)
    w = _weight(op, weight)
    if padding_mode != "zeros" or isinstance(padding, str):
        raise ArgumentError(f"quantized.functional.{op}: only numeric zero padding is supported "
                            f"(as PyTorch's), got padding={padding!r}, "
                            f"padding_mode={padding_mode!r}")
    if x.dtype is not quint8 or dtype is not quint8:  # (PyTorch ignores dtype: quint8 anyway)
        raise DTypeError(f"quantized.functional.{op}: only ember.quint8 activations and "
                         f"outputs are supported (PyTorch ignores dtype and returns quint8), "
                         f"got input {x.dtype!r}, dtype {dtype!r}")
    if x.ndim != dims + 2 or w.ndim != dims + 2:
        raise ShapeError(f"quantized.functional.{op}: input and weight must be {dims + 2}-D, "
                         f"got shapes {tuple(x.shape)} and {tuple(w.shape)}")
    layer = layer_type(w.shape[1] * groups, w.shape[0], tuple(w.shape[2:]), stride, padding,
                       dilation, groups, bias is not None)
    layer.scale, layer.zero_point = float(scale), int(zero_point)
    layer.set_weight_bias(w, bias)
    return layer(x)


def _conv_function(layer_type: type, dims: int, shape: str, example: str = "") -> Any:
    def conv(input: QuantizedTensor, weight: QuantizedTensor, bias: Tensor | None,
             stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
             padding_mode: str = "zeros", scale: float = 1.0, zero_point: int = 0,
             dtype: QDType = quint8) -> QuantizedTensor:
        return _conv(layer_type, dims, input, weight, bias, stride, padding, dilation, groups,
                     padding_mode, scale, zero_point, dtype)

    conv.__name__ = conv.__qualname__ = f"conv{dims}d"
    conv.__doc__ = (f"Quantized {dims}-D convolution of a ``quint8`` ``{shape}`` input and a "
                    "``qint8`` weight, quantized to ``scale`` and ``zero_point`` (PyTorch's "
                    f"arguments).{example}")
    return conv


conv1d = _conv_function(Conv1d, 1, "(N, C, L)")
conv2d = _conv_function(Conv2d, 2, "(N, C, H, W)", """

    Example:
        >>> x = ember.quantize_per_tensor(ember.ones(1, 1, 3, 3), 0.1, 0, ember.quint8)
        >>> w = ember.quantize_per_tensor(ember.ones(2, 1, 3, 3), 0.5, 0, ember.qint8)
        >>> conv2d(x, w, None, scale=0.1).dequantize().flatten()
        tensor([9., 9.])
    """)
conv3d = _conv_function(Conv3d, 3, "(N, C, D, H, W)")


def _max_pool(fn: Any, op: str, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> QuantizedTensor:
    x = _quantized(op, input)
    if return_indices:
        raise ArgumentError(f"quantized.functional.{op}: return_indices is not supported (as "
                            "in PyTorch)")
    return fn(x, kernel_size, () if stride is None else stride, padding, dilation, ceil_mode)


def max_pool1d(input: QuantizedTensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> QuantizedTensor:
    """1-D max pooling of a quantized tensor's integers (same scale and zero point)."""
    return _max_pool(quantized_max_pool1d, "max_pool1d", input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def max_pool2d(input: QuantizedTensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> QuantizedTensor:
    """2-D max pooling of a quantized tensor's integers (same scale and zero point)."""
    return _max_pool(quantized_max_pool2d, "max_pool2d", input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def avg_pool2d(input: QuantizedTensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> QuantizedTensor:
    """2-D average pooling at the input's scale and zero point
    (``ember.quant.modules.pooling.avg_pool2d``)."""
    return pooling.avg_pool2d(_quantized("avg_pool2d", input), kernel_size, stride, padding,
                              ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: QuantizedTensor, output_size: Any) -> QuantizedTensor:
    """Adaptive 2-D average pooling at the input's scale and zero point."""
    return pooling.adaptive_avg_pool2d(_quantized("adaptive_avg_pool2d", input), output_size)


def hardswish(input: QuantizedTensor, scale: float, zero_point: int) -> QuantizedTensor:
    """Quantized hardswish to ``scale`` and ``zero_point``."""
    return activations.Hardswish(scale, zero_point)(_quantized("hardswish", input))


def leaky_relu(input: QuantizedTensor, negative_slope: float = 0.01, inplace: bool = False,
               scale: float | None = None, zero_point: int | None = None) -> QuantizedTensor:
    """Quantized leaky ReLU to ``scale`` and ``zero_point`` (by default the input's).
    ``inplace`` is accepted and ignored: a new tensor is returned."""
    x = _quantized("leaky_relu", input)
    scale = x.q_scale() if scale is None else scale
    zero_point = x.q_zero_point() if zero_point is None else zero_point
    return activations.LeakyReLU(scale, zero_point, negative_slope)(x)


def elu(input: QuantizedTensor, scale: float, zero_point: int,
        alpha: float = 1.0) -> QuantizedTensor:
    """Quantized ELU to ``scale`` and ``zero_point``."""
    return activations.ELU(scale, zero_point, alpha)(_quantized("elu", input))


def hardsigmoid(input: QuantizedTensor, inplace: bool = False) -> QuantizedTensor:
    """Quantized hardsigmoid to the fixed range (scale 1/256). ``inplace`` is ignored."""
    return activations.Hardsigmoid()(_quantized("hardsigmoid", input))


def celu(input: QuantizedTensor, scale: float, zero_point: int,
         alpha: float = 1.0) -> QuantizedTensor:
    """Quantized CELU, ``x`` or ``(exp(x * (1 / alpha)) - 1) * alpha`` below zero, to
    ``scale`` and ``zero_point`` (ATen's ELU kernel with an input scale of ``1 / alpha``)."""
    x = _quantized("celu", input)
    inv_alpha, alpha32 = np.float32(1.0 / alpha), np.float32(alpha)

    def values(v: np.ndarray) -> np.ndarray:
        negative = (np.exp(np.minimum(v, np.float32(0)) * inv_alpha) - np.float32(1)) * alpha32
        return np.where(v >= 0, v, negative)

    return elementwise.unary("elu", x, values, scale, zero_point,
                             np.float32(1) / np.float32(scale))


def _clamp_integers(op: str, input: Any, low: float, high: float,
                    inplace: bool = False) -> QuantizedTensor:
    x = _quantized(op, input)
    if x._axis is not None or x.dtype not in (quint8, qint8):
        raise DTypeError(f"quantized.functional.{op}: expected a per-tensor ember.quint8 or "
                         f"ember.qint8 tensor, got {x.qscheme()!r} {x.dtype!r}")
    bounds = [kernels.quantize(np.asarray(v, np.float32), x._scale, x._zero_point, x.dtype.min,
                               x.dtype.max, x.dtype.storage.np) for v in (low, high)]
    return x._with_integers(np.asarray(np.clip(x._int.numpy(), *bounds), x.dtype.storage.np),
                            inplace)


def clamp(input: QuantizedTensor, min_: float, max_: float) -> QuantizedTensor:
    """The integers clamped to ``min_`` and ``max_`` quantized with the input's parameters
    (same scale and zero point).

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-2.0, 0.5, 3.0]), 0.5, 8, ember.quint8)
        >>> clamp(x, -1.0, 1.0).dequantize()
        tensor([-1.0000,  0.5000,  1.0000])
    """
    return _clamp_integers("clamp", input, min_, max_)


def hardtanh(input: QuantizedTensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> QuantizedTensor:
    """``clamp(input, min_val, max_val)``, written into ``input`` with ``inplace``."""
    return _clamp_integers("hardtanh", input, min_val, max_val, inplace)


def threshold(input: QuantizedTensor, threshold: float, value: float) -> QuantizedTensor:
    """``x`` where the real value is above ``threshold``, else ``value``, at the input's scale
    and zero point."""
    x = _quantized("threshold", input)
    limit, fill = np.float32(threshold), np.float32(value)
    return elementwise.unary("threshold", x, lambda v: np.where(v > limit, v, fill), x._scale,
                             x._zero_point, np.float32(1) / np.float32(x._scale))


def interpolate(input: QuantizedTensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None) -> QuantizedTensor:
    """``torch.nn.functional.interpolate`` of a quantized tensor, same scale and zero point:
    ``mode='nearest'`` or ``'nearest-exact'``, which pick integers (exact; 3-D input too,
    which PyTorch 2.13 refuses) at PyTorch's quantized kernels' indices, ``floor(i / scale)``
    on every axis (not the float path's per-axis shortcuts), a copy where every size is kept;
    ``mode='bilinear'`` (4-D) weighs the four neighbouring integers in float32 and rounds,
    as PyTorch's kernel for contiguous (NCHW) tensors up to values within an ulp of a half
    (its build fuses some multiply-adds: about 1 integer in 50,000 differs by one; its
    channels-last kernel, which the outputs of its quantized convolutions take, about 1 in
    1,000).

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([[[1.0, 2.0]]]), 0.5, 0, ember.quint8)
        >>> interpolate(x, scale_factor=2).dequantize()
        tensor([[[1., 1., 2., 2.]]])
    """
    x = _quantized("interpolate", input)
    if mode not in ("nearest", "nearest-exact", "bilinear"):
        raise ArgumentError(f"quantized.functional.interpolate: mode={mode!r} is not supported "
                            "on quantized tensors in Ember (only 'nearest', 'nearest-exact' "
                            "and 'bilinear'). Hint: dequantize(), interpolate, quantize again")
    if x._axis is not None:
        raise ArgumentError("quantized.functional.interpolate: expected a per-tensor quantized "
                            "tensor, got a per-channel one")
    if mode == "bilinear":
        return _bilinear(x, size, scale_factor, bool(align_corners))
    if x.ndim < 3 or align_corners is not None:
        raise ArgumentError(f"quantized.functional.interpolate: expected an (N, C, *spatial) "
                            f"input and no align_corners (nearest modes), got shape "
                            f"{tuple(x.shape)} and align_corners={align_corners!r}")
    q, out, scales = _integers_and_sizes(x, size, scale_factor)
    # (PyTorch's quantized kernels copy only where every size is kept, and else read
    # floor(i / scale) on every axis: not the float path's per-axis copy or i // 2)
    if out == q.shape[2:]:
        q = q.copy()
    else:
        for axis, (s, o, f) in enumerate(zip(q.shape[2:], out, scales, strict=True)):
            q = np.take(q, _nearest_index(s, o, f, mode == "nearest-exact"), axis=axis + 2)
    return _resized(q, x)


def _integers_and_sizes(x: QuantizedTensor, size: Any, scale_factor: Any) -> tuple:
    """``x``'s integers as a NumPy array, the output's spatial sizes and the scales, checked."""
    q = x._int.numpy()
    out, scales = _sizes(x._int, size, scale_factor, None)
    if min(out + q.shape[2:]) <= 0:
        raise ShapeError(f"quantized.functional.interpolate: input sizes {q.shape[2:]} and "
                         f"output sizes {out} should be greater than 0")
    return q, out, scales


def _resized(ints: np.ndarray, x: QuantizedTensor) -> QuantizedTensor:
    """The resized integers of ``x``, laid out as PyTorch's: in ``x``'s suggested format."""
    fmt = suggested_format(x._int._data)
    return QuantizedTensor(from_numpy(ints).contiguous(memory_format=fmt), x.dtype, x._scale,
                           x._zero_point)


def _bilinear(x: QuantizedTensor, size: Any, scale_factor: Any,
              align_corners: bool) -> QuantizedTensor:
    """Bilinear resizing of the integers of a 4-D ``x``, as PyTorch's NCHW quantized kernel:
    the weighted sum of the four neighbours in float32 (rows of columns), less the zero point
    and plus it again, to the nearest integer (ties to even), clamped."""
    if x.ndim != 4:
        raise ShapeError(f"quantized.functional.interpolate: mode='bilinear' expects a 4-D "
                         f"(N, C, H, W) input, got shape {tuple(x.shape)}")
    q, out, scales = _integers_and_sizes(x, size, scale_factor)
    f32 = np.dtype(np.float32)
    (top, bottom), (h0, h1) = _linear_taps(q.shape[2], out[0], scales[0], align_corners, f32)
    (left, right), (w0, w1) = _linear_taps(q.shape[3], out[1], scales[1], align_corners, f32)
    v = q.astype(np.float32)
    rows = [v[:, :, r] for r in (top, bottom)]
    upper, lower = ([row[..., c] for c in (left, right)] for row in rows)
    h0, h1 = h0[:, None], h1[:, None]
    total = h0 * (w0 * upper[0] + w1 * upper[1]) + h1 * (w0 * lower[0] + w1 * lower[1])
    zero_point = np.float32(x._zero_point)
    ints = np.rint((total - zero_point) + zero_point)
    return _resized(np.clip(ints, x.dtype.min, x.dtype.max).astype(q.dtype), x)


def upsample(input: QuantizedTensor, size: Any = None, scale_factor: Any = None,
             mode: str = "nearest", align_corners: bool | None = None) -> QuantizedTensor:
    """``interpolate`` (PyTorch's deprecated name)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input: QuantizedTensor, size: Any = None,
                      scale_factor: Any = None) -> QuantizedTensor:
    """``interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)``."""
    return interpolate(input, size, scale_factor, "bilinear", True)


def upsample_nearest(input: QuantizedTensor, size: Any = None,
                     scale_factor: Any = None) -> QuantizedTensor:
    """``interpolate(input, size, scale_factor, mode='nearest')``."""
    return interpolate(input, size, scale_factor, "nearest")
