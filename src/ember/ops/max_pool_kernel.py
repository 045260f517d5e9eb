"""2-D max pooling of channels-last float arrays by numba's loops (:mod:`ember.ops.max_pool_numba`),
one pass each way where NumPy makes a few per kernel element; ``None`` where they do not apply
(no numba, another layout or dtype, a kernel of over 127 elements), and NumPy's kernels run.

Convolutions leave their outputs channels-last (:mod:`ember.ops.conv`), so the pooling after
them reads that layout; the batch is shared among the cores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.ops.im2col import channels_last_rows, empty_channels_last, numba_geometry

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.max_pool_numba")


def _kernels(xp: Any, values: Any, kernel_size: tuple, layout: Any) -> Any:
    """numba's pooling module, if its loops take ``values`` (N, C, H, W), a NumPy float32 or
    float64 array of several channels, pooled by a 2-D kernel of at most 127 elements (an
    int8 window), where ``layout`` (the array whose layout the result takes) is
    channels-last."""
    if xp is not np or not compiled.numba_enabled() or len(kernel_size) != 2:
        return None
    if values.dtype not in (np.float32, np.float64) or values.shape[1] == 1 or \
            kernel_size[0] * kernel_size[1] > 127 or channels_last_rows(xp, layout) is None:
        return None
    return compiled.load(_KERNELS)


def _over_batch(kernel: Any, geometry: tuple, *arrays: Any) -> None:
    """``kernel(*blocks, geometry)`` over shares of samples of the channels-last views."""
    parallel.over_rows(kernel, [a.transpose(0, 2, 3, 1) for a in arrays], 1, geometry)


def max_window(xp: Any, x: Any, counts: tuple, kernel_size: tuple, stride: tuple,
               padding: tuple, dilation: tuple, window: bool = True) -> tuple[Any, Any] | None:
    """(values, window) of 2-D max pooling of ``x``, channels-last like ``x``; with
    ``window=False`` (inference) only the values, and None for the window. None where
    numba's loop does not apply."""
    kernels = _kernels(xp, x, kernel_size, x)
    if kernels is None:
        return None
    shape = x.shape[:2] + counts
    geometry = numba_geometry(kernel_size, stride, dilation, padding)
    best = empty_channels_last(xp, shape, x.dtype)
    if not window:
        _over_batch(kernels.max_values, geometry, x, best)
        return best, None
    won = empty_channels_last(xp, shape, np.int8)
    _over_batch(kernels.max_window, geometry, x, best, won)
    return best, won


def window_scatter(xp: Any, g: Any, window: Any, size: tuple, kernel_size: tuple,
                   stride: tuple, padding: tuple, dilation: tuple) -> Any:
    """Max pooling's gradient: ``g`` added at each window's winning element of a new
    (N, C, *size) array, channels-last like ``window``; None where numba's loop does not
    apply."""
    if window.dtype != np.int8 or window.ndim != 4:
        return None
    kernels = _kernels(xp, g, kernel_size, window)
    if kernels is None:
        return None
    if channels_last_rows(np, g) is None:  # a copy of the small side, in the window's layout
        g, copy = empty_channels_last(xp, g.shape, g.dtype), g
        g[...] = copy
    out = empty_channels_last(xp, g.shape[:2] + tuple(size), g.dtype)
    _over_batch(kernels.window_scatter, numba_geometry(kernel_size, stride, dilation, padding),
                g, window, out)
    return out
