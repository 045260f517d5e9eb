"""Position-sensitive RoI pooling (R-FCN, Dai et al., 2016), as torchvision's CPU kernels
compute it: bin ``(i, j)`` of output channel ``c`` reads only input channel
``(c * h + i) * w + j``, so the input has ``C_out * h * w`` channels.

The input's channel groups are laid out as extra images (``(N, C_out, h*w, H, W)`` read as
``C_out`` channels of ``N*h*w`` maps), so the sampling code of :mod:`roi` serves both; the
features are combined with Ember ops and gradients reach the input.
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn
from ember.errors import ShapeError
from ember.tensor import Tensor
from ember.vision.ops.roi import _align_samples, _combine, _pair, _rois

__all__ = ["PSRoIAlign", "PSRoIPool", "ps_roi_align", "ps_roi_pool"]


def _prepare(op: str, input: Tensor, boxes: Tensor | list[Tensor],
             output_size: int | tuple[int, int]) -> tuple[np.ndarray, tuple[int, int], Tensor]:
    """The RoIs as rows ``(batch, x1, y1, x2, y2)``, the output size ``(h, w)``, and the input
    as ``(N * h * w, C / (h*w), H, W)`` maps, each bin's channels one map."""
    rois = _rois(op, input, boxes)
    ph, pw = _pair(op, output_size)
    n, c, height, width = input.shape
    if c % (ph * pw):
        raise ShapeError(f"{op}: input channels ({c}) must be a multiple of the output size "
                         f"{ph}x{pw} = {ph * pw}, one channel group per bin")
    c_out = c // (ph * pw)
    maps = input.reshape(n, c_out, ph * pw, height, width).permute(0, 2, 1, 3, 4)
    return rois, (ph, pw), maps.reshape(n * ph * pw, c_out, height, width)


def ps_roi_align(input: Tensor, boxes: Tensor | list[Tensor],
                 output_size: int | tuple[int, int], spatial_scale: float = 1.0,
                 sampling_ratio: int = -1) -> Tensor:
    """Position-sensitive RoI Align: ``(K, C / (h*w), h, w)``, bin ``(i, j)`` of channel ``c``
    the average of bilinear samples of input channel ``(c*h + i)*w + j`` (half-pixel aligned,
    boxes not enlarged to a pixel; a bin without samples is NaN, 0/0, as in torchvision).
    ``boxes`` as in :func:`roi_align`.

    Example:
        >>> x = ember.arange(16.0).reshape(1, 4, 2, 2)
        >>> ps_roi_align(x, ember.tensor([[0.0, 0, 0, 2, 2]]), 2, sampling_ratio=1).shape
        ember.Size([1, 1, 2, 2])
    """
    op = "ps_roi_align"
    rois, (ph, pw), maps = _prepare(op, input, boxes, output_size)
    height, width = input.shape[2:]
    bins, sources, weights = [], [], []
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        for out_bin, yy, xx, w in _align_samples((x1, y1, x2, y2), (ph, pw), spatial_scale,
                                                 sampling_ratio, 0.5, False, (height, width),
                                                 empty_count=0.0):
            bins.append(k * ph * pw + out_bin)
            sources.append(((int(b) * ph * pw + out_bin) * height + yy) * width + xx)
            weights.append(w)
    out = _combine(maps, rois, (ph, pw), bins, sources, weights)
    return _empty_bins_nan(out, rois, (ph, pw), spatial_scale, sampling_ratio)


def _empty_bins_nan(out: Tensor, rois: np.ndarray, size: tuple[int, int], spatial_scale: float,
                    sampling_ratio: int) -> Tensor:
    """NaN where the kernel divides an empty bin's zero sum by a zero sample count."""
    if sampling_ratio > 0 or not len(rois):
        return out
    # (the kernel's own arithmetic, so a zero-size box is exactly zero)
    extent = ((rois[:, 3:5] * spatial_scale - 0.5) - (rois[:, 1:3] * spatial_scale - 0.5)) \
        / np.array(size[::-1])
    grid = np.ceil(extent)
    empty = (grid[:, 0] == 0) | (grid[:, 1] == 0)
    if not empty.any():
        return out
    mask = ember.from_numpy(empty)[:, None, None, None]
    return ember.where(mask, ember.full((), math.nan, dtype=out.dtype), out)


def ps_roi_pool(input: Tensor, boxes: Tensor | list[Tensor],
                output_size: int | tuple[int, int], spatial_scale: float = 1.0) -> Tensor:
    """Position-sensitive RoI pooling: ``(K, C / (h*w), h, w)``, bin ``(i, j)`` of channel
    ``c`` the mean of input channel ``(c*h + i)*w + j`` over the bin of the box rounded to whole
    pixels (empty bins give 0). As torchvision's kernel, bins are clipped to ``H - 1`` and
    ``W - 1``, so the last row and column are never read. ``boxes`` as in :func:`roi_align`.

    Example:
        >>> x = ember.ones(1, 4, 6, 6)
        >>> ps_roi_pool(x, ember.tensor([[0.0, 0, 0, 4, 4]]), 2).tolist()
        [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    op = "ps_roi_pool"
    rois, (ph, pw), maps = _prepare(op, input, boxes, output_size)
    height, width = input.shape[2:]
    bins, sources, weights = [], [], []
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sw, sh, ew, eh = (int(np.sign(v) * np.floor(abs(v) + 0.5))  # C's round: half away
                          for v in np.array([x1, y1, x2, y2]) * spatial_scale)
        bin_h, bin_w = max(eh - sh, 1) / ph, max(ew - sw, 1) / pw
        for i in range(ph):
            h0 = min(max(math.floor(i * bin_h) + sh, 0), height - 1)
            h1 = min(max(math.ceil((i + 1) * bin_h) + sh, 0), height - 1)
            for j in range(pw):
                w0 = min(max(math.floor(j * bin_w) + sw, 0), width - 1)
                w1 = min(max(math.ceil((j + 1) * bin_w) + sw, 0), width - 1)
                area = (h1 - h0) * (w1 - w0)
                if h1 <= h0 or w1 <= w0:
                    continue
                rows, cols = np.meshgrid(np.arange(h0, h1), np.arange(w0, w1), indexing="ij")
                group = int(b) * ph * pw + i * pw + j
                bins.append(np.full(area, k * ph * pw + i * pw + j))
                sources.append(((group * height + rows) * width + cols).ravel())
                weights.append(np.full(area, 1.0 / area))
    return _combine(maps, rois, (ph, pw), bins, sources, weights)


class PSRoIAlign(nn.Module):
    """:func:`ps_roi_align` as a layer.

    Example:
        >>> PSRoIAlign(2, 1.0, 2)(ember.ones(1, 8, 6, 6), [ember.tensor([[0.0, 0, 4, 4]])]).shape
        ember.Size([1, 2, 2, 2])
    """

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float,
                 sampling_ratio: int) -> None:
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio = sampling_ratio

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale,
                            self.sampling_ratio)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio})")


class PSRoIPool(nn.Module):
    """:func:`ps_roi_pool` as a layer.

    Example:
        >>> PSRoIPool(2, 1.0)(ember.ones(1, 8, 6, 6), [ember.tensor([[0.0, 0, 4, 4]])]).shape
        ember.Size([1, 2, 2, 2])
    """

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float) -> None:
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")
