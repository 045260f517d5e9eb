"""A depthwise 2-D convolution (``groups`` = input = output channels, as MobileNet's,
EfficientNet's and ConvNeXt's): each channel convolved with its own kh×kw kernel.

As a grouped convolution it is im2col of every channel and one tiny GEMM per sample and
channel, forward and backward (7× PyTorch's time at 32×16×16×16). Here it is three primitives
of kh·kw multiply-adds per element: the output, the input gradient and the weight gradient,
each one pass of numba's loops over channels-last arrays (:mod:`ember.ops.depthwise_numba`),
or, without numba, a NumPy loop over the taps. Each is bilinear, so the three are each
other's rules, and gradients of every order follow. An optional bias is the output's third
input, added to each output as the loop writes it (no pass of its own); its gradient is the
output gradient's column sum, as an add's.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.errors import DTypeError, ShapeError
from ember.ops.broadcast import sum_to
from ember.ops.conv_args import conv_saved
from ember.ops.im2col import (
    Pads,
    channels_last_rows,
    empty_channels_last,
    numba_geometry,
    window_counts,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.depthwise_numba")


def _kernels(xp: Any, *arrays: Any) -> Any:
    """numba's depthwise module where its loops take ``arrays`` (NumPy float32/float64 of
    one dtype), else None."""
    if xp is not np or not compiled.numba_enabled() or arrays[0].dtype not in (
            np.float32, np.float64) or any(a.dtype != arrays[0].dtype for a in arrays):
        return None
    return compiled.load(_KERNELS)


def _channels_last(kernels: Any, x: Any) -> Any:
    """The (B, H, W, C) C-contiguous view of a channels-last (B, C, H, W) ``x``, or such a
    copy of any other."""
    if channels_last_rows(np, x) is not None:
        return x.transpose(0, 2, 3, 1)
    out = np.empty((x.shape[0], *x.shape[2:], x.shape[1]), x.dtype)
    kernels.to_channels_last(x, out)
    return out


def _taps(w: Any) -> Any:
    """A (C, 1, kh, kw) weight as numba's (kh, kw, C): always a new, writable array (the
    loops are compiled for one; a 1x1 kernel's transpose is already C-contiguous)."""
    return np.array(w[:, 0].transpose(1, 2, 0), order="C")


def _numba_pass(kernels: Any, loop: str, a: Any, w: Any, shape: tuple, geometry: tuple,
                *bias: Any) -> Any:
    """A channels-last array of ``shape`` from the numba ``loop`` (``"output"``, which also
    takes ``bias``, or ``"input_grad"``) over ``a``'s rows and ``w``'s taps, the rows shared
    among the cores; ``geometry``: (dilation, padding, stride)."""
    dilation, padding, stride = geometry
    out = empty_channels_last(np, shape, a.dtype)
    if loop == "output" and channels_last_rows(np, a) is None:
        loop, rows = "output_planes", a  # (each sample made channels-last in the cache)
    else:
        rows = _channels_last(kernels, a)
    parallel.over_rows(getattr(kernels, loop), (rows, out.transpose(0, 2, 3, 1)), 1, _taps(w),
                       *bias, numba_geometry(w.shape[2:], stride, dilation, padding))
    return out


def _window(padded: Any, p: int, q: int, counts: tuple, dilation: tuple, stride: tuple) -> Any:
    """The elements of a padded (N, C, H, W) array that tap (p, q) reads, (N, C, *counts)."""
    top, left = p * dilation[0], q * dilation[1]
    return padded[:, :, top:top + stride[0] * (counts[0] - 1) + 1:stride[0],
                  left:left + stride[1] * (counts[1] - 1) + 1:stride[1]]


def _padded_shape(shape: tuple, padding: Pads) -> tuple:
    (top, bottom), (left, right) = padding
    return (*shape[:2], shape[2] + top + bottom, shape[3] + left + right)


def _padded(xp: Any, x: Any, padding: Pads) -> Any:
    """``x`` (N, C, H, W) in zeros of ``padding``."""
    (top, _), (left, _) = padding
    out = xp.zeros(_padded_shape(x.shape, padding), x.dtype)
    out[:, :, top:top + x.shape[2], left:left + x.shape[3]] = x
    return out


@primitive
class DepthwiseConv(Primitive):
    """(N, C, H, W) with a (C, 1, kh, kw) weight and an optional (C,) bias gives
    (N, C, *counts): channel c of the input convolved with kernel c, plus bias c. The result
    is channels-last, as ``conv``'s."""

    name = "depthwise_conv2d"
    backward_name = "ConvolutionBackward0"
    saved_as = conv_saved(0)  # (groups: the input's channels)
    allocates = True

    def forward(self, xp, x, w, *b, dilation, padding, stride):
        counts = window_counts(x.shape[2:], w.shape[2:], dilation, padding, stride, self.name)
        shape = x.shape[:2] + counts
        kernels = _kernels(xp, x, w, *b)
        if kernels is not None:  # (no bias: an empty one)
            bias = np.array(b[0] if b else w[:0, 0, 0, 0], order="C")
            return _numba_pass(kernels, "output", x, w, shape, (dilation, padding, stride),
                               bias)
        padded, out = _padded(xp, x, padding), xp.zeros(shape, x.dtype)
        for p in range(w.shape[2]):
            for q in range(w.shape[3]):
                out += _window(padded, p, q, counts, dilation, stride) * \
                    w[:, 0, p, q][:, None, None]
        if b:
            out += b[0][:, None, None]
        return out

    def infer(self, x, w, *b, dilation, padding, stride):
        if x.dtype is not w.dtype or (b and b[0].dtype is not x.dtype):
            shown = f" and bias is {b[0].dtype.name}" if b else ""
            raise DTypeError(f"{self.name}: input is {x.dtype.name} but weight is "
                             f"{w.dtype.name}{shown}")
        if b and tuple(b[0].shape) != (w.shape[0],):
            raise ShapeError(f"{self.name}: bias of shape {b[0].shape} given for a weight of "
                             f"shape {w.shape}; expected shape ({w.shape[0]},)")
        counts = window_counts(x.shape[2:], w.shape[2:], dilation, padding, stride, self.name)
        return TensorSpec(tuple(x.shape[:2]) + counts, x.dtype)

    def flops(self, x, w, *b, dilation, padding, stride):
        counts = window_counts(x.shape[2:], w.shape[2:], dilation, padding, stride, self.name)
        return 2 * x.shape[0] * x.shape[1] * counts[0] * counts[1] * w.shape[2] * w.shape[3]

    def vjp(self, ctx, g):
        x, w, *b = ctx.inputs
        gx = _input_grad(g, w, tuple(x.shape[2:]), ctx.params) if x.requires_grad else None
        gw = _weight_grad(x, g, tuple(w.shape[2:]), ctx.params) if w.requires_grad else None
        if not b:
            return gx, gw
        gb = sum_to(g, (w.shape[0], 1, 1)).reshape(b[0].shape) if b[0].requires_grad else None
        return gx, gw, gb

    def jvp(self, ctx, dx, dw, *db):
        x, w, *_ = ctx.inputs
        out = apply(DepthwiseConv, dx, w, **ctx.params) + \
            apply(DepthwiseConv, x, dw, **ctx.params)
        return out + db[0].reshape((w.shape[0], 1, 1)) if db else out


def _input_grad(g: Tensor, w: Tensor, size: tuple, params: dict) -> Tensor:
    return apply(DepthwiseInputGrad, g, w, size=size, **params)


def _weight_grad(x: Tensor, g: Tensor, kernel_size: tuple, params: dict) -> Tensor:
    return apply(DepthwiseWeightGrad, x, g, kernel_size=kernel_size, **params)


def _geometry(params: dict) -> dict:
    return {k: params[k] for k in ("dilation", "padding", "stride")}


@primitive
class DepthwiseInputGrad(Primitive):
    """``depthwise_conv2d``'s input gradient: the (N, C, *counts) output gradient and the
    weight give (N, C, *size), channels-last."""

    name = "depthwise_conv2d_input_grad"
    allocates = True

    def forward(self, xp, g, w, *, size, dilation, padding, stride):
        shape = g.shape[:2] + tuple(size)
        kernels = _kernels(xp, g, w)
        if kernels is not None:
            return _numba_pass(kernels, "input_grad", g, w, shape,
                               (dilation, padding, stride))
        padded = xp.zeros(_padded_shape(shape, padding), g.dtype)
        for p in range(w.shape[2]):
            for q in range(w.shape[3]):
                _window(padded, p, q, g.shape[2:], dilation, stride)[...] += \
                    g * w[:, 0, p, q][:, None, None]
        (top, _), (left, _) = padding
        return padded[:, :, top:top + size[0], left:left + size[1]]

    def infer(self, g, w, *, size, dilation, padding, stride):
        return TensorSpec(tuple(g.shape[:2]) + tuple(size), g.dtype)

    def vjp(self, ctx, h):
        g, w = ctx.inputs
        geometry = _geometry(ctx.params)
        gg = apply(DepthwiseConv, h, w, **geometry) if g.requires_grad else None
        gw = _weight_grad(h, g, tuple(w.shape[2:]), geometry) if w.requires_grad else None
        return gg, gw

    def jvp(self, ctx, dg, dw):
        g, w = ctx.inputs
        return apply(DepthwiseInputGrad, dg, w, **ctx.params) + \
            apply(DepthwiseInputGrad, g, dw, **ctx.params)


@primitive
class DepthwiseWeightGrad(Primitive):
    """``depthwise_conv2d``'s weight gradient: the (N, C, H, W) input and the output gradient
    give (C, 1, *kernel_size), each tap's products summed over samples and windows (in
    float64 for float32 with numba)."""

    name = "depthwise_conv2d_weight_grad"
    allocates = True

    def forward(self, xp, x, g, *, kernel_size, dilation, padding, stride):
        kernels = _kernels(xp, x, g)
        if kernels is not None:
            rows = (_channels_last(kernels, x), _channels_last(kernels, g))
            geometry = numba_geometry(kernel_size, stride, dilation, padding)
            blocks = parallel.blocks(x.shape[0], parallel.share_count(x.shape[0], 1))
            sums = [np.zeros((*kernel_size, x.shape[1])) for _ in blocks]
            parallel.run([partial(kernels.weight_grad, *(r[lo:hi] for r in rows), total,
                                  geometry) for (lo, hi), total in zip(blocks, sums)])
            total = sums[0]
            for more in sums[1:]:  # in order: the same bits on every run
                total += more
            return np.ascontiguousarray(total.transpose(2, 0, 1)[:, None], dtype=x.dtype)
        padded = _padded(xp, x, padding)
        out = xp.empty((x.shape[1], 1) + tuple(kernel_size), x.dtype)
        for p in range(kernel_size[0]):
            for q in range(kernel_size[1]):
                out[:, 0, p, q] = xp.einsum(
                    "nchw,nchw->c", g, _window(padded, p, q, g.shape[2:], dilation, stride))
        return out

    def infer(self, x, g, *, kernel_size, dilation, padding, stride):
        return TensorSpec((x.shape[1], 1) + tuple(kernel_size), x.dtype)

    def vjp(self, ctx, k):
        x, g = ctx.inputs
        geometry = _geometry(ctx.params)
        gx = _input_grad(g, k, tuple(x.shape[2:]), geometry) if x.requires_grad else None
        gg = apply(DepthwiseConv, x, k, **geometry) if g.requires_grad else None
        return gx, gg

    def jvp(self, ctx, dx, dg):
        x, g = ctx.inputs
        return apply(DepthwiseWeightGrad, dx, g, **ctx.params) + \
            apply(DepthwiseWeightGrad, x, dg, **ctx.params)


def depthwise_conv2d(x: Tensor, w: Tensor, bias: Tensor | None = None, *,
                     dilation: tuple[int, int], padding: Pads,
                     stride: tuple[int, int]) -> Tensor:
    """The ``depthwise_conv2d`` primitive on checked, normalised arguments (conv2d calls it
    for ``groups`` equal to the input and output channels)."""
    inputs = (x, w) if bias is None else (x, w, bias)
    return apply(DepthwiseConv, *inputs, dilation=dilation, padding=padding, stride=stride)
