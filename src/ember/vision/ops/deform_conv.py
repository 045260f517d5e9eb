"""Deformable convolution (Dai et al., 2017; with ``mask``, v2: Zhu et al., 2019) under
torchvision's names: each kernel tap reads the input at its regular place plus a learned
fractional offset (bilinear, zero outside the image), optionally scaled by a learned mask.

Written with Ember ops (gather, elementwise, einsum), so gradients reach the input, the
offsets, the mask, the weight and the bias by autograd.
"""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.errors import ArgumentError, ShapeError
from ember.nn import init
from ember.tensor import Tensor
from ember.vision.ops.roi import _pair

__all__ = ["DeformConv2d", "deform_conv2d"]


def _pairs(op: str, stride: int | tuple[int, int], padding: int | tuple[int, int],
           dilation: int | tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """``stride``, ``padding`` and ``dilation`` as pairs (padding may be 0)."""
    return (_pair(op, stride, "stride"), _pair(op, padding, "padding", 0),
            _pair(op, dilation, "dilation"))


def _sample(values: Tensor, y: Tensor, x: Tensor, height: int, width: int) -> Tensor:
    """Bilinear samples of ``values`` ``(N, G, C, H*W)`` at rows ``y`` and columns ``x``
    ``(N, G, L)``, corners off the image reading zero: ``(N, G, C, L)``. (No separate test for
    samples outside ``(-1, H) x (-1, W)``: their corners are all off the image; at exactly -1
    the coordinate gradient is then the one-sided one from inside, as torchvision's.)"""
    n, g, c, _ = values.shape
    y0, x0 = ember.floor(y).detach(), ember.floor(x).detach()
    ly, lx = y - y0, x - x0
    total = None
    for dy, dx, weight in ((0, 0, (1 - ly) * (1 - lx)), (0, 1, (1 - ly) * lx),
                           (1, 0, ly * (1 - lx)), (1, 1, ly * lx)):
        rows, cols = y0 + dy, x0 + dx
        valid = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
        index = (rows.clamp(0, height - 1) * width + cols.clamp(0, width - 1)).long()
        corner = values.gather(3, index[:, :, None, :].expand(n, g, c, index.shape[-1]))
        term = corner * (weight * valid.to(weight.dtype))[:, :, None, :]
        total = term if total is None else total + term
    return total


def deform_conv2d(input: Tensor, offset: Tensor, weight: Tensor, bias: Tensor | None = None,
                  stride: int | tuple[int, int] = (1, 1),
                  padding: int | tuple[int, int] = (0, 0),
                  dilation: int | tuple[int, int] = (1, 1),
                  mask: Tensor | None = None) -> Tensor:
    """Deformable 2-D convolution: ``(N, C_out, H_out, W_out)``. ``offset`` is
    ``(N, 2 * G * kh * kw, H_out, W_out)``, a (row, column) shift per kernel tap and output
    place for each of ``G`` offset groups of input channels; ``mask``
    ``(N, G * kh * kw, H_out, W_out)`` scales each tap (DCNv2); ``weight`` is
    ``(C_out, C_in / groups, kh, kw)`` as for ``conv2d``.

    Example:
        >>> x = ember.randn(1, 2, 5, 5)
        >>> w = ember.randn(3, 2, 3, 3)
        >>> out = deform_conv2d(x, ember.zeros(1, 18, 3, 3), w)   # zero offsets: a conv2d
        >>> bool(ember.allclose(out, ember.nn.functional.conv2d(x, w), atol=1e-5))
        True
    """
    op = "deform_conv2d"
    if input.ndim != 4 or weight.ndim != 4:
        raise ShapeError(f"{op}: input must be (N, C, H, W) and weight (C_out, C_in / groups, "
                         f"kh, kw), got {tuple(input.shape)} and {tuple(weight.shape)}")
    n, c_in, height, width = input.shape
    c_out, c_group, kh, kw = weight.shape
    if c_group == 0 or c_in % c_group:
        raise ShapeError(f"{op}: the input's {c_in} channels are not a multiple of the "
                         f"weight's {c_group} input channels per group")
    groups = c_in // c_group
    (sh, sw), (ph, pw), (dh, dw) = _pairs(op, stride, padding, dilation)
    out_h = (height + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    out_w = (width + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    taps = kh * kw
    offset_groups = offset.shape[1] // (2 * taps) if offset.ndim == 4 else 0
    if offset_groups == 0 or tuple(offset.shape) != (n, 2 * offset_groups * taps, out_h, out_w):
        raise ShapeError(f"{op}: offset must be (N, 2 * offset_groups * kh * kw, H_out, W_out)"
                         f" = ({n}, 2 * G * {taps}, {out_h}, {out_w}), got "
                         f"{tuple(offset.shape)}")
    if c_in % offset_groups:
        raise ShapeError(f"{op}: the input's {c_in} channels do not split into "
                         f"{offset_groups} offset groups")
    if mask is not None and tuple(mask.shape) != (n, offset_groups * taps, out_h, out_w):
        raise ShapeError(f"{op}: mask must be (N, offset_groups * kh * kw, H_out, W_out) = "
                         f"{(n, offset_groups * taps, out_h, out_w)}, got {tuple(mask.shape)}")
    if c_out % groups:
        raise ShapeError(f"{op}: the weight's {c_out} output channels do not split into "
                         f"{groups} groups")
    # where each tap of each output place reads, before the offsets: (taps, out_h, out_w)
    rows = (ember.arange(out_h) * sh - ph)[None, :, None] + \
        (ember.arange(kh) * dh).repeat_interleave(kw)[:, None, None]
    cols = (ember.arange(out_w) * sw - pw)[None, None, :] + \
        (ember.arange(kw) * dw).repeat(kh)[:, None, None]
    shifts = offset.reshape(n, offset_groups, taps, 2, out_h, out_w)
    y = (shifts[:, :, :, 0] + rows.to(offset.dtype)).reshape(n, offset_groups, -1)
    x = (shifts[:, :, :, 1] + cols.to(offset.dtype)).reshape(n, offset_groups, -1)
    values = input.reshape(n, offset_groups, c_in // offset_groups, height * width)
    columns = _sample(values, y, x, height, width).reshape(
        n, offset_groups, c_in // offset_groups, taps, out_h * out_w)
    if mask is not None:
        columns = columns * mask.reshape(n, offset_groups, 1, taps, out_h * out_w)
    columns = columns.reshape(n, groups, c_group * taps, out_h * out_w)
    kernel = weight.reshape(groups, c_out // groups, c_group * taps)
    out = ember.einsum("gok,ngkp->ngop", kernel, columns).reshape(n, c_out, out_h, out_w)
    return out if bias is None else out + bias.reshape(1, c_out, 1, 1)


class DeformConv2d(nn.Module):
    """:func:`deform_conv2d` as a layer holding the weight and bias (initialized as
    ``nn.Conv2d``'s); ``forward(input, offset, mask=None)``.

    Example:
        >>> layer = DeformConv2d(2, 4, 3, padding=1)
        >>> layer(ember.randn(1, 2, 6, 6), ember.zeros(1, 18, 6, 6)).shape
        ember.Size([1, 4, 6, 6])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                 dilation: int | tuple[int, int] = 1, groups: int = 1,
                 bias: bool = True) -> None:
        super().__init__()
        if in_channels % groups:
            raise ArgumentError("DeformConv2d: in_channels must be divisible by groups")
        if out_channels % groups:
            raise ArgumentError("DeformConv2d: out_channels must be divisible by groups")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _pair("DeformConv2d", kernel_size, "kernel_size")
        self.stride, self.padding, self.dilation = _pairs("DeformConv2d", stride, padding,
                                                          dilation)
        self.weight = nn.Parameter(ember.empty(out_channels, in_channels // groups,
                                               *self.kernel_size))
        self.bias = nn.Parameter(ember.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.weight[0].numel())
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        return deform_conv2d(input, offset, self.weight, self.bias, self.stride, self.padding,
                             self.dilation, mask)

    def __repr__(self) -> str:
        s = (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
             f"kernel_size={self.kernel_size}, stride={self.stride}")
        s += f", padding={self.padding}" if self.padding != (0, 0) else ""
        s += f", dilation={self.dilation}" if self.dilation != (1, 1) else ""
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        return s + ")"
