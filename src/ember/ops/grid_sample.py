"""Spatial transformers: ``affine_grid`` makes a sampling grid from a batch of affine
matrices, ``grid_sample`` reads an image at a grid's points (PyTorch's semantics for modes,
padding modes and ``align_corners``).

Both are composites. ``grid_sample`` turns each grid point into source coordinates (through
the padding mode), gathers the input at every neighbour the mode weighs (2ᵈ corners for
(bi/tri)linear, one for nearest, 4×4 for bicubic) in one ``gather``, and sums the neighbours
times their weights. The gradient wrt the input is the gather's scatter-add, the one wrt the
grid flows through the weights, and higher derivatives, forward mode and vmap follow from the
ops used.
"""

from __future__ import annotations

import itertools
from math import prod
from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.convert import HALF, float32_under_autocast
from ember.ops.creation import linspace
from ember.ops.int_args import as_ints
from ember.ops.join import cat, stack
from ember.ops.select import where, zero_grad_from
from ember.ops.shape import movedim
from ember.tensor import Tensor

__all__: list[str] = []  # (F.grid_sample and F.affine_grid only, as in torch)

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # the cubic convolution parameter PyTorch (and OpenCV) use


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """Grid coordinates in [-1, 1] as pixel coordinates: -1 and 1 are the centres of the
    corner pixels with ``align_corners``, else their outer edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``coord`` reflected off the bounds ``twice_low / 2`` and ``twice_high / 2`` until it
    lies between them."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = dist.fmod(span)
    flips = (dist / span).floor().detach()
    return where(flips.fmod(2) == 0, extra + low, span - extra + low)


def _clip(coord: Tensor, size: int, volumetric: bool) -> Tensor:
    """``coord`` clamped to [0, size - 1], NaN to 0 (PyTorch's 4-D CPU sampler) or, for a
    ``volumetric`` (5-D) input, to size - 1 (its 5-D one); a coordinate on a bound gets a zero
    gradient too, as there (the clamp's own would pass it through)."""
    inside = (coord > 0) & (coord < size - 1)
    nan_at = size - 1.0 if volumetric else 0.0
    return where(inside, coord, coord.detach().nan_to_num(nan_at).clamp(0, size - 1))


def _pad_coordinates(coord: Tensor, size: int, padding_mode: str, align_corners: bool,
                     volumetric: bool) -> Tensor:
    """Pixel coordinates moved inside the image as ``padding_mode`` says (``zeros`` leaves
    them, and the points outside read zeros; a non-finite one of a ``volumetric`` input is
    moved outside too, so that it reads 0, not NaN, as PyTorch's 5-D sampler)."""
    if padding_mode == "border":
        return _clip(coord, size, volumetric)
    if padding_mode == "reflection":
        reflected = _reflect(coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coord, -1, 2 * size - 1)
        return _clip(reflected, size, volumetric)
    if volumetric:
        return where(coord.isfinite(), coord, -2.0)
    return coord


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """The four cubic-convolution weights of the taps at -1, 0, 1, 2 from a point ``t`` in
    [0, 1) past tap 0."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:  # |x| ≤ 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _neighbours(coords: list[Tensor], spatial: tuple[int, ...], mode: str, padding_mode: str,
                align_corners: bool) -> tuple[list[list[Tensor]], list[list[Tensor]]]:
    """Per spatial dimension, the pixel coordinates (float, detached) of the taps the mode
    reads around each grid point, and each tap's weight along that dimension."""
    taps, weights = [], []
    volumetric = len(spatial) == 3
    for coord, size in zip(coords, spatial, strict=True):
        pixel = _unnormalize(coord, size, align_corners)
        if mode == "bicubic":  # the padding mode applies to each tap, not to the point
            base = pixel.floor().detach()
            taps.append([_pad_coordinates(base + (i - 1), size, padding_mode, align_corners,
                                          volumetric) for i in range(4)])
            weights.append(_cubic_weights(pixel - base))
            continue
        pixel = _pad_coordinates(pixel, size, padding_mode, align_corners, volumetric)
        if mode == "nearest":
            taps.append([pixel.detach().round()])  # half to even, as PyTorch's nearbyint
            weights.append([None])
        else:
            low = pixel.floor().detach()
            frac = pixel - low
            taps.append([low, low + 1])
            weights.append([1 - frac, frac])
    return taps, weights


def _check_grid_sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str) -> None:
    op = "grid_sample"
    if mode not in _MODES:
        raise ArgumentError(f"{op}: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if padding_mode not in _PADDING_MODES:
        raise ArgumentError(f"{op}: padding_mode must be one of {', '.join(_PADDING_MODES)}, "
                            f"got {padding_mode!r}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim or grid.shape[0] != input.shape[0] \
            or grid.shape[-1] != input.ndim - 2:
        raise ShapeError(f"{op}: expected a (N, C, H, W) input with a (N, H_out, W_out, 2) "
                         f"grid, or a (N, C, D, H, W) input with a (N, D_out, H_out, W_out, 3) "
                         f"grid; got input {tuple(input.shape)} and grid {tuple(grid.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise ArgumentError(f"{op}: bicubic interpolation only supports 4-D input, got shape "
                            f"{tuple(input.shape)}")
    if not input.dtype.is_floating_point or input.dtype is not grid.dtype:
        raise DTypeError(f"{op}: expected input and grid of one floating dtype, got "
                         f"{input.dtype.name} and {grid.dtype.name}")
    if min(input.shape[2:]) == 0:
        raise ShapeError(f"{op}: input {tuple(input.shape)} has an empty spatial dimension")


@float32_under_autocast
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Samples ``input`` (N, C, H, W) at the points of ``grid`` (N, H_out, W_out, 2), whose
    last dimension holds (x, y) in [-1, 1] (-1 the left/top edge); also 5-D, with (x, y, z).

    ``mode`` is ``"bilinear"`` (trilinear for 5-D input), ``"nearest"`` or ``"bicubic"``
    (4-D only); ``padding_mode`` says what points outside read: ``"zeros"``, the
    ``"border"`` pixels, or the image ``"reflection"``. ``align_corners`` (default False)
    puts ±1 at the corner pixels' centres instead of their outer edges.

    Example:
        >>> x = ember.arange(4.0).reshape(1, 1, 2, 2)
        >>> F.grid_sample(x, ember.zeros(1, 1, 1, 2), align_corners=False)
        tensor([[[[1.5000]]]])
    """
    _check_grid_sample(input, grid, mode, padding_mode)
    if input.dtype in HALF:  # in float32: half coordinates miss by up to a pixel on wide images
        return grid_sample(input.float(), grid.float(), mode, padding_mode,
                           align_corners).to(input.dtype)
    align_corners = bool(align_corners)
    n, c, *spatial = input.shape
    nd = len(spatial)
    points = tuple(grid.shape[1:-1])
    q = prod(points)
    # per spatial dimension (D, H, W order) its grid coordinate, as (N, Q)
    flat_grid = grid.reshape((n, q, nd))
    coords = [flat_grid[:, :, nd - 1 - i] for i in range(nd)]
    taps, weights = _neighbours(coords, tuple(spatial), mode, padding_mode, align_corners)
    index, weight = [], []
    pixels = prod(spatial)
    for combo in itertools.product(*(range(len(t)) for t in taps)):
        flat, inside, w = 0, None, None
        for i, (j, size) in enumerate(zip(combo, spatial, strict=True)):
            at = taps[i][j]
            ok = (at >= 0) & (at <= size - 1)
            inside = ok if inside is None else inside & ok
            flat = flat * size + at
            if weights[i][j] is not None:
                w = weights[i][j] if w is None else w * weights[i][j]
        index.append(where(inside, flat, pixels))  # (outside: the zero past the last pixel)
        mask = inside.to(input.dtype)
        weight.append(mask if w is None else w * mask)
    k = len(index)
    index = stack(index, 1).to(dtypes.int64).reshape((n, 1, k * q))
    # a tap outside reads a zero, not a pixel times a zero weight (an inf pixel gave NaN)
    padded = cat([input.reshape((n, c, pixels)), input.new_zeros((n, c, 1))], 2)
    values = padded.gather(2, index.expand((n, c, k * q)))
    weight = stack(weight, 1).reshape((n, 1, k, q))
    out = (values.reshape((n, c, k, q)) * weight).sum(2).reshape((n, c) + points)
    # nearest's output is flat in the grid: a zero gradient, as PyTorch's
    return zero_grad_from(grid.sum(), out) if mode == "nearest" else out


def _base_coordinates(size: int, align_corners: bool, like: Tensor) -> Tensor:
    """The ``size`` grid coordinates of pixel centres along one dimension."""
    if size <= 1:
        return like.new_zeros((size,))
    steps = linspace(-1.0, 1.0, size, dtype=like.dtype, device=like.device)
    return steps if align_corners else steps * (size - 1) / size  # (rounded twice, as torch)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps: ``theta`` (N, 2, 3) and ``size``
    (N, C, H, W) give (N, H, W, 2), the (x, y) each output pixel reads for
    :func:`grid_sample`; ``theta`` (N, 3, 4) and (N, C, D, H, W) give (N, D, H, W, 3).

    Example:
        >>> theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])  # the identity
        >>> F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)[0, 0]
        tensor([[-0.5000, -0.5000],
                [ 0.5000, -0.5000]])
    """
    size = as_ints(size, "affine_grid", "size")
    nd = len(size) - 2
    if nd not in (2, 3) or not theta.dtype.is_floating_point or \
            tuple(theta.shape) != (size[0], nd, nd + 1):
        raise ShapeError(f"affine_grid: expected a floating theta of shape (N, 2, 3) with a "
                         f"size (N, C, H, W), or (N, 3, 4) with (N, C, D, H, W); got theta "
                         f"{tuple(theta.shape)} ({theta.dtype.name}) and size {size}")
    if min(size[2:]) <= 0:
        raise ShapeError(f"affine_grid: expected a size with positive spatial dimensions, "
                         f"got {size}")
    spatial, n = size[2:], size[0]
    # output coordinate j = x·θ[j, 0] + y·θ[j, 1] (+ z·θ[j, 2]) + θ[j, nd], added in that
    # order (a half theta in float32), as PyTorch's bmm of its base grid: the same roundings
    work = theta.float() if theta.dtype in HALF else theta
    rows = work.reshape((n, nd) + (1,) * nd + (nd + 1,))  # (N, nd, 1.., nd + 1): θ[j, i]
    total = None
    for i in range(nd):  # coordinate i (x, y, z) varies along spatial dim nd - 1 - i
        d = nd - 1 - i
        axis = _base_coordinates(spatial[d], bool(align_corners), theta).to(work.dtype)
        shape = (1, 1) + tuple(s if k == d else 1 for k, s in enumerate(spatial))
        term = axis.reshape(shape) * rows[..., i]
        total = term if total is None else total + term
    # (N, nd, *spatial) laid out as (N, *spatial, nd)
    return movedim(total + rows[..., nd], 1, -1).contiguous().to(theta.dtype)
