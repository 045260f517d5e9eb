"""Transposed convolutions ``conv_transpose1d/2d/3d``: the input multiplied by the weight into
columns, which ``fold`` sums back into the (larger) output."""

from __future__ import annotations

from math import prod
from typing import Any

from ember.errors import ArgumentError, ShapeError
from ember.ops.channels_last_view import pixels_first
from ember.ops.conv_args import (
    NUMBA_FLOATS,
    add_bias,
    channels_last_rows,
    check_bias,
    check_operands,
    int_sizes,
)
from ember.ops.convert import HALF, lower_under_autocast
from ember.ops.im2col import batched, fold_nd
from ember.tensor import Tensor

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

# an NCHW transposed convolution with this many output channels or more, over this many input
# pixels or fewer, folds channels-last rows. k4 s2, forward+backward, 1 thread: 32x32->3 at
# 32x32 24 -> 28 ms; 2 threads: 32x64->32 at 16x16 52 -> 64 ms, 16x64->32 at 28x28 53 -> 106
# (its backward's unfold reads the NCHW gradient across channels, far apart in a large plane)
_ROWS_FOLD_CHANNELS = 16
_ROWS_FOLD_PIXELS = 64


@lower_under_autocast  # (PyTorch's conv_transpose*d: one low-precision kernel)
def _conv_transpose(op: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: Any, padding: Any, output_padding: Any, groups: int,
                    dilation: Any) -> Tensor:
    if input.dtype in HALF and weight.dtype is input.dtype and \
            (bias is None or bias.dtype is input.dtype):
        # as PyTorch: products and their overlapping sums in float32, rounded once at the end
        # (the columns and the fold's sums were each rounded to the half dtype: 4x the error)
        return _conv_transpose(op, nd, input.float(), weight.float(),
                               None if bias is None else bias.float(), stride, padding,
                               output_padding, groups, dilation).to(input.dtype)
    x, added = batched(input, nd, op)
    check_operands(op, nd, x, weight, bias, groups)
    n, cin = x.shape[:2]
    kernel = tuple(weight.shape[2:])
    if weight.shape[0] != cin:
        raise ShapeError(f"{op}: input has {cin} channels but weight expects "
                         f"{weight.shape[0]} (weight shape {tuple(weight.shape)}). Hint: a "
                         f"transposed convolution's weight is (in_channels, out_channels / "
                         f"groups, *kernel)")
    if cin % groups:
        raise ShapeError(f"{op}: {cin} input channels are not divisible by groups={groups}")
    cout = weight.shape[1] * groups
    check_bias(op, bias, cout)
    stride = int_sizes(op, nd, stride, "stride", 1)
    dilation = int_sizes(op, nd, dilation, "dilation", 1)
    pad = int_sizes(op, nd, padding, "padding", 0)
    extra = int_sizes(op, nd, output_padding, "output_padding", 0)
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation, strict=True)):
        raise ArgumentError(f"{op}: output_padding {extra} must be smaller than either stride "
                            f"{stride} or dilation {dilation}")
    spatial = tuple(x.shape[2:])
    size = tuple((s - 1) * st - 2 * p + d * (k - 1) + e + 1 for s, st, p, d, k, e in
                 zip(spatial, stride, pad, dilation, kernel, extra, strict=True))
    if min(size, default=1) <= 0:
        raise ShapeError(f"{op}: input of spatial size {spatial} gives an output of size "
                         f"{size}; reduce padding {pad}")
    length = prod(spatial)
    layout = "ncl"
    channels_last = any(pixels_first(t, (4, 5)) is not None for t in (x, weight))
    if groups == 1 and (channels_last or (nd == 2 and x._data.dtype in NUMBA_FLOATS and
                                          cout >= _ROWS_FOLD_CHANNELS and
                                          length <= _ROWS_FOLD_PIXELS)):
        # channels-last rows give (N, L, ∏kernel·C_out) columns, which fold to a
        # channels-last result, as PyTorch's for a channels-last input or weight (with no
        # copy of a channels-last input). A small 2-D float NCHW input goes this way too (its
        # rows and its result copied: NCHW out, as PyTorch's): one GEMM of all the rows and
        # numba's one-pass fold, where the NCHW columns' fold is a strided NumPy add per
        # kernel offset over rows of a few elements
        layout = "nlc"
        w = weight.permute((0, *range(2, nd + 2), 1)).reshape((cin, prod(kernel) * cout))
        cols = (channels_last_rows(x) @ w).reshape((n, length, prod(kernel) * cout))
    elif groups == 1:
        cols = weight.reshape((cin, cout * prod(kernel))).transpose(0, 1) @ \
            x.reshape((n, cin, length))
    else:
        w = weight.reshape((groups, cin // groups, cout // groups * prod(kernel))).transpose(1, 2)
        cols = w @ x.reshape((n, groups, cin // groups, length))
    if layout == "ncl":
        cols = cols.reshape((n, cout * prod(kernel), length))
    # output_padding extends the high side: the last windows stop short of the edge there
    pads = tuple((p, p - e) for p, e in zip(pad, extra, strict=True))
    out = fold_nd(cols, size, kernel_size=kernel, dilation=dilation, padding=pads,
                  stride=stride, layout=layout)
    if layout == "nlc" and not channels_last:
        out = out.contiguous()
    out = add_bias(out, bias, nd)
    return out.reshape(out.shape[1:]) if added else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution of a (N, C_in, L) input with a (C_in, C_out / groups, k)
    weight (the gradient of conv1d with respect to its input)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution ("deconvolution"), as ``torch.nn.functional``'s.

    ``weight`` is (C_in, C_out / groups, kh, kw); the output size per dimension is
    ``(in - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1``.

    Example:
        >>> F.conv_transpose2d(ember.ones(1, 4, 3, 3), ember.ones(4, 2, 3, 3), stride=2).shape
        ember.Size([1, 2, 7, 7])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """3-D transposed convolution of a (N, C_in, D, H, W) input."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
