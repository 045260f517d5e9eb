"""Copies of permuted arrays into C order, a block of the source at a time.

NumPy copies a permuted array in the order of the result, so where the result's inner axes
stride far apart in the source it reads the whole source once per value of an outer axis (a
flipped 512 × 512 × 3 × 3 weight laid out as (3, 3, 512, 512): nine passes over 9 MiB). Cut
along the axis the source strides widest, each block's source (~256 KiB) stays in cache for all
its passes. Measured on this host (float32): that flipped weight 3.2 → 1.1 ms, a 2048 × 2048
transpose 27.8 → 3.6 ms, a 512 × 4608 one 2.9 → 1.9 ms. A layout whose widest stride is
already outermost (NHWC ↔ NCHW) is copied as NumPy copies it. A block writes at least a
cache line and eight values of each row of the result (a transposed 512 × 4608: 2.9 → 2.0 ms);
where that would take more than twice the usual source, NumPy's copy is left (a transposed
32 × 50000, where one column a block took 0.5 → 6.4 ms).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_LEAST_BYTES = 1 << 20  # smaller copies stay in cache whatever their order
_BLOCK_BYTES = 256 << 10  # source bytes per block
_LINE_BYTES = 64  # the least a block writes in a row of the result...
_LINE_VALUES = 8  # ...and the fewest values


def contiguous(xp: Any, a: Any) -> Any:
    """A C-ordered copy of the ``xp`` array ``a`` (always a new array), a NumPy one copied a
    block at a time where that keeps the source in cache.

    Example:
        >>> contiguous(np, np.ones((3, 2)).T).flags.c_contiguous
        True
    """
    widest = _blocked_axis(a) if xp is np else None
    if widest is None:
        return xp.array(a, copy=True, order="C")
    out = np.empty(a.shape, a.dtype)
    step = _step(a, widest)
    index = [slice(None)] * a.ndim
    for start in range(0, a.shape[widest], step):
        index[widest] = slice(start, start + step)
        out[tuple(index)] = a[tuple(index)]
    return out


def _blocked_axis(a: np.ndarray) -> int | None:
    """The axis to cut ``a`` along (the one of widest source stride), or None where NumPy's
    own copy is as good: a small or contiguous array, that axis outermost already, or blocks
    so narrow in the result that each would need more than twice the usual source."""
    if a.nbytes < _LEAST_BYTES or a.ndim < 2 or a.flags.c_contiguous:
        return None
    strides = [abs(s) for s in a.strides]
    widest = strides.index(max(strides))
    fits = _step(a, widest) * a.nbytes // a.shape[widest] <= 2 * _BLOCK_BYTES
    return widest if widest and fits else None


def _step(a: np.ndarray, axis: int) -> int:
    """How many indices along ``axis`` a block takes: its share of the source, widened until
    it writes a cache line and eight values of each row of the result."""
    inner = math.prod(a.shape[axis + 1:])
    line = -(-max(_LINE_VALUES, _LINE_BYTES // a.itemsize) // inner)
    return max(1, _BLOCK_BYTES * a.shape[axis] // a.nbytes, line)
