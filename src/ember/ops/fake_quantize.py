"""Fake quantization: ``fake_quantize_per_tensor_affine`` and
``fake_quantize_per_channel_affine``, a float tensor rounded to the grid of an affine integer
quantization and back, as quantization-aware training sees it.

The numerics are PyTorch's CPU kernels', operation for operation: ``inv_scale = 1 / scale``
in float32, ``q = zero_point + nearbyint(x * inv_scale)`` (halves to even, in float32 for
float32 and half inputs, in float64 for float64 ones), ``q`` clamped to ``[quant_min,
quant_max]`` (NaN to ``quant_min``, and infinities too per channel), then ``(q - zero_point)
* scale`` (in float32 per tensor, even for float64 input). The gradient is PyTorch's
straight-through estimator: the output gradient where ``quant_min <= q <= quant_max``, zero
elsewhere; the quantization parameters get none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import DTypeError, OpError, ShapeError, is_floating_input
from ember.ops.convert import float32_under_autocast
from ember.ops.creation import tensor
from ember.ops.int_args import as_int
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import where
from ember.tensor import Tensor

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


def _sum_rounded_to_odd(xp: Any, a: Any, b: Any) -> Any:
    """``a + b`` (float64 arrays) rounded to odd: an inexact sum gets its last bit set, so that
    rounding it to float32 afterwards rounds the exact sum once (float64 keeps more than two
    bits beyond float32's; rounding the sum to nearest first would round twice)."""
    total = a + b
    b_part = total - a
    error = (a - (total - b_part)) + (b - b_part)  # (Knuth's TwoSum: exact)
    even = (total.view(np.int64) & 1) == 0
    step = (error != 0) & xp.isfinite(error) & even
    return xp.where(step, xp.nextafter(total, xp.copysign(np.inf, error)), total)


def quantize_to_grid(xp: Any, x: Any, scale: Any, zero_point: Any, quant_min: int,
                     quant_max: int, per_channel: bool = False) -> tuple[Any, Any]:
    """``(q, mask)``: the integers ``x`` quantizes to (as floats, clamped to ``[quant_min,
    quant_max]``) and where no clamping happened, with ``scale`` (float32) and ``zero_point``
    (int or float) scalars or arrays broadcasting against ``x``. A float zero point is added
    before rounding (to float32 input in one fused multiply-add), an integer one after, as in
    PyTorch's kernels (and fbgemm's ``Quantize``). NaN goes to ``quant_min``; so does an
    infinity ``per_channel`` (PyTorch's per-channel kernel converts to int64 before clamping).
    The clamp is exact (in float64: a 32-bit ``quant_max`` is not a float32); the mask
    compares in the compute type per tensor, exactly (on int64) per channel, as PyTorch's
    kernels."""
    compute = np.float64 if x.dtype == np.float64 else np.float32
    scale = xp.asarray(scale, dtype=np.float32)
    inv_scale = (np.float32(1) / scale).astype(compute)
    zero_point = xp.asarray(zero_point)
    if zero_point.dtype.kind != "f":
        q = xp.rint(x.astype(compute, copy=False) * inv_scale) + zero_point.astype(compute)
    elif compute is np.float32:  # (PyTorch's kernel fuses the multiply-add: rounded once)
        product = x.astype(np.float64) * inv_scale.astype(np.float64)  # (exact)
        fused = _sum_rounded_to_odd(xp, product, zero_point.astype(np.float32).astype(np.float64))
        q = xp.rint(fused.astype(np.float32))
    else:
        q = xp.rint(x * inv_scale + zero_point)
    exact = q.astype(np.float64, copy=False)
    bounded = exact if per_channel else q
    mask = (bounded >= quant_min) & (bounded <= quant_max)
    undefined = ~xp.isfinite(q) if per_channel else xp.isnan(q)
    return xp.clip(xp.where(undefined, quant_min, exact), quant_min, quant_max), mask


def fake_quantize_arrays(xp: Any, x: Any, scale: Any, zero_point: Any, quant_min: int,
                         quant_max: int, per_channel: bool = False) -> tuple[Any, Any]:
    """``(fake-quantized x, mask of the unclamped elements)``; see :func:`quantize_to_grid`.
    ``(q - zero_point) * scale`` in float64 per channel, in float32 per tensor (the difference
    rounded to float32 first, even for float64 input), as PyTorch's kernels."""
    q, mask = quantize_to_grid(xp, x, scale, zero_point, quant_min, quant_max, per_channel)
    steps = q - xp.asarray(zero_point, dtype=np.float64)
    scale = xp.asarray(scale, dtype=np.float32)
    if per_channel:
        out = steps * scale.astype(np.float64)
    else:
        out = steps.astype(np.float32) * scale
    return out.astype(x.dtype, copy=False), mask


class _FakeQuantize(Primitive):
    """Inputs ``(x, scale, zero_point)``; outputs ``(fake-quantized x, unclamped mask)``."""

    nout = 2
    save_inputs = False
    save_outputs = (1,)  # the rules read the mask

    def infer(self, a, scale, zero_point, **params):
        return a, TensorSpec(a.shape, dtypes.bool_)

    def vjp(self, ctx, g, g_mask):
        return (None if g is None else where(ctx.output(1), g, 0)), None, None

    def jvp(self, ctx, dx, *dparams):
        return where(ctx.output(1), dx, 0), None


@primitive
class FakeQuantizePerTensor(_FakeQuantize):
    name = "fake_quantize_per_tensor_affine"

    def forward(self, xp, a, scale, zero_point, *, quant_min, quant_max):
        # (scale and zero point are inputs, so that a compiled step reads their current values;
        # one element each, or one per sample under vmap, broadcasting against ``a``)
        zero_point = xp.trunc(zero_point).astype(np.int64)  # (PyTorch truncates a float)
        if zero_point.size and not (quant_min <= zero_point.min() and
                                    zero_point.max() <= quant_max):
            raise OpError(f"{self.name}: `zero_point` ({zero_point.ravel().tolist()}) must be "
                          f"between `quant_min` ({quant_min}) and `quant_max` ({quant_max})")
        return fake_quantize_arrays(xp, a, scale, zero_point, quant_min, quant_max)


@primitive
class FakeQuantizePerChannel(_FakeQuantize):
    name = "fake_quantize_per_channel_affine"

    def forward(self, xp, a, scale, zero_point, *, axis, quant_min, quant_max):
        # (checked here, on the arrays, so that it also holds under vmap)
        if zero_point.dtype.kind == "i" and zero_point.size and not (
                quant_min <= zero_point.min() and zero_point.max() <= quant_max):
            raise OpError(f"{self.name}: `zero_point` must be between `quant_min` "
                          f"({quant_min}) and `quant_max` ({quant_max})")
        shape = [1] * a.ndim
        shape[axis] = -1
        return fake_quantize_arrays(xp, a, scale.reshape(shape), zero_point.reshape(shape),
                                    quant_min, quant_max, per_channel=True)


def _check_common(op: str, input: Tensor, quant_min: int, quant_max: int) -> None:
    if not is_floating_input(op, "input", input):
        raise DTypeError(f"{op}: expected a floating input, got {input.dtype.name}. "
                         "Hint: call .float() first")
    if quant_min > quant_max:
        raise OpError(f"{op}: `quant_min` ({quant_min}) should be less than or equal to "
                      f"`quant_max` ({quant_max})")


def _qparam(value: Any, what: str, op: str, dtype: Any) -> Tensor:
    """A per-tensor ``scale`` or ``zero_point`` as a tensor input (a number becomes one)."""
    if not isinstance(value, Tensor):
        return tensor(value, dtype=dtype)
    if value.numel() != 1:
        raise ShapeError(f"{op}: a per-tensor {what} has one element, got shape "
                         f"{tuple(value.shape)}. Hint: use fake_quantize_per_channel_affine")
    if value.requires_grad:
        raise OpError(f"{op}: not differentiable with respect to {what}; it cannot "
                      "have requires_grad=True")
    return value.reshape(())  # (a (1,) one would broadcast a 0-d input to (1,))


def fake_quantize_per_tensor_affine(input: Tensor, scale: float | Tensor,
                                    zero_point: int | Tensor, quant_min: int,
                                    quant_max: int) -> Tensor:
    """``input`` quantized with one ``scale`` and ``zero_point`` to integers in ``[quant_min,
    quant_max]`` and dequantized again (same dtype); the gradient passes where no clamping
    happened. ``scale`` and ``zero_point`` may be numbers or one-element tensors.

    Example:
        >>> x = ember.tensor([0.5, 1.5, 2.5, 300.0])
        >>> ember.fake_quantize_per_tensor_affine(x, 1.0, 0, -128, 127)
        tensor([  0.,   2.,   2., 127.])
    """
    # (PyTorch's CPU autocast float32 list holds its overload of a number scale, so a half
    # input then runs in float32; the one of tensor qparams keeps the input's dtype)
    run = _per_tensor if isinstance(scale, Tensor) else _per_tensor_of_numbers
    return run(input, scale, zero_point, quant_min, quant_max)


def _per_tensor(input: Tensor, scale: Any, zero_point: Any, quant_min: int,
                quant_max: int) -> Tensor:
    op = "fake_quantize_per_tensor_affine"
    _check_common(op, input, quant_min, quant_max)
    if not isinstance(zero_point, Tensor):  # (a float tensor is truncated, as PyTorch does)
        zero_point = as_int(zero_point, op, "zero_point")
    return apply(FakeQuantizePerTensor, input, _qparam(scale, "scale", op, dtypes.float64),
                 _qparam(zero_point, "zero_point", op, dtypes.int64),
                 quant_min=int(quant_min), quant_max=int(quant_max))[0]


_per_tensor_of_numbers = float32_under_autocast(_per_tensor)


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                     axis: int, quant_min: int, quant_max: int) -> Tensor:
    """``input`` quantized with one ``scale[c]`` and ``zero_point[c]`` per index ``c`` along
    ``axis`` and dequantized again; ``scale`` is float32, ``zero_point`` int32 (added after
    rounding) or floating (added before). The gradient passes where no clamping happened.

    Example:
        >>> x = ember.tensor([[0.5, 0.5], [1.5, 1.5]])
        >>> s, z = ember.tensor([1.0, 0.5]), ember.tensor([0, 1], dtype=ember.int32)
        >>> ember.fake_quantize_per_channel_affine(x, s, z, 1, 0, 255)
        tensor([[0.0000, 0.5000],
                [2.0000, 1.5000]])
    """
    op = "fake_quantize_per_channel_affine"
    _check_common(op, input, quant_min, quant_max)
    if scale.dtype not in (dtypes.float32, dtypes.bfloat16):
        raise DTypeError(f"{op}: scale must be float32 or bfloat16, got {scale.dtype.name}")
    if zero_point.dtype not in (dtypes.int32, dtypes.float32, dtypes.float16):
        raise DTypeError(f"{op}: zero_point must be int32, float32 or float16, got "
                         f"{zero_point.dtype.name}")
    if not 0 <= axis < input.ndim:  # (PyTorch takes no negative axis here)
        raise IndexError(f"{op}: axis {axis} is out of range for a {input.ndim}-D input "
                         f"(expected in [0, {input.ndim - 1}])")
    channels = input.shape[axis]
    if scale.shape != (channels,) or zero_point.shape != (channels,):
        raise ShapeError(f"{op}: scale {tuple(scale.shape)} and zero_point "
                         f"{tuple(zero_point.shape)} must both have shape ({channels},), the "
                         f"size of input {tuple(input.shape)} along axis {axis}")
    if scale.requires_grad or zero_point.requires_grad:
        raise OpError(f"{op}: not differentiable with respect to scale or zero_point; they "
                      "cannot have requires_grad=True")
    return apply(FakeQuantizePerChannel, input, scale, zero_point, axis=axis,
                 quant_min=int(quant_min), quant_max=int(quant_max))[0]
