"""The nearest modes' source index along one axis, as PyTorch 2.13's kernels round it: its
2-D kernel's, its generic one's (1-D and 3-D inputs, large 2-D outputs), and which of the
two a call runs."""

from __future__ import annotations

from typing import Any

import numpy as np

# (Resample's modes for PyTorch's generic kernel's rounding of the source indices)
NEAREST_1D_3D = {"nearest": "nearest-1d-3d", "nearest-exact": "nearest-exact-1d-3d"}


def _ratio(np_type: Any, size: int, out: int, scale: float | None) -> Any:
    """PyTorch's source-per-destination ratio: ``1 / scale_factor`` if given, else in/out."""
    if scale is not None and scale > 0:
        return np_type(1.0 / scale)
    return np_type(size) / np_type(out)


def _nearest_index(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    """PyTorch's nearest (``floor(o·ratio)``) and 2-D nearest-exact (``floor((o + 0.5)·ratio)``)
    source index, in float32."""
    dst = np.arange(out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    src = np.floor(dst * _ratio(np.float32, size, out, scale)).astype(np.int64)
    return np.minimum(src, size - 1)


def _index_1d_3d(size: int, out: int, scale: float | None, exact: bool,
                 dtype: np.dtype) -> np.ndarray:
    """PyTorch's nearest(-exact) source index of a 1-D or 3-D input (its 2-D kernel takes
    :func:`_nearest_index`'s): ``ratio·o``, or for nearest-exact the pixel-centre coordinate
    ``ratio·(o + 0.5) - 0.5`` rounded once (a fused multiply-add) and clamped at 0 plus 0.5,
    in the input's precision (float32 for half types), then rounded to float32 and floored.
    Where the coordinate is an integer in exact arithmetic (2 -> 41: o = 20 reads 1) the
    2-D rounding can read the pixel before."""
    t = np.float64 if dtype == np.float64 else np.float32
    ratio = _ratio(t, size, out, scale)
    if exact:
        centre = np.arange(out, dtype=np.longdouble) + 0.5
        src = np.maximum((np.longdouble(ratio) * centre - 0.5).astype(t), 0) + t(0.5)
    else:
        src = np.arange(out, dtype=t) * ratio
    return np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), size - 1)


def nearest_kind(mode: str, out: tuple[int, ...], wide_channels_last: bool = False) -> str:
    """The kernel PyTorch 2.13 runs for nearest ``mode`` to the spatial sizes ``out``: the 2-D
    one (:func:`_nearest_index`, and its shortcuts) for a 2-D output whose sizes add up to at
    most 128 or a channels-last input (2-D or 3-D) of 4 or more channels, else the generic
    one (:func:`_index_1d_3d`; 2 -> (82, 82) nearest-exact reads row 20 from 1, not 0)."""
    if wide_channels_last or len(out) == 2 and sum(out) <= 128:
        return mode
    return NEAREST_1D_3D.get(mode, mode)
