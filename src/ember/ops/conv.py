"""Convolutions as im2col + GEMM: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d``.

An ungrouped convolution is the ``conv`` primitive: the input's windows unfolded into
columns and multiplied by the weight, a chunk of samples per GEMM (a large enough 3×3 stride-1
one by Winograd's F(2×2, 3×3) instead: :mod:`ember.ops.winograd`); its rules are written in
Ember ops (``unfold``, ``matmul``, ``fold`` and ``conv`` itself), so gradients of every order
follow. Grouped convolutions are composites of ``unfold`` and ``matmul`` (a depthwise
2-D one has primitives of its own: :mod:`ember.ops.depthwise_conv`); a transposed convolution
multiplies first and sums the columns back with ``fold`` (:mod:`ember.ops.conv_transpose`).
A 1×1 stride-1 ``conv`` of an NCHW input is a batch of GEMMs ``W @ x[n]`` on the input as it
lies (no copy), or, for few pixels by a large weight, one GEMM of the input copied
channel-major; NCHW out either way, as PyTorch's. Of a channels-last input, one GEMM of its
pixel rows.
"""

from __future__ import annotations

from functools import partial
from math import prod
from typing import Any

import numpy as np

from ember.backend import gemm, parallel
from ember.errors import DTypeError, ShapeError
from ember.ops import winograd
from ember.ops.broadcast import sum_to
from ember.ops.complex_parts import Holomorphic
from ember.ops.conv_args import (
    NUMBA_FLOATS,
    add_bias,
    channels_last_rows,
    check_bias,
    check_operands,
    conv_padding,
    conv_saved,
    int_sizes,
)
from ember.ops.conv_pointwise import pointwise, pointwise_conv, pointwise_weight_grad
from ember.ops.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from ember.ops.depthwise_conv import depthwise_conv2d
from ember.ops.im2col import (
    Pads,
    Unfold,
    batched,
    fold_nd,
    numba_columns,
    unfold_nd,
    window_counts,
    window_positions,
)
from ember.ops.indexing import FULL, Slice
from ember.ops.linalg import gemm_dtype
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


_COLUMN_CHUNK_BYTES = 24 << 20  # im2col columns per GEMM, one GEMM at a time on all threads
_PIECE_BYTES = 4 << 20  # im2col columns per GEMM when the GEMMs run side by side
_SHARED_WEIGHT_BYTES = 4 << 20  # a larger GEMM operand: one GEMM at a time
_BAND_BYTES = 1 << 20  # a sample's columns above this are made a band of its rows at a time
_FOLD_GRAD_ELEMENTS = 1 << 15  # a stride-1 input gradient as GEMM + fold from this size on


def _over_chunks(xp: Any, x: Any, kernel: tuple, dilation: tuple, padding: Pads,
                 stride: tuple, compute: Any, weight_bytes: int, visit: Any) -> None:
    """``visit(share, first, last, cols)`` for chunks of ``x``, in order within each share:
    ``cols`` the im2col rows ``first:last`` of the whole batch's (N·L, ∏kernel·Cin) in the
    GEMM's dtype (∏kernel times the input, the largest temporary of a CNN, is never made
    whole). Shares are numbered in batch order (a visit summing per share, then the shares in
    order, is deterministic).

    With a small other GEMM operand (``weight_bytes``, a convolution's weight) and a batch of
    small samples, each core takes a contiguous share of the samples in chunks of ~4 MiB,
    each GEMM on one BLAS thread: still in cache when the GEMM reads them, and no BLAS threads
    to synchronise. Measured on 2 cores: a 32→64 channel 3×3 convolution of 128 14×14 images
    8.7 → 6.1 ms; of 32 32×32 images at 64 channels 21 → 15 ms. A sample whose columns pass
    1 MiB is cut into bands of its first spatial dimension, which stay in the core's L2 for
    the GEMM (64 channels at 32×32, 2.25 MiB a sample: the weight gradient 11.5 → 10.2 ms,
    `resnet18`'s compiled step 441 → 435 ms).
    Otherwise (a large weight, which every thread would pack whole; few or large samples) one
    chunk of ~24 MiB at a time runs on all BLAS threads."""
    n, k = x.shape[0], x.shape[1] * prod(kernel)
    counts = window_positions(x.shape[2:], kernel, dilation, padding, stride)
    length = prod(counts)
    itemsize = x.dtype.itemsize if compute is None else compute.np.itemsize
    sample = length * k * itemsize
    workers = parallel.workers() if xp is np else 1

    def chunks(share: int, lo: int, hi: int, budget: int, bands: int = 1) -> None:
        per = 1 if bands > 1 else max(1, budget // max(sample, 1))
        height = -(-counts[0] // bands)  # output rows of the first spatial dimension a chunk
        for start in range(lo, hi, per):
            stop = min(start + per, hi)
            for top in range(0, counts[0], height):
                bottom = min(top + height, counts[0])
                part, pads = (x[start:stop], padding) if bands == 1 else \
                    _band(x[start:stop], top, bottom, kernel, dilation, padding, stride)
                cols = Unfold.forward(xp, part, kernel_size=kernel, dilation=dilation,
                                      padding=pads, stride=stride, layout="nlc").reshape(-1, k)
                visit(share, start * length + top * length // counts[0],
                      (stop - 1) * length + bottom * length // counts[0],
                      cols if compute is None else cols.astype(compute.np))
                del cols  # before the next chunk's columns

    if workers > 1 and weight_bytes <= _SHARED_WEIGHT_BYTES and sample <= _PIECE_BYTES and \
            n >= 2 * workers:
        bands = min(counts[0], -(-sample // _BAND_BYTES))
        with gemm.one_thread_each():
            parallel.run([partial(chunks, i, lo, hi, _PIECE_BYTES, bands)
                          for i, (lo, hi) in enumerate(parallel.blocks(n, workers))])
        return
    chunks(0, 0, n, -(-n * sample // max(1, -(-n * sample // _COLUMN_CHUNK_BYTES))))


def _band(x: Any, top: int, bottom: int, kernel: tuple, dilation: tuple, padding: Pads,
          stride: tuple) -> tuple[Any, Pads]:
    """The rows of ``x``'s first spatial dimension that output rows ``top:bottom`` read, and
    their padding (what lies outside ``x``)."""
    first = top * stride[0] - padding[0][0]
    last = (bottom - 1) * stride[0] - padding[0][0] + dilation[0] * (kernel[0] - 1)
    lo, hi = (min(max(i, 0), x.shape[2]) for i in (first, last + 1))
    if hi <= lo:  # the band reads only padding
        return x[:, :, :0], ((last + 1 - first, 0), *padding[1:])
    return x[:, :, lo:hi], ((lo - first, last + 1 - hi), *padding[1:])


@primitive
class Conv(Holomorphic, Primitive):
    """An ungrouped convolution: (N, Cin, *spatial) with a (Cout, Cin, *kernel) weight gives
    (N, Cout, *counts). The input's im2col rows (N·L, ∏k·Cin) times the weight as
    (∏k·Cin, Cout) make one GEMM per chunk of samples (:func:`_over_chunks`), not one per
    sample (a batch of small GEMMs runs far below BLAS's rate on deep layers, where L is
    16–64); of the two orientations this is the one OpenBLAS runs fastest. The result is the
    GEMM's (N, *counts, Cout) memory seen as (N, Cout, *counts), channels-last: elementwise ops
    that follow keep that layout. An optional third input, the (Cout,) bias, is added to each
    chunk's rows after its GEMM; its gradient is the output gradient's column sum.

    Only the input and the weight are kept for backward (the columns, ∏k times the input, are
    made again there, as PyTorch's convolution keeps only its input). The weight gradient is
    ``conv_weight_grad``, GEMMs against those columns; the input gradient of a stride-1
    convolution is itself a convolution (of the output gradient with the flipped,
    channel-swapped weight), else a GEMM summed back with ``fold``.
    """

    name = "conv"
    backward_name = "ConvolutionBackward0"  # PyTorch records every convolution as one op
    saved_as = conv_saved(None)
    allocates = True

    def forward(self, xp, x, w, *b, dilation, padding, stride, compute):
        nd = w.ndim - 2
        n, cout, kernel = x.shape[0], w.shape[0], w.shape[2:]
        counts = window_positions(x.shape[2:], kernel, dilation, padding, stride)
        # the bias goes into each chunk's rows right after its GEMM (no pass of its own over
        # the output, no node of its own); with another GEMM dtype, in that dtype before the
        # one cast back, as PyTorch rounds a half convolution's sum once
        bias = None if not b else b[0] if compute is None else b[0].astype(compute.np)
        if 0 in (x.shape[1], cout):  # every output an empty sum, or no outputs (a gradient's)
            out = xp.zeros((n, cout) + counts, x.dtype)
            return out + b[0].reshape((cout,) + (1,) * nd) if b else out
        if pointwise(kernel, padding, stride):
            return pointwise_conv(xp, x, w, bias, compute)
        if winograd.applies(xp, x, w.shape, counts, dilation, stride, compute):
            out = winograd.conv3x3(x, w, counts, (padding[0][0], padding[1][0]), bias)
            if out is not None:
                return out
        length = prod(counts)
        weight = w.transpose(0, *range(2, nd + 2), 1).reshape(cout, -1).T  # rows (*kernel, Cin)
        # one sample (a batch-1 call): its columns at once and one GEMM, without the chunking's
        # machinery (~20 µs of Python, 40 % of a batch-1 first layer's time)
        cols = numba_columns(xp, x, kernel, dilation, padding, stride, counts) \
            if n == 1 and compute is None else None
        if cols is not None:
            out = gemm.matmul(xp, cols.reshape(length, -1), weight)
            if bias is not None:
                out += bias
        else:
            if compute is not None:
                weight = weight.astype(compute.np)
            out = xp.empty((n * length, cout), dtype=weight.dtype)

            def product(share, first, last, cols):
                rows = out[first:last]
                gemm.matmul(xp, cols, weight, out=rows)
                if bias is not None:
                    rows += bias

            _over_chunks(xp, x, kernel, dilation, padding, stride, compute,
                         weight.size * weight.itemsize, product)
        out = out.reshape((n,) + counts + (cout,))
        if compute is not None:
            out = out.astype(x.dtype)
        return out.transpose((0, nd + 1, *range(1, nd + 1)))

    def infer(self, x, w, *b, dilation, padding, stride, compute):
        if x.dtype is not w.dtype or (b and b[0].dtype is not x.dtype):
            shown = f" and bias is {b[0].dtype.name}" if b else ""
            raise DTypeError(f"conv: input is {x.dtype.name} but weight is {w.dtype.name}"
                             f"{shown}")
        if len(x.shape) != len(w.shape) or x.shape[1] != w.shape[1]:
            raise ShapeError(f"conv: input {x.shape} does not match weight {w.shape}: expected "
                             f"(N, {w.shape[1]}, *spatial) with {len(w.shape) - 2} spatial "
                             f"dimensions")
        if b and tuple(b[0].shape) != (w.shape[0],):
            raise ShapeError(f"conv: bias of shape {b[0].shape} given for a weight of shape "
                             f"{w.shape}; expected shape ({w.shape[0]},)")
        counts = window_counts(x.shape[2:], w.shape[2:], dilation, padding, stride, "conv")
        return TensorSpec((x.shape[0], w.shape[0]) + counts, x.dtype)

    def flops(self, x, w, *b, dilation, padding, stride, compute):
        counts = window_positions(x.shape[2:], w.shape[2:], dilation, padding, stride)
        return 2 * x.shape[0] * prod(counts) * prod(w.shape)

    def reads(self, ctx, i):
        # as PyTorch's convolution: the input and the weight are kept whichever gradients are
        # needed (packed, version-checked, refused as inference tensors); the bias's gradient
        # is the output gradient's sum, so the bias is never kept
        return i < 2

    def vjp(self, ctx, g):
        x, w, *b = ctx.inputs
        geometry = _geometry(ctx.params)
        gx = _input_grad(g, w, tuple(x.shape), **geometry) if x.requires_grad else None
        gw = _weight_grad(x, g, tuple(w.shape), **geometry) if w.requires_grad else None
        if not b:
            return gx, gw
        # the column sum of the channels-last gradient's (N·L, Cout) rows, as an add's
        gb = sum_to(g, _per_channel(g.ndim, w.shape[0])).reshape(b[0].shape) \
            if b[0].requires_grad else None
        return gx, gw, gb

    def jvp(self, ctx, dx, dw, *db):
        x, w, *_ = ctx.inputs
        geometry = _geometry(ctx.params)
        out = conv_nd(dx, w, **geometry) + conv_nd(x, dw, **geometry)
        return out + db[0].reshape(_per_channel(out.ndim, w.shape[0])) if db else out


def _per_channel(ndim: int, channels: int) -> tuple[int, ...]:
    """The shape (C, 1, …) that broadcasts a bias over an ``ndim``-D (N, C, *spatial) output."""
    return (channels,) + (1,) * (ndim - 2)


def _geometry(params: dict) -> dict:
    """A conv node's window geometry (its params less the compute dtype)."""
    return {k: params[k] for k in ("dilation", "padding", "stride")}


def conv_nd(x: Tensor, w: Tensor, bias: Tensor | None = None, *, dilation: tuple[int, ...],
            padding: Pads, stride: tuple[int, ...]) -> Tensor:
    """The ``conv`` primitive on normalised arguments (no checks beyond its infer rule)."""
    inputs = (x, w) if bias is None else (x, w, bias)
    return apply(Conv, *inputs, dilation=dilation, padding=padding, stride=stride,
                 compute=gemm_dtype(x))



def _weight_grad(x: Tensor, g: Tensor, shape: tuple[int, ...], **geometry: Any) -> Tensor:
    return apply(ConvWeightGrad, x, g, kernel_size=tuple(shape[2:]), compute=gemm_dtype(x),
                 **geometry)


@primitive
class ConvWeightGrad(Holomorphic, Primitive):
    """``conv``'s weight gradient: the (N, Cin, *spatial) input and the (N, Cout, *counts)
    output gradient give (Cout, Cin, *kernel), the sum over samples and windows of the
    gradient times the window. One GEMM per chunk of samples against that chunk's im2col
    columns, summed: the columns of the whole batch are never alive at once (a large 3×3
    stride-1 one by Winograd instead: :func:`ember.ops.winograd.weight_grad3x3`). It is bilinear,
    so its rules are ``conv`` itself (for the gradient) and conv's input gradient (for the
    input), and every order of derivative follows."""

    name = "conv_weight_grad"
    allocates = True

    def forward(self, xp, x, g, *, kernel_size, dilation, padding, stride, compute):
        cout, cin = g.shape[1], x.shape[1]
        if x.size == 0 or g.size == 0:  # nothing to sum, or no output channels to sum into
            return xp.zeros((cout, cin) + tuple(kernel_size), x.dtype)
        if pointwise(kernel_size, padding, stride):
            return pointwise_weight_grad(xp, x, g, compute)
        if g.dtype == x.dtype and winograd.applies(xp, x, (cout, cin, *kernel_size),
                                                   g.shape[2:], dilation, stride, compute):
            gw = winograd.weight_grad3x3(x, g, (padding[0][0], padding[1][0]))
            if gw is not None:
                return gw
        rows = xp.moveaxis(g, 1, -1)  # (N, *counts, Cout): a free view of a channels-last g
        length = prod(g.shape[2:])
        dtype = g.dtype if compute is None else compute.np
        sums: dict[int, Any] = {}  # per share of the batch (shares may run side by side)

        def product(share, first, last, cols):
            start, stop = first // length, -(-last // length)  # the samples rows first:last span
            chunk = rows[start:stop].reshape(-1, cout)[first - start * length:last - start * length]
            chunk = chunk.astype(dtype, copy=False)
            # (Cout, ∏k·Cin): the permute back to the weight's (Cout, Cin, *kernel) order is
            # then a small transpose per output channel. With fewer columns than channels (a
            # first layer's 9 or 27) OpenBLAS runs the transposed product faster (one thread,
            # 50176 rows, 32 channels: 1.05 → 0.64 ms), and elsewhere at the same rate or slower
            if cols.shape[1] < cout:
                part = gemm.matmul(xp, cols.T, chunk).T
            else:
                part = gemm.matmul(xp, chunk.T, cols)
            if share in sums:
                sums[share] += part
            else:
                sums[share] = part

        _over_chunks(xp, x, kernel_size, dilation, padding, stride, compute,
                     cout * cin * prod(kernel_size) * np.dtype(dtype).itemsize, product)
        total = xp.zeros((cout, cin * prod(kernel_size)), dtype)
        for share in sorted(sums):  # in order, whichever thread finished first
            total += sums[share]
        gw = xp.moveaxis(total.reshape((cout,) + tuple(kernel_size) + (cin,)), -1, 1)
        return xp.ascontiguousarray(gw, dtype=x.dtype)

    def infer(self, x, g, *, kernel_size, dilation, padding, stride, compute):
        return TensorSpec((g.shape[1], x.shape[1]) + tuple(kernel_size), x.dtype)

    def flops(self, x, g, *, kernel_size, dilation, padding, stride, compute):
        return 2 * prod(g.shape) * x.shape[1] * prod(kernel_size)

    def vjp(self, ctx, gw):
        x, g = ctx.inputs
        geometry = _geometry(ctx.params)
        gx = _input_grad(g, gw, tuple(x.shape), **geometry) if x.requires_grad else None
        return gx, conv_nd(x, gw, **geometry) if g.requires_grad else None

    def jvp(self, ctx, dx, dg):
        x, g = ctx.inputs
        return apply(ConvWeightGrad, dx, g, **ctx.params) + \
            apply(ConvWeightGrad, x, dg, **ctx.params)


def _input_grad(g: Tensor, w: Tensor, shape: tuple[int, ...], *, dilation: tuple[int, ...],
                padding: Pads, stride: tuple[int, ...]) -> Tensor:
    nd = len(shape) - 2
    kernel = tuple(w.shape[2:])
    reach = tuple(d * (k - 1) for d, k in zip(dilation, kernel, strict=True))
    flipped_pads = tuple((r - lo, r - hi) for r, (lo, hi) in zip(reach, padding, strict=True))
    # a stride-1 gradient as a convolution makes im2col columns of g (Cout channels), the
    # GEMM-and-fold below columns of the input's Cin: with 4x fewer input channels (a first
    # layer's 1 or 3), 2-D or 3-D, the fold is 4-13x faster (3→64 channels 3×3 of 32 32×32
    # images: 65 → 10 ms); 1-D, Cout < 4·Cin and small gradients (its extra ops' Python)
    # measured faster as the convolution
    few_inputs = nd >= 2 and 4 * shape[1] <= w.shape[0] and g.numel() >= _FOLD_GRAD_ELEMENTS
    if pointwise(kernel, padding, stride):  # Wᵀ @ g: a 1×1 convolution, of the weight's view
        return conv_nd(g, w.transpose(0, 1), dilation=dilation, padding=padding, stride=stride)
    if all(s == 1 for s in stride) and all(lo >= 0 for lo, _ in flipped_pads) and not few_inputs:
        # x[i] feeds out[i + lo - d·j] through w[j]: a convolution of g, padded by the kernel's
        # reach less the forward padding, with the kernel flipped and its channels swapped
        # (copied as (*kernel, Cout, Cin): the GEMM operand conv's forward then reads as is)
        reversed_ = apply(Slice, w, index=(FULL, FULL) + ((None, None, -1),) * nd)  # a view
        flipped = reversed_.permute((*range(2, 2 + nd), 0, 1)).contiguous()  # the one copy
        flipped = flipped.permute((nd + 1, nd, *range(nd)))
        return conv_nd(g, flipped, dilation=dilation, padding=flipped_pads, stride=stride)
    # each row of g's GEMM with the weight is one window's gradient; fold sums them
    rows = channels_last_rows(g) @ w.permute((0, *range(2, 2 + nd), 1)).reshape(
        (w.shape[0], prod(w.shape[1:])))
    cols = rows.reshape((shape[0], prod(g.shape[2:]), rows.shape[1]))
    return fold_nd(cols, shape[2:], kernel_size=kernel, dilation=dilation, padding=padding,
                   stride=stride, layout="nlc")


def _conv(op: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
          padding: Any, dilation: Any, groups: int) -> Tensor:
    x, added = batched(input, nd, op)
    check_operands(op, nd, x, weight, bias, groups)
    n, cin = x._data.shape[:2]
    cout, per_group, kernel = weight._data.shape[0], weight._data.shape[1], weight._data.shape[2:]
    if cin != per_group * groups:
        grouping = f" ({groups} groups of {per_group})" if groups > 1 else ""
        raise ShapeError(f"{op}: input has {cin} channels but weight expects "
                         f"{per_group * groups}{grouping} (weight shape {tuple(weight.shape)})."
                         f" Hint: weight is (out_channels, in_channels / groups, *kernel)")
    if cout % groups:
        raise ShapeError(f"{op}: weight has {cout} output channels, not divisible by groups="
                         f"{groups} (weight shape {tuple(weight.shape)})")
    check_bias(op, bias, cout)
    stride = int_sizes(op, nd, stride, "stride", 1)
    dilation = int_sizes(op, nd, dilation, "dilation", 1)
    pads = conv_padding(op, padding, kernel, dilation, stride)
    counts = window_counts(x._data.shape[2:], kernel, dilation, pads, stride, op)

    length = prod(counts)
    if groups == 1:
        if bias is not None and DISPATCH.casting and bias.dtype is not x.dtype:
            bias = bias.to(x.dtype)  # (autocast then casts all three alike)
        out = conv_nd(x, weight, bias, dilation=dilation, padding=pads, stride=stride)
        bias = None  # added by the convolution
    elif nd == 2 and groups == cin == cout and x.dtype is weight.dtype and \
            x._data.dtype in NUMBA_FLOATS and not DISPATCH.casting:  # (autocast: GEMMs)
        out = depthwise_conv2d(x, weight, bias, dilation=dilation, padding=pads, stride=stride)
        bias = None  # added by the convolution (check_operands: of x's dtype)
    else:
        cols = x.reshape((n, cin, length)) if pointwise(kernel, pads, stride) else \
            unfold_nd(x, kernel_size=kernel, dilation=dilation, padding=pads, stride=stride,
                      op=op)
        out = weight.reshape((groups, cout // groups, cols.shape[1] // groups)) @ \
            cols.reshape((n, groups, cols.shape[1] // groups, cols.shape[2]))
        out = out.reshape((n, cout) + counts)
    out = add_bias(out, bias, nd)
    return out.reshape(out.shape[1:]) if added else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of a (N, C_in, L) or (C_in, L) input with a
    (C_out, C_in / groups, k) weight.

    Example:
        >>> F.conv1d(ember.ones(1, 2, 5), ember.ones(3, 2, 3)).shape
        ember.Size([1, 3, 3])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation), as ``torch.nn.functional.conv2d``.

    ``input`` is (N, C_in, H, W) or (C_in, H, W); ``weight`` (C_out, C_in / groups, kh, kw);
    ``padding`` an int, a pair, ``"valid"`` or ``"same"`` (stride 1 only).

    Example:
        >>> x, w = ember.randn(2, 3, 5, 5), ember.randn(2, 3, 3, 3)
        >>> F.conv2d(x, w, padding=1).shape
        ember.Size([2, 2, 5, 5])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution of a (N, C_in, D, H, W) input with a (C_out, C_in / groups, kd, kh, kw)
    weight."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)
