"""Region-of-interest pooling, as torchvision's CPU kernels compute it: ``roi_align``
(bilinear samples averaged in each bin, Mask R-CNN) and ``roi_pool`` (the maximum of each
quantized bin, Fast R-CNN).

Where each output reads from depends only on the boxes, so it is worked out in NumPy; the
features are then gathered and combined with Ember ops, and gradients reach the input (not
the boxes, as in torchvision).
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, type_name
from ember.ops.forwarding import check_tensors
from ember.tensor import Tensor

__all__ = ["RoIAlign", "RoIPool", "roi_align", "roi_pool"]


def _rois(op: str, input: Tensor, boxes: Tensor | list[Tensor]) -> np.ndarray:
    """``(K, 5)`` rows of (batch index, x1, y1, x2, y2) from either of torchvision's forms."""
    check_tensors(op, input=input)
    if input.ndim != 4:
        raise ShapeError(f"{op}: input must be (N, C, H, W), got {tuple(input.shape)}")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"{op}: input must be a floating tensor, got {input.dtype.name}. "
                         "Hint: convert it with input.float()")
    if isinstance(boxes, (list, tuple)):
        for i, b in enumerate(boxes):
            check_tensors(op, **{f"boxes[{i}]": b})
            if b.ndim != 2 or b.shape[1] != 4:
                raise ShapeError(f"{op}: boxes[{i}] must be (L, 4) per image, got "
                                 f"{tuple(b.shape)}")
        parts = [np.concatenate([np.full((len(b), 1), i), b.detach().numpy()], 1)
                 for i, b in enumerate(boxes)]
        rois = np.concatenate(parts).astype(np.float64) if parts else np.zeros((0, 5))
    elif not isinstance(boxes, Tensor):
        raise ArgumentTypeError(f"{op}: boxes must be a (K, 5) Tensor or a list of (L, 4) "
                                f"Tensors, got {type_name(boxes)}")
    elif boxes.ndim != 2 or boxes.shape[1] != 5:
        raise ShapeError(f"{op}: boxes must be a (K, 5) tensor of (batch index, x1, y1, x2, "
                         f"y2) or a list of (L, 4) tensors, got {tuple(boxes.shape)}")
    else:
        rois = boxes.detach().numpy().astype(np.float64)
    if not np.isfinite(rois).all():
        # (torchvision's kernels cast NaN and infinite coordinates to int: undefined results)
        row = int(np.flatnonzero(~np.isfinite(rois).all(1))[0])
        raise ArgumentError(f"{op}: box {row} has a non-finite coordinate or batch index: "
                            f"{rois[row].tolist()}")
    if len(rois) and (rois[:, 0].min() < 0 or rois[:, 0].max() >= input.shape[0]):
        raise ShapeError(f"{op}: a batch index in boxes[:, 0] (or the number of per-image box "
                         f"lists) is outside the input's {input.shape[0]} images")
    return rois


def _pair(op: str, value: int | tuple[int, int], name: str = "output_size",
          minimum: int = 1) -> tuple[int, int]:
    """``value`` as two ints of at least ``minimum`` (1 or 0), read from an int or a pair."""
    size = (value,) * 2 if isinstance(value, (int, np.integer)) else value
    if not isinstance(size, (tuple, list)) or any(
            isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in size):
        raise ArgumentTypeError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
    size = tuple(int(n) for n in size)
    if len(size) != 2 or min(size) < minimum:
        kind = "positive" if minimum == 1 else "non-negative"
        raise ArgumentError(f"{op}: {name} must be a {kind} int or a pair of them, got "
                            f"{value!r}")
    return size


def _bilinear(y: np.ndarray, x: np.ndarray, height: int, width: int) -> tuple:
    """Corner rows, columns and weights of bilinear samples, clamped as the kernel clamps
    (samples more than one pixel outside weigh nothing)."""
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y0, x0 = y.astype(np.int64), x.astype(np.int64)
    y_edge, x_edge = y0 >= height - 1, x0 >= width - 1
    y0, x0 = np.where(y_edge, height - 1, y0), np.where(x_edge, width - 1, x0)
    y, x = np.where(y_edge, y0, y), np.where(x_edge, x0, x)
    y1, x1 = np.where(y_edge, y0, y0 + 1), np.where(x_edge, x0, x0 + 1)
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    keep = ~outside
    return ((y0, x0, hy * hx * keep), (y0, x1, hy * lx * keep),
            (y1, x0, ly * hx * keep), (y1, x1, ly * lx * keep))


def roi_align(input: Tensor, boxes: Tensor | list[Tensor], output_size: int | tuple[int, int],
              spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """Average of bilinear samples on a regular grid in each of ``output_size`` bins of each
    box: ``(K, C, h, w)``. ``boxes`` is a ``(K, 5)`` tensor of (batch index, x1, y1, x2, y2)
    or a list of per-image ``(L, 4)`` tensors, in input coordinates times ``spatial_scale``;
    ``sampling_ratio`` samples per bin side (``<= 0``: ``ceil(box size / bins)``);
    ``aligned`` shifts by half a pixel so that pixel centres line up (Detectron2's choice).

    Example:
        >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
        >>> roi_align(x, ember.tensor([[0.0, 0, 0, 2, 2]]), 1, aligned=True)
        tensor([[[[2.5000]]]])
    """
    op = "roi_align"
    rois = _rois(op, input, boxes)
    ph, pw = _pair(op, output_size)
    n, c, height, width = input.shape
    bins, sources, weights = [], [], []
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        for out_bin, yy, xx, w in _align_samples((x1, y1, x2, y2), (ph, pw), spatial_scale,
                                                 sampling_ratio, 0.5 if aligned else 0.0,
                                                 not aligned, (height, width)):
            bins.append(k * ph * pw + out_bin)
            sources.append((int(b) * height + yy) * width + xx)
            weights.append(w)
    return _combine(input, rois, (ph, pw), bins, sources, weights)


def _align_samples(box: tuple, size: tuple[int, int], spatial_scale: float,
                   sampling_ratio: int, offset: float, at_least_one: bool,
                   shape: tuple[int, int], empty_count: float = 1.0) -> list:
    """``(bin, row, column, weight)`` arrays of the bilinear samples of one box, each weight
    divided by its bin's sample count (``empty_count`` when a bin has no samples: roi_align's
    kernel takes 1, ps_roi_align's 0, which makes 0/0). ``at_least_one``: boxes smaller than
    a pixel count as one pixel (roi_align unaligned)."""
    ph, pw = size
    x1, y1, x2, y2 = box
    start_w, start_h = x1 * spatial_scale - offset, y1 * spatial_scale - offset
    roi_w, roi_h = x2 * spatial_scale - offset - start_w, y2 * spatial_scale - offset - start_h
    if at_least_one:
        roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    # (a reversed box has a negative grid: no samples, as the kernel's loops run none)
    gh = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_h / ph)
    gw = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_w / pw)
    count = gh * gw if gh * gw != 0 else empty_count
    gh, gw = max(gh, 0), max(gw, 0)
    ys = start_h + np.arange(ph)[:, None] * bin_h + (np.arange(gh)[None, :] + 0.5) * bin_h / gh
    xs = start_w + np.arange(pw)[:, None] * bin_w + (np.arange(gw)[None, :] + 0.5) * bin_w / gw
    y = np.broadcast_to(ys[:, None, :, None], (ph, pw, gh, gw))
    x = np.broadcast_to(xs[None, :, None, :], (ph, pw, gh, gw))
    out_bin = np.broadcast_to(np.arange(ph * pw).reshape(ph, pw, 1, 1), (ph, pw, gh, gw))
    return [(out_bin.ravel(), yy.ravel(), xx.ravel(), w.ravel() / count)
            for yy, xx, w in _bilinear(y, x, *shape)]


def _combine(input: Tensor, rois: np.ndarray, size: tuple[int, int], bins: list,
             sources: list, weights: list) -> Tensor:
    """``out[:, bin] = Σ weight · input[:, source]`` over the listed samples, as ``(K, C, h,
    w)``."""
    n, c, height, width = input.shape
    flat = input.permute(1, 0, 2, 3).reshape(c, n * height * width)
    total = len(rois) * size[0] * size[1]
    out = ember.zeros(c, total, dtype=input.dtype)
    if bins:
        src = ember.from_numpy(np.concatenate(sources).astype(np.int64))
        w = ember.tensor(np.concatenate(weights), dtype=input.dtype)
        out = out.index_add(1, ember.from_numpy(np.concatenate(bins).astype(np.int64)),
                            flat[:, src] * w)
    return out.reshape(c, len(rois), *size).permute(1, 0, 2, 3)


def roi_pool(input: Tensor, boxes: Tensor | list[Tensor], output_size: int | tuple[int, int],
             spatial_scale: float = 1.0) -> Tensor:
    """Maximum over each of ``output_size`` bins of each box, the box rounded to whole input
    pixels (empty bins give 0): ``(K, C, h, w)``. ``boxes`` as in :func:`roi_align`.

    Example:
        >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
        >>> roi_pool(x, ember.tensor([[0.0, 0, 0, 3, 3]]), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    op = "roi_pool"
    rois = _rois(op, input, boxes)
    ph, pw = _pair(op, output_size)
    n, c, height, width = input.shape
    cells: list[list[int]] = []
    for b, x1, y1, x2, y2 in rois:
        sw, sh, ew, eh = (int(np.sign(v) * np.floor(abs(v) + 0.5))  # C's round: half away
                          for v in np.array([x1, y1, x2, y2]) * spatial_scale)
        bin_h, bin_w = max(eh - sh + 1, 1) / ph, max(ew - sw + 1, 1) / pw
        for i in range(ph):
            h0 = min(max(math.floor(i * bin_h) + sh, 0), height)
            h1 = min(max(math.ceil((i + 1) * bin_h) + sh, 0), height)
            for j in range(pw):
                w0 = min(max(math.floor(j * bin_w) + sw, 0), width)
                w1 = min(max(math.ceil((j + 1) * bin_w) + sw, 0), width)
                cells.append([(int(b) * height + r) * width + q
                              for r in range(h0, h1) for q in range(w0, w1)])
    widest = max((len(cell) for cell in cells), default=0)
    flat = input.permute(1, 0, 2, 3).reshape(c, n * height * width)
    blank = n * height * width  # a column of -inf for the padding of short bins
    index = np.full((len(cells), max(widest, 1)), blank, np.int64)
    for r, cell in enumerate(cells):
        index[r, :len(cell)] = cell
    padded = ember.cat((flat, ember.full((c, 1), -math.inf, dtype=input.dtype)), 1)
    best = padded[:, ember.from_numpy(index)].max(-1).values
    empty = ember.from_numpy(np.array([not cell for cell in cells], dtype=bool))
    best = ember.where(empty, ember.zeros((), dtype=input.dtype), best)
    return best.reshape(c, len(rois), ph, pw).permute(1, 0, 2, 3)


class RoIAlign(nn.Module):
    """:func:`roi_align` as a layer.

    Example:
        >>> RoIAlign(2, spatial_scale=0.5, sampling_ratio=2)(ember.ones(1, 3, 8, 8),
        ...     [ember.tensor([[0.0, 0, 8, 8]])]).shape
        ember.Size([1, 3, 2, 2])
    """

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float,
                 sampling_ratio: int, aligned: bool = False) -> None:
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale,
                         self.sampling_ratio, self.aligned)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned}")


class RoIPool(nn.Module):
    """:func:`roi_pool` as a layer.

    Example:
        >>> RoIPool(2, spatial_scale=1.0)(ember.ones(1, 3, 8, 8),
        ...     ember.tensor([[0.0, 0, 0, 7, 7]])).shape
        ember.Size([1, 3, 2, 2])
    """

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float) -> None:
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, spatial_scale={self.spatial_scale}"
