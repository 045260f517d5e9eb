"""When numba's row kernels (:mod:`ember.ops.rows_numba`: softmax, log_softmax, standardize,
layer norm and their gradients) take a computation, and how its rows are shared among the cores.

They take NumPy float32/float64 arrays of one shape and dtype, C-contiguous, all but the first
writable (the kernels' signatures: a memory-mapped input may be read-only), reduced over
their trailing dimensions; anything else is left to the NumPy code of the op.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ember.backend import compiled, parallel

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.rows_numba")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # (dtypes: ``in`` finds them by identity)
_SHARE = 1 << 17  # elements a piece takes at least (a softmax of 2¹⁷ float32 takes ~0.13 ms)


def kernels(xp: Any, dims: tuple[int, ...], *arrays: Any) -> Any:
    """numba's module of row kernels if they take ``arrays`` reduced over ``dims``, else
    None."""
    first = arrays[0]
    if xp is not np or first.dtype not in _FLOATS or first.size == 0 or \
            not first.flags.c_contiguous or not _trailing(dims, first.ndim) or \
            (len(arrays) > 1 and not _like(first, arrays[1:])) or \
            not compiled.numba_enabled():
        return None
    return compiled.load(_KERNELS)


def _like(first: Any, rest: tuple) -> bool:
    """Whether arrays ``rest`` are writable, C-contiguous and of ``first``'s shape and dtype
    (asked apart from ``first``'s own tests: a one-array call pays no loop, ~1 µs of a small
    log_softmax's)."""
    return all(a.shape == first.shape and a.dtype == first.dtype and a.flags.c_contiguous
               and a.flags.writeable for a in rest)


def _trailing(dims: tuple[int, ...], ndim: int) -> bool:
    """Whether ``dims`` are the last ``len(dims)`` dimensions of ``ndim``, in any order."""
    if len(dims) == 1:  # (the common case, without sorting: ~0.6 µs of a small softmax's 14)
        return dims[0] % ndim == ndim - 1
    return sorted(d % ndim for d in dims) == list(range(ndim - len(dims), ndim))


def _rows(count: int, arrays: list) -> list:
    """Each array seen as rows of its last ``count`` dimensions (a statistic of keepdim shape:
    rows of one)."""
    return [a if count == 1 and a.ndim == 2 else a.reshape(-1, prod(a.shape[a.ndim - count:]))
            for a in arrays]  # ((n, c) arrays are their rows already: ~0.3 µs a reshape)


def _least(rows: list) -> int:
    """Rows a piece of :func:`ember.backend.parallel.run` takes at least."""
    return -(-_SHARE // max(rows[0].shape[1], 1))


def over_rows(kernel: Any, count: int, arrays: list, *args: Any) -> None:
    """``kernel(*rows, *args)``, each array seen as rows of its last ``count`` dimensions
    (a statistic of keepdim shape: rows of one), the rows shared among the cores."""
    rows = _rows(count, arrays)
    if arrays[0].size < _SHARE:  # (one piece: called here, without the sharing's arithmetic)
        kernel(*rows, *args)
        return
    parallel.over_rows(kernel, rows, _least(rows), *args)


def summing_over_rows(kernel: Any, count: int, arrays: list, *args: Any) -> tuple[Any, Any]:
    """:func:`over_rows` for a kernel that also adds into two float64 sums the width of a row
    (``kernel(*rows, *args, first, second)``): each piece into sums of its own, which
    are returned added."""
    rows = _rows(count, arrays)
    n = rows[0].shape[0]
    shares = parallel.blocks(n, parallel.share_count(n, _least(rows)))
    return parallel.sums_over_blocks(kernel, shares, rows[0].shape[1], rows, *args)
