"""Adaptive average pooling over 1, 2 or 3 spatial dimensions: PyTorch's windows
``[floor(i·size/out), ceil((i+1)·size/out))``, which need not divide the size evenly. Equal
windows are a reshape and a mean; others gather each window's elements per axis (the widest
window's count, shorter ones masked), so a NaN or inf stays in the windows that hold it.
Half-precision inputs are summed in float32, as PyTorch's; channels-last inputs stay so."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ShapeError
from ember.ops.channels_last_view import channels_back, pixels_first
from ember.ops.convert import HALF, float32_under_autocast
from ember.ops.im2col import batched, floating_input
from ember.ops.int_args import as_int, as_ints
from ember.ops.select import where
from ember.tensor import Tensor, _wrap

__all__ = ["adaptive_avg_pool1d"]


def adaptive_bounds(xp: Any, size: int, out: int) -> tuple[Any, Any]:
    """PyTorch's adaptive windows: ``[floor(i·size/out), ceil((i+1)·size/out))``."""
    i = xp.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _window_mean(y: Tensor, axis: int, out: int) -> Tensor:
    """The mean of each of PyTorch's adaptive windows along ``axis``: the windows' elements
    gathered (the widest window's count, shorter ones masked), so a NaN or inf stays in
    the windows that hold it."""
    xp, size = y.device.xp, y.shape[axis]
    start, end = adaptive_bounds(np, size, out)
    taps = start[:, None] + np.arange(int((end - start).max(initial=1)))
    index = _wrap(xp.asarray(np.minimum(taps, size - 1).ravel()), y.device)
    gathered = y.index_select(axis, index).reshape(
        y.shape[:axis] + taps.shape + y.shape[axis + 1:])
    trailing = (1,) * (y.ndim - 1 - axis)
    inside = _wrap(xp.asarray((taps < end[:, None]).reshape(taps.shape + trailing)), y.device)
    count = xp.asarray((end - start).reshape((out,) + trailing), dtype=y.dtype.np)
    return where(inside, gathered, 0).sum(axis + 1) / _wrap(count, y.device)


def pooled_size(op: str, output_size: Any, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """An adaptive pool's ``output_size`` (an int, or one size or None per spatial dim: None
    keeps that size) as sizes, checked against the input's ``spatial`` sizes."""
    n = len(spatial)
    sizes = (output_size,) * n if isinstance(output_size, int) or output_size is None \
        else tuple(output_size) if hasattr(output_size, "__iter__") \
        else as_ints(output_size, op, "output_size")
    if len(sizes) != n:
        raise ShapeError(f"{op}: output_size must be an int or {n} sizes, got {output_size!r}")
    out = tuple(s if o is None else as_int(o, op, "output_size")
                for s, o in zip(spatial, sizes, strict=True))
    if min(out, default=1) < 0 or (min(spatial, default=1) == 0 and max(out, default=0) > 0):
        raise ShapeError(f"{op}: cannot pool spatial size {spatial} to {out}")
    return out


def adaptive_avg_pool(op: str, nd: int, input: Tensor, output_size: Any) -> Tensor:
    """The adaptive average pool of a (N, C, *spatial) or (C, *spatial) ``input`` over ``nd``
    spatial dims, for ``op`` (the public function's name, for errors)."""
    floating_input(op, input)
    if input.dtype in HALF:  # summed and divided in float32, as PyTorch (a sum may overflow)
        return adaptive_avg_pool(op, nd, input.float(), output_size).to(input.dtype)
    x, added = batched(input, nd, op)
    spatial = tuple(x.shape[2:])
    out = pooled_size(op, output_size, spatial)
    n, c = x.shape[:2]
    moved = pixels_first(x, (3, 4))  # (spatial axes from 1, the result channels-last)
    y, first = (x, 2) if moved is None else (moved, 1)
    if all(s % o == 0 for s, o in zip(spatial, out, strict=True) if o) and min(out) > 0:
        # equal windows: a reshape and a mean
        split = sum(((o, s // o) for s, o in zip(spatial, out, strict=True)), ())
        y = y.reshape(y.shape[:first] + split + y.shape[first + nd:]).mean(
            tuple(range(first + 1, first + 1 + 2 * nd, 2)))
    else:
        for i, o in enumerate(out):
            y = _window_mean(y, first + i, o)
    y = y if moved is None else channels_back(y)
    return y.reshape(y.shape[1:]) if added else y


def adaptive_avg_pool1d(input: Tensor, output_size: int) -> Tensor:
    """Averages a (N, C, L) input to length ``output_size`` with PyTorch's adaptive windows.

    Example:
        >>> F.adaptive_avg_pool1d(ember.tensor([[1.0, 2.0, 3.0]]), 2)
        tensor([[1.5000, 2.5000]])
    """
    return adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Averages a (N, C, H, W) input to ``output_size`` (an int, a pair, None keeps a size),
    with windows ``[floor(i·H/h), ceil((i+1)·H/h))`` that need not divide evenly.

    Example:
        >>> F.adaptive_avg_pool2d(ember.ones(2, 3, 5, 7), (2, 3)).shape
        ember.Size([2, 3, 2, 3])
    """
    return adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


@float32_under_autocast
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Averages a (N, C, D, H, W) input to ``output_size`` with adaptive windows."""
    return adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)
