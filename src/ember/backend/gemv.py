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
MIN_MACS = 1 << 18  # multiply-adds: below, one BLAS thread is as quick (the threads' join)
_FORKED = [False]  # a child forked after numba's threads started (they do not survive it)
_NO_BIAS = {np.dtype(t): np.zeros(0, t) for t in (np.float32, np.float64)}  # (the dtypes)


class _Threads(threading.local):
    parts = None  # the thread count this thread set numba's to


_THREADS = _Threads()


def _after_fork() -> None:
    pool = sys.modules.get("numba.np.ufunc.parallel")  # (numba's, loaded by any user of it)
    _FORKED[0] = bool(getattr(pool, "_is_initialized", False))


os.register_at_fork(after_in_child=_after_fork)


def one_row(a: np.ndarray, b: np.ndarray, out: np.ndarray | None,
            bias: np.ndarray | None = None, relu: bool = False) -> np.ndarray | None:
    """``a @ b`` (into ``out``, if given) on numba's threads, plus ``bias`` (one value per
    column) if given, then relu if ``relu`` (each step rounded as eager's calls round it), where
    ``a`` is one C-contiguous row (``(k,)`` or ``(1, k)``) and ``b`` the transpose of a
    C-contiguous ``(n, k)`` matrix of its dtype (float32 or float64), all writeable, with
    ``n·k`` at least 2¹⁸, and numba's threads are OpenMP's; None otherwise (the caller runs
    BLAS and the bias's and relu's own calls).

    Example:
        >>> gemv.one_row(x, layer.weight._data.T, None)  # x: (1, 784), weight: (1024, 784)
        >>> gemv.one_row(x, layer.weight._data.T, None, layer.bias._data, relu=True)
    """
    dtype = a.dtype
    if b.ndim != 2 or b.size < MIN_MACS or dtype not in _NO_BIAS or b.dtype != dtype or \
            _FORKED[0] or (a.ndim == 2 and a.shape[0] != 1):
        return None
    w, flags = b.T, a.flags
    n = w.shape[0]
    shape = (n,) if a.ndim == 1 else (1, n)
    if not (flags.c_contiguous and flags.writeable and w.flags.c_contiguous and
            w.flags.writeable) or \
            (out is not None and (out.shape != shape or out.dtype != dtype or
                                  not out.flags.c_contiguous or not out.flags.writeable or
                                  np.may_share_memory(out, a))) or \
            (bias is not None and (bias.size != n or bias.shape[-1:] != (n,) or
                                   bias.dtype != dtype or not bias.flags.c_contiguous or
                                   not bias.flags.writeable or
                                   out is not None and np.may_share_memory(out, bias))) or \
            not compiled.numba_enabled() or (parts := parallel.workers()) < 2:
        return None
    kernels = compiled.load(_KERNELS)
    if kernels is None or not kernels.OPENMP:
        return None
    out = np.empty(shape, dtype) if out is None else out
    if _THREADS.parts != parts:
        _threads(parts)
    kernels.rows_times(a.reshape(-1), w, _NO_BIAS[dtype] if bias is None else bias.reshape(-1),
                       out.reshape(-1), parts, (bias is not None) | relu << 1)
    return out


def _threads(parts: int) -> None:
    """numba's thread count for this thread's calls: ``parts`` (at most numba's own)."""
    import numba

    numba.set_num_threads(min(parts, numba.config.NUMBA_NUM_THREADS))
    _THREADS.parts = parts
