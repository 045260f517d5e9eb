"""Which one-row products run on numba's threads (:mod:`ember.backend.gemv_numba`): a
batch-1 Linear layer's ``x @ W.T``, large enough that two cores reading the weights beat one.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

from ember.backend import compiled, parallel

_KERNELS = compiled.register("ember.backend.gemv_numba")
_MIN_MACS = 1 << 18  # multiply-adds: below, one BLAS thread is as quick (the threads' join)
_FORKED = [False]  # a child forked after numba's threads started (they do not survive it)
_THREADS = threading.local()  # .parts: the thread count this thread set numba's to
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _after_fork() -> None:
    pool = sys.modules.get("numba.np.ufunc.parallel")  # (numba's, loaded by any user of it)
    _FORKED[0] = bool(getattr(pool, "_is_initialized", False))


os.register_at_fork(after_in_child=_after_fork)


def one_row(a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
    """``a @ b`` (into ``out``, if given) on numba's threads, where ``a`` is one C-contiguous
    row (``(k,)`` or ``(1, k)``) and ``b`` the transpose of a C-contiguous ``(n, k)`` matrix
    of its dtype (float32 or float64), both writeable, with ``n·k`` at least 2¹⁸, and
    numba's threads are OpenMP's; None otherwise (the caller runs BLAS).

    Example:
        >>> gemv.one_row(x, layer.weight._data.T, None)  # x: (1, 784), weight: (1024, 784)
    """
    dtype = a.dtype
    if b.ndim != 2 or b.size < _MIN_MACS or dtype not in _DTYPES or b.dtype != dtype or \
            _FORKED[0] or (a.ndim == 2 and a.shape[0] != 1):
        return None
    w, flags = b.T, a.flags
    shape = (w.shape[0],) if a.ndim == 1 else (1, w.shape[0])
    if not (flags.c_contiguous and flags.writeable and w.flags.c_contiguous and
            w.flags.writeable) or \
            (out is not None and (out.shape != shape or out.dtype != dtype or
                                  not out.flags.c_contiguous or not out.flags.writeable or
                                  np.may_share_memory(out, a))) or \
            not compiled.numba_enabled() or (parts := parallel.workers()) < 2:
        return None
    kernels = compiled.load(_KERNELS)
    if kernels is None or not kernels.OPENMP:
        return None
    out = np.empty(shape, dtype) if out is None else out
    if getattr(_THREADS, "parts", None) != parts:
        _threads(parts)
    kernels.rows_times(a.reshape(-1), w, out.reshape(-1), parts)
    return out


def _threads(parts: int) -> None:
    """numba's thread count for this thread's calls: ``parts`` (at most numba's own)."""
    import numba

    numba.set_num_threads(min(parts, numba.config.NUMBA_NUM_THREADS))
    _THREADS.parts = parts
