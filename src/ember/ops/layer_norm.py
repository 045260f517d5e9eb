"""Layer norm as one primitive with its affine part, and its backward as another.

``layer_norm(x, weight, bias)`` normalises over the trailing dimensions that ``weight`` spans
and returns ``(out, mean, rstd)``, PyTorch's ``native_layer_norm``; its backward,
``layer_norm_grad``, gives the input's, weight's and bias's gradients from the input and the
statistics. In numba (:mod:`ember.ops.rows_numba`) each is one pass per row, where the
composite ``standardize``, ``mul``, ``add`` and its backward make about ten passes over the
activation. The rules of both are written in Ember ops, so gradients of every order follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.autograd.graph import name_node
from ember.backend import gemm
from ember.errors import DTypeError, ShapeError
from ember.ops import rows_kernel
from ember.ops.broadcast import sum_to
from ember.ops.convert import contiguous
from ember.ops.creation import zeros_like
from ember.ops.normalization import (
    _affine,
    checked_normalized_shape,
    half_with_float_params,
)
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.standardize import StandardizeGrad, _standardize
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__ = ["layer_norm"]


def _trailing(weight: Any) -> tuple[int, ...]:
    """The normalised dimensions: the trailing ones the weight spans."""
    return tuple(range(-len(weight.shape), 0))


def _vector(a: Any) -> Any:
    """``a`` flattened, C-contiguous and writable, as the numba kernels take it."""
    flat = np.ascontiguousarray(a).reshape(-1)
    return flat if flat.flags.writeable else flat.copy()


def _check(op: str, x: Any, *vectors: Any) -> None:
    """The weight (and bias) span the trailing dims of ``x``, all of one dtype."""
    shape = tuple(vectors[0].shape)
    if any(tuple(v.shape) != shape for v in vectors) or not shape or \
            tuple(x.shape[len(x.shape) - len(shape):]) != shape:
        raise ShapeError(f"{op}: input {tuple(x.shape)} needs weight and bias of its trailing "
                         f"shape, got {', '.join(str(tuple(v.shape)) for v in vectors)}")
    if any(v.dtype is not x.dtype for v in vectors):
        raise DTypeError(f"{op}: input {x.dtype.name} and weight/bias "
                         f"{', '.join(v.dtype.name for v in vectors)} must share one dtype")


def check_gradient_dtypes(op: str, g: Any, x: Any, mean: Any, rstd: Any) -> None:
    """A norm's gradient primitive takes the output gradient and statistics in the input's
    dtype."""
    if any(t.dtype is not x.dtype for t in (g, mean, rstd)):
        raise DTypeError(f"{op}: the gradient ({g.dtype.name}), input ({x.dtype.name}), mean "
                         f"({mean.dtype.name}) and rstd ({rstd.dtype.name}) differ in dtype")


@primitive
class LayerNorm(Primitive):
    """``(x - mean)·rstd·weight + bias`` over the trailing dims ``weight`` spans, ``rstd =
    1/sqrt(var + eps)`` (biased variance), with ``mean`` and ``rstd`` (keepdim) as outputs.
    Its backward reads the input and the statistics (not the normalised values)."""

    name = "layer_norm"
    backward_name = "NativeLayerNormBackward0"  # PyTorch's
    nout = 3
    save_outputs = (1, 2)  # the statistics; the output itself is not read
    allocates = True  # (the output and the statistics are new arrays on every path)

    @in_float32
    def forward(self, xp, x, weight, bias, *, eps):
        dims = _trailing(weight)
        kernels = rows_kernel.kernels(xp, dims, x)
        stat = x.shape[:x.ndim - len(dims)] + (1,) * len(dims)
        if kernels is not None and weight.shape == bias.shape == x.shape[x.ndim - len(dims):]:
            out, mean, rstd = xp.empty_like(x), xp.empty(stat, x.dtype), xp.empty(stat, x.dtype)
            rows_kernel.over_rows(kernels.layer_norm_rows, len(dims), [x, out, mean, rstd],
                                  _vector(weight), _vector(bias), float(eps))
            return out, mean, rstd
        mean = x.mean(axis=dims, keepdims=True)
        out = x - mean
        rstd = 1 / xp.sqrt(xp.square(out).mean(axis=dims, keepdims=True) + eps)
        out *= rstd
        out *= weight
        out += bias
        return out, mean, rstd

    def infer(self, x, weight, bias, *, eps):
        _check("layer_norm", x, weight, bias)
        k = len(weight.shape)
        stat = TensorSpec(tuple(x.shape[:len(x.shape) - k]) + (1,) * k, x.dtype)
        return x, stat, stat

    def reads(self, ctx, i):
        return i != 2  # not the bias

    def vjp(self, ctx, g, g_mean=None, g_rstd=None):
        x, weight, _ = ctx.inputs
        mean, rstd = ctx.output(1), ctx.output(2)
        n = weight.numel()
        gx = g_weight = g_bias = None
        if g is not None:
            gx, g_weight, g_bias = apply(LayerNormGrad, g, x, mean, rstd, weight)
        if g_mean is not None:  # mean = Σx / n
            term = (g_mean / n).expand(tuple(x.shape))
            gx = term if gx is None else gx + term
        if g_rstd is not None:  # rstd = (Σ(x - mean)² / n + eps)^-½
            term = (x - mean) * (g_rstd * rstd * rstd * rstd * (-1 / n))
            gx = term if gx is None else gx + term
        return gx, g_weight, g_bias

    def jvp(self, ctx, dx, dweight, dbias):
        x, weight, _ = ctx.inputs
        mean, rstd = ctx.output(1), ctx.output(2)
        dims = _trailing(weight)
        xhat = (x - mean) * rstd
        dxhat = apply(StandardizeGrad, dx, xhat, rstd, dims=dims)
        d_rstd = -rstd * rstd * (dx * xhat).mean(dims, keepdim=True)
        return dxhat * weight + xhat * dweight + dbias, dx.mean(dims, keepdim=True), d_rstd


@primitive
class LayerNormGrad(Primitive):
    """Layer norm's backward: for the output gradient ``g``, the input ``x``, its ``mean`` and
    ``rstd`` and the ``weight``, the input gradient ``rstd·(h - mean(h) - x̂·mean(h·x̂))`` (``h =
    g·weight``, ``x̂ = (x - mean)·rstd``), the weight's ``Σ g·x̂`` and the bias's ``Σ g`` (over
    the leading dims). One numba pass per row, each core adding its rows' sums."""

    name = "layer_norm_grad"
    nout = 3
    allocates = True  # (the gradients are new arrays on every path; the sums copy)

    @in_float32
    def forward(self, xp, g, x, mean, rstd, weight):
        dims, lead = _trailing(weight), tuple(range(x.ndim - weight.ndim))  # (summed over)
        kernels = rows_kernel.kernels(xp, dims, g, x)
        stat = x.shape[:len(lead)] + (1,) * len(dims)  # (other shapes: NumPy's error)
        if kernels is not None and weight.shape == x.shape[len(lead):] and \
                all(s.shape == stat and s.flags.c_contiguous and s.flags.writeable
                    for s in (mean, rstd)):
            dx = xp.empty_like(g)
            g_weight, g_bias = rows_kernel.summing_over_rows(
                kernels.layer_norm_grad_rows, len(dims), [g, x, mean, rstd, dx], _vector(weight))
            return dx, *(s.astype(g.dtype).reshape(weight.shape) for s in (g_weight, g_bias))
        xhat = (x - mean) * rstd
        h = g * weight
        dx = h - h.mean(axis=dims, keepdims=True)
        dx -= xhat * (h * xhat).mean(axis=dims, keepdims=True)
        dx *= rstd
        return dx, *(gemm.sum_axes(xp, t, lead).reshape(weight.shape) for t in (g * xhat, g))

    def infer(self, g, x, mean, rstd, weight):
        _check("layer_norm_grad", x, weight)
        k = len(weight.shape)
        stat = tuple(x.shape[:len(x.shape) - k]) + (1,) * k
        if g.shape != x.shape or mean.shape != stat or rstd.shape != stat:
            raise ShapeError(f"layer_norm_grad: the gradient {g.shape}, input {x.shape}, mean "
                             f"{mean.shape} and rstd {rstd.shape} do not match (statistics: "
                             f"{stat})")
        check_gradient_dtypes("layer_norm_grad", g, x, mean, rstd)
        return x, weight, weight

    def _parts(self, ctx):
        """The centred input, ``x̂``, ``h = g·weight``, ``mean(h·x̂)`` and ``rstd·dx``'s factor
        ``h - mean(h) - x̂·mean(h·x̂)``."""
        g, x, mean, rstd, weight = ctx.inputs
        dims = _trailing(weight)
        centred = x - mean
        xhat, h = centred * rstd, g * weight
        mean_hx = (h * xhat).mean(dims, keepdim=True)
        return centred, xhat, h, mean_hx, h - h.mean(dims, keepdim=True) - xhat * mean_hx

    def vjp(self, ctx, u, u_weight=None, u_bias=None):
        g, x, mean, rstd, weight = ctx.inputs
        dims = _trailing(weight)
        centred, xhat, h, mean_hx, inner = self._parts(ctx)
        gg = g_xhat = g_rstd = g_weight = None
        if u is not None:  # through dx = standardize_grad(h, x̂, rstd)
            g_h = apply(StandardizeGrad, u, xhat, rstd, dims=dims)
            gg, g_weight = g_h * weight, sum_to(g_h * g, tuple(weight.shape))
            g_xhat = -rstd * (u * mean_hx + h * (u * xhat).mean(dims, keepdim=True))
            g_rstd = (u * inner).sum(dims, keepdim=True)
        if u_weight is not None:  # Σ g·x̂
            gg = u_weight * xhat if gg is None else gg + u_weight * xhat
            g_xhat = g * u_weight if g_xhat is None else g_xhat + g * u_weight
        if u_bias is not None:  # Σ g
            part = u_bias.expand(tuple(g.shape))
            gg = part if gg is None else gg + part
        gx = g_mean = None
        if g_xhat is not None:  # x̂ = (x - mean)·rstd
            gx = g_xhat * rstd
            g_mean = -(g_xhat.sum(dims, keepdim=True) * rstd)
            part = (g_xhat * centred).sum(dims, keepdim=True)
            g_rstd = part if g_rstd is None else g_rstd + part
        return gg, gx, g_mean, g_rstd, g_weight

    def jvp(self, ctx, dg, dx, dmean, drstd, dweight):
        g, x, mean, rstd, weight = ctx.inputs
        dims = _trailing(weight)
        centred, xhat, h, mean_hx, inner = self._parts(ctx)
        dxhat = (dx - dmean) * rstd + centred * drstd
        d_dx = apply(StandardizeGrad, dg * weight + g * dweight, xhat, rstd, dims=dims) + \
            drstd * inner - rstd * (dxhat * mean_hx + xhat * (h * dxhat).mean(dims, keepdim=True))
        return d_dx, sum_to(dg * xhat + g * dxhat, tuple(weight.shape)), \
            sum_to(dg, tuple(weight.shape))


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalises over the last ``len(normalized_shape)`` dims, then scales and shifts.

    Example:
        >>> F.layer_norm(ember.tensor([[1.0, 2.0, 3.0]]), (3,))
        tensor([[-1.2247,  0.0000,  1.2247]])
    """
    if type(input) in TENSOR_LIKE:
        return handle(layer_norm, (input, normalized_shape, weight, bias, eps), {})
    shape = checked_normalized_shape("layer_norm", input, normalized_shape)
    input = contiguous(input)  # (as PyTorch's native_layer_norm: a C-ordered result)
    if half_with_float_params(input, weight, bias):
        return layer_norm(input.float(), shape, weight, bias, eps).to(input.dtype)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise ShapeError(f"layer_norm: {name} has shape {tuple(t.shape)} but "
                             f"normalized_shape is {shape}")
    if weight is not None and weight.dtype is input.dtype and \
            (bias is None or bias.dtype is input.dtype):  # one fused op
        bias = zeros_like(weight) if bias is None else bias  # (LayerNorm(bias=False))
        return apply(LayerNorm, input, weight, bias, eps=float(eps))[0]
    y, _, _ = _standardize(input, tuple(range(-len(shape), 0)), eps)
    return name_node(_affine(y, weight, bias), "NativeLayerNormBackward0")
