"""Learnable fake quantization (LSQ, Esser et al. 2020): PyTorch's
``_fake_quantize_learnable_per_tensor_affine`` and ``_fake_quantize_learnable_per_channel_affine``,
whose float ``scale`` and ``zero_point`` take gradients too.

The forward is :func:`~ember.ops.fake_quantize.fake_quantize_per_tensor_affine`'s (per channel
``fake_quantize_per_channel_affine``'s) with the zero point rounded half to even and clamped to
``[quant_min, quant_max]``. The gradients are PyTorch's estimators, with the zero point rounded
as its backward kernels do (``zero_point + 0.5`` clamped, then truncated: ``z``; per channel
as the forward), ``q = nearbyint(x * (1 / scale) + z)`` per tensor and per channel, with the
multiply-add rounded once to float32 as PyTorch's fused kernels do (so ``scale``'s gradient
agrees at exact ties ``x / scale = k + 0.5``), and ``grad_factor`` scaling the parameters'
gradients: ``x`` gets the output gradient where ``quant_min <= q <= quant_max``; ``scale``
gets ``quant_min - z`` below, ``quant_max - z`` above and ``(fake_quant(x) - x) / scale``
between, ``zero_point`` ``-scale`` outside and 0 between, each times the output gradient,
summed over the elements (per channel, over all but ``axis``). The forward-mode rule is the
same linear map.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import DTypeError, ShapeError
from ember.ops.fake_quantize import _check_common, fake_quantize_arrays
from ember.ops.primitive import Primitive, apply, primitive
from ember.tensor import Tensor

__all__ = ["_fake_quantize_learnable_per_tensor_affine",
           "_fake_quantize_learnable_per_channel_affine"]


def _shaped(a: Any, ndim: int, axis: int | None) -> Any:
    """A per-tensor parameter as a scalar, a per-channel one broadcasting along ``axis``."""
    if axis is None:
        return a.reshape(())
    shape = [1] * ndim
    shape[axis] = -1
    return a.reshape(shape)


@primitive
class FakeQuantizeLearnable(Primitive):
    """Inputs ``(x, scale, zero_point)``; ``axis`` None per tensor."""

    name = "_fake_quantize_learnable_affine"

    def infer(self, a, scale, zero_point, **params):
        return a

    def forward(self, xp, a, scale, zero_point, *, axis, quant_min, quant_max, grad_factor):
        z = xp.clip(xp.rint(zero_point.astype(np.float32)), quant_min, quant_max)
        return fake_quantize_arrays(xp, a, _shaped(scale, a.ndim, axis),
                                    _shaped(z.astype(np.int64), a.ndim, axis), quant_min,
                                    quant_max, per_channel=axis is not None)[0]

    def _partials(self, ctx: Any) -> tuple[Tensor, Tensor, Tensor]:
        return apply(FakeQuantizeLearnablePartials, *ctx.inputs, **ctx.params)

    def vjp(self, ctx, g):
        a, scale, zero_point = ctx.inputs
        axis, factor = ctx.params["axis"], ctx.params["grad_factor"]
        passes, d_scale, d_zero = self._partials(ctx)
        dims = [d for d in range(a.ndim) if d != axis]

        def reduced(partial: Tensor, like: Tensor) -> Tensor:
            total = (g * partial).sum(dims) if dims else g * partial
            return (total * factor).reshape(like.shape).to(like.dtype)

        return g * passes, reduced(d_scale, scale), reduced(d_zero, zero_point)

    def jvp(self, ctx, da, d_scale, d_zero):
        a = ctx.inputs[0]
        axis, factor = ctx.params["axis"], ctx.params["grad_factor"]
        passes, p_scale, p_zero = self._partials(ctx)

        def spread(t: Tensor) -> Tensor:  # (a parameter's tangent along the elements)
            return t.reshape([-1 if d == axis else 1 for d in range(a.ndim)] if axis is not None
                             else [1] * a.ndim) * factor

        return da * passes + p_scale * spread(d_scale) + p_zero * spread(d_zero)


@primitive
class FakeQuantizeLearnablePartials(Primitive):
    """Per element: whether ``x`` passes, and the scale's and zero point's estimators."""

    name = "_fake_quantize_learnable_partials"
    nout = 3
    differentiable = False

    def infer(self, a, scale, zero_point, **params):
        return a, a, a

    def forward(self, xp, a, scale, zero_point, *, axis, quant_min, quant_max, grad_factor):
        s = _shaped(scale.astype(np.float32), a.ndim, axis)
        z = zero_point.astype(np.float32)
        z = xp.trunc(xp.clip(z + np.float32(0.5), quant_min, quant_max)) if axis is None else \
            xp.clip(xp.rint(z), quant_min, quant_max)
        z = _shaped(z, a.ndim, axis)
        inv = np.float32(1) / s
        # PyTorch's kernels round x * inv_scale + z once (a fused multiply-add), then nearbyint
        exact = a.astype(np.float64) * inv.astype(np.float64) + z
        q = xp.rint(exact if a.dtype == np.float64 else exact.astype(np.float32))
        passes = (q >= quant_min) & (q <= quant_max)
        fake = (xp.clip(q, quant_min, quant_max) - z) * s
        d_scale = xp.where(q < quant_min, quant_min - z,
                           xp.where(q > quant_max, quant_max - z, (fake - a) / s))
        d_zero = xp.where(passes, 0, -s)
        shape = a.shape
        return tuple(xp.broadcast_to(p, shape).astype(a.dtype) for p in (passes, d_scale, d_zero))


def _check_params(op: str, input: Tensor, scale: Tensor, zero_point: Tensor,
                  channels: int | None) -> None:
    for what, value in (("scale", scale), ("zero_point", zero_point)):
        if not isinstance(value, Tensor) or not value.is_floating_point():
            shown = value.dtype.name if isinstance(value, Tensor) else type(value).__name__
            raise DTypeError(f"{op}: {what} must be a floating tensor (learnable), got {shown}")
        shape = (1,) if channels is None else (channels,)
        if value.numel() != shape[0] or (channels is not None and tuple(value.shape) != shape):
            raise ShapeError(f"{op}: {what} must have shape {shape}"
                             f"{'' if channels is None else ' (the size of input along axis)'}"
                             f", got {tuple(value.shape)}")


def _fake_quantize_learnable_per_tensor_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                               quant_min: int, quant_max: int,
                                               grad_factor: float = 1.0) -> Tensor:
    """Fake quantization whose one-element float ``scale`` and ``zero_point`` learn (LSQ).

    Example:
        >>> s = ember.tensor([0.5], requires_grad=True)
        >>> z = ember.tensor([0.0], requires_grad=True)
        >>> x = ember.tensor([0.3, 0.9, 200.0])
        >>> y = ember._fake_quantize_learnable_per_tensor_affine(x, s, z, 0, 255)
        >>> y
        tensor([  0.5000,   1.0000, 127.5000],
               grad_fn=<FakeQuantizeLearnableAffineBackward0>)
        >>> y.sum().backward(); s.grad
        tensor([255.6000])
    """
    op = "_fake_quantize_learnable_per_tensor_affine"
    _check_common(op, input, quant_min, quant_max)
    _check_params(op, input, scale, zero_point, None)
    return apply(FakeQuantizeLearnable, input, scale, zero_point, axis=None,
                 quant_min=int(quant_min), quant_max=int(quant_max),
                 grad_factor=float(grad_factor))


def _fake_quantize_learnable_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                                axis: int, quant_min: int, quant_max: int,
                                                grad_factor: float = 1.0) -> Tensor:
    """Fake quantization along ``axis`` whose float ``scale[c]`` and ``zero_point[c]`` learn.

    Example:
        >>> x = ember.tensor([[0.3, 0.3], [9.0, 9.0]])
        >>> s, z = ember.tensor([1.0, 0.5]), ember.tensor([0.0, 0.0])
        >>> ember._fake_quantize_learnable_per_channel_affine(x, s, z, 1, 0, 15)
        tensor([[0.0000, 0.5000],
                [9.0000, 7.5000]])
    """
    op = "_fake_quantize_learnable_per_channel_affine"
    _check_common(op, input, quant_min, quant_max)
    if not 0 <= axis < input.ndim:  # (PyTorch takes no negative axis either)
        raise IndexError(f"{op}: axis {axis} is out of range for a {input.ndim}-D input "
                         f"(expected in [0, {input.ndim - 1}])")
    _check_params(op, input, scale, zero_point, input.shape[axis])
    return apply(FakeQuantizeLearnable, input, scale, zero_point, axis=int(axis),
                 quant_min=int(quant_min), quant_max=int(quant_max),
                 grad_factor=float(grad_factor))

