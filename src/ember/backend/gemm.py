"""The CPU GEMM kernel choice: how many BLAS threads a matrix product of a given size runs on.

A multi-threaded BLAS call synchronises its threads several times; while the machine is busy
(another job on the second core) a thread waiting for its descheduled partner turns a GEMV into
milliseconds (a 1×1024×1024 product, with a busy process on the other core: 68 µs on one
thread, 139 µs median on two and a 262 µs median under heavier load; idle, 80 against 43).
And OpenBLAS's idle thread spins on its core for ~110 ms after a product it shared (setting
one thread does not stop it), then sleeps, and waking it costs ~0.2 ms (a 196×288×64 product:
68 µs on two threads while it spins, 296 µs once it sleeps, 87 µs on one), so a small product
after single-threaded work (a batch-1 network's) gains nothing from it. Under load it is
worse: with the other core busy, two threads' products of 2²⁴–2²⁵ multiply-adds
(64×3136×128, 9×50176×32, 128×512×512; 5 December) took means of 25–124 ms over 80 calls
(medians of 19–48 ms in some runs) against 1–3 ms means and 0.5–0.7 ms medians on one
thread, where one thread loses at most ~0.2 ms a product on an idle host. (The README's CNN
step, all of whose multi-threaded products are under 2²⁵: 75 → 29 ms mean, 34 → 24 ms
median, on the busy host.) So products of fewer than 2²⁵ multiply-adds per matrix, and
skinny ones, run on one thread; large ones, where two threads pay off, on all. A batch of
small products (attention's scores) has its matrices shared among the cores instead
(:mod:`ember.backend.parallel`), each on one BLAS thread. OpenBLAS already runs those under
2¹⁸ multiply-adds on one thread; the toggle costs ~1 µs (OpenBLAS's own C calls).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from math import prod
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import compiled, gemv, parallel, threads
from ember.errors import ArgumentError

_single_below = 1 << 25  # multiply-adds per matrix (m·n·k): ~0.4 ms on one core
_SKINNY = 16
_OPENBLAS_SINGLE = 1 << 18  # OpenBLAS's own cutoff (65536 × GEMM_MULTITHREAD_THRESHOLD 4)


def set_single_thread_gemm_below(macs: int) -> None:
    """Matrix products and triangular solves of fewer than ``macs`` multiply-adds per matrix
    (and products with a result of at most 16 rows or columns, and batches of solves) run on
    one BLAS thread (default 2²⁵; 0 turns the choice off).

    Example:
        >>> ember.backend.set_single_thread_gemm_below(1 << 25)
    """
    global _single_below
    if not isinstance(macs, int) or macs < 0:
        raise ArgumentError(f"set_single_thread_gemm_below: expected an int >= 0, got {macs!r}")
    _single_below = macs


def one_thread(macs: int, count: int = 1) -> bool:
    """Whether ``count`` BLAS calls in a row of ``macs`` multiply-adds each (a triangular
    solve's, see :mod:`ember.backend.trsm`) should run on one BLAS thread: below the
    threshold of :func:`set_single_thread_gemm_below`, or several calls (each would wake the
    threads again), unless the choice is off or this is a piece inside Ember's pool (already
    one thread each).

    Example:
        >>> gemm.one_thread(32 * 32 * 32), gemm.one_thread(1 << 30), gemm.one_thread(1 << 30, 4)
        (True, False, True)
    """
    return bool(_single_below) and (macs < _single_below or count > 1) and not parallel.inside()


def _numpy_only(xp: Any, a: Any, b: Any) -> bool:
    """Whether ``a @ b`` is NumPy's call as it is: another array library, a vector product,
    inside Ember's pool, or the choice switched off (:func:`set_single_thread_gemm_below`)."""
    return xp is not np or not a.ndim or not b.ndim or not _single_below or parallel.inside()


def one_row(xp: Any, a: Any, b: Any, bias: Any = None, relu: bool = False,
            out: Any = None) -> Any:
    """``relu(a @ b + bias)`` (the bias and relu if given) in one pass on numba's threads,
    where :func:`matmul` would run the product there (a batch-1 Linear:
    :func:`ember.backend.gemv.one_row`), each step rounded as eager's calls round it; None
    elsewhere (then the caller runs :func:`matmul` and the bias's and relu's calls).

    Example:
        >>> gemm.one_row(np, x, layer.weight._data.T, layer.bias._data, relu=True)
    """
    if _numpy_only(xp, a, b) or a.ndim > 2 or a.shape[-1] * b.shape[-1] < _OPENBLAS_SINGLE:
        return None  # (matmul's own conditions for its one-row route)
    return gemv.one_row(a, b, out, bias, relu)


def matmul(xp: Any, a: Any, b: Any, out: Any = None) -> Any:
    """``xp.matmul(a, b)`` (into ``out`` if given), on one BLAS thread when each matrix
    product is small or skinny; a batch of small products has its matrices shared among the
    cores instead."""
    if _numpy_only(xp, a, b):
        return xp.matmul(a, b, out=out)
    m, n = (a.shape[-2] if a.ndim > 1 else 1), (b.shape[-1] if b.ndim > 1 else 1)
    macs = m * n * a.shape[-1]
    flat = a.ndim <= 2 and b.ndim <= 2
    if macs < _OPENBLAS_SINGLE and flat:  # the per-op fast path
        return xp.matmul(a, b, out=out)
    if m == 1 and flat:  # (a batch-1 Linear: on numba's threads, see gemv)
        done = gemv.one_row(a, b, out)
        if done is not None:
            return done
    batch = () if flat else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    # a skinny result (≤ 16 rows or columns: a GEMV, or a weight gradient of a layer with few
    # channels) splits poorly across threads whatever its length; a small tall one splits
    # well (196×288×64 87 → 68 µs on two threads back to back) but after single-threaded
    # work took ~300 µs on two (the wake-up): a batch-1 CNN's step was 10–20 % slower
    small = macs < _single_below or min(m, n) <= _SKINNY
    if not small or macs * prod(batch) < _OPENBLAS_SINGLE:
        return xp.matmul(a, b, out=out)
    found = threads.blas_to_one_thread()  # (inline, not one_thread_each: ~2 µs a product)
    try:
        if not batch or batch[0] == 1 or a.ndim < 2 or b.ndim < 2:
            return xp.matmul(a, b, out=out)
        return _batch_in_parallel(a, b, batch, out)
    finally:
        threads.restore_blas_threads(found)


@contextmanager
def one_thread_each() -> Iterator[None]:
    """BLAS on one thread inside the block, so that products run side by side on Ember's own
    threads (:func:`ember.backend.parallel.run`) rather than each splitting over the cores;
    the thread count is restored after. (:func:`matmul` called from such a thread leaves the
    count alone.)

    Example:
        >>> with gemm.one_thread_each():
        ...     parallel.run([partial(np.matmul, a, b, out=c) for a, b, c in pieces])
    """
    found = threads.blas_to_one_thread()
    try:
        yield
    finally:
        threads.restore_blas_threads(found)


def _batch_in_parallel(a: np.ndarray, b: np.ndarray, batch: tuple[int, ...],
                       out: np.ndarray | None) -> np.ndarray:
    """A batch of small products (attention's (B, H, L, L) scores) with its matrices shared
    among the cores, each product on one BLAS thread: two BLAS threads inside each small GEMM
    synchronise for every matrix; pieces of the batch (up to four a core), each one batched
    NumPy call, go to the threads in turn (measured on gpt's (16, 4, 128, 64) products: two
    halves were 2-5 % faster than a call per leading index; eight pieces time as two)."""
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if out is None:
        out = np.empty(batch + (a.shape[-2], b.shape[-1]), np.result_type(a, b))
    shares = parallel.blocks(batch[0], parallel.share_count(batch[0], 1))
    parallel.run([partial(np.matmul, a[lo:hi], b[lo:hi], out=out[lo:hi]) for lo, hi in shares])
    return out


_COLUMN_SUMS = compiled.register("ember.backend.column_sums_numba")
_GEMV_SUM_MIN = 1 << 14  # elements: below, NumPy's reduction is as fast
_GEMV_ROWS = 1 << 18  # rows per GEMV: longer sums add the blocks' sums
_ones: dict[Any, np.ndarray] = {}  # per dtype, a vector of ones of up to _GEMV_ROWS
_HALF = (dtypes.float16.np, dtypes.bfloat16.np)


def sum_leading(xp: Any, a: Any, axes: tuple[int, ...]) -> Any:
    """The sum of a float32/float64 NumPy array over ``axes`` (kept as size 1), when those
    axes lead in memory (a bias's gradient: the batch and, for a channels-last image, its
    pixels), as column sums of its rows: numba's, in float64
    (:mod:`ember.backend.column_sums_numba`), else one GEMV with a vector of ones; None
    otherwise. NumPy reduces such axes one row at a time, 4-8× slower, and less accurately
    (measured on (100352, 32): 1.7 ms against 0.2 ms, max error 7e-3 against 2e-3; numba's
    3e-5).

    Example:
        >>> gemm.sum_leading(np, np.ones((4096, 8), np.float32), (0,)).shape
        (1, 8)
    """
    if a.size < _GEMV_SUM_MIN or not axes or len(axes) == a.ndim or xp is not np or \
            a.dtype not in (np.float32, np.float64):  # (the cheap tests first: every sum asks)
        return None
    axes = sorted(axes, key=lambda i: -a.strides[i])
    rows = a.transpose(axes + [i for i in range(a.ndim) if i not in axes])
    if not rows.flags.c_contiguous:
        return None
    m = prod(a.shape[i] for i in axes)
    rows = rows.reshape(m, -1)
    kernels = compiled.load(_COLUMN_SUMS) if compiled.numba_enabled() else None
    if kernels is not None and rows.flags.aligned:  # (the kernel's signatures)
        total = np.empty(rows.shape[1], a.dtype)
        kernels.column_sums(rows, total)
    else:
        total = _gemv_sum(xp, rows)
    return total.reshape(tuple(1 if i in axes else n for i, n in enumerate(a.shape)))


def _gemv_sum(xp: Any, rows: Any) -> Any:
    """The column sums of ``rows`` as GEMVs with a vector of ones (blocks of rows added)."""
    m = rows.shape[0]
    block = min(m, _GEMV_ROWS)
    ones = _ones.get(rows.dtype)
    if ones is None or ones.size < block:
        ones = _ones[rows.dtype] = np.ones(block, rows.dtype)
    total = matmul(xp, ones[:block], rows[:block])
    for start in range(block, m, block):
        part = rows[start:start + block]
        total += matmul(xp, ones[:part.shape[0]], part)
    return total


def sum_axes(xp: Any, a: Any, axes: tuple[int, ...]) -> Any:
    """The sum of ``a`` over ``axes`` (kept as size 1): :func:`sum_leading` where it applies,
    else the array library's own sum.

    Example:
        >>> gemm.sum_axes(np, np.ones((2, 3)), (0,))
        array([[2., 2., 2.]])
    """
    total = sum_leading(xp, a, axes)
    if total is not None:
        return total
    # (the array's own method: NumPy's ``np.sum`` wrapper costs 2-3 µs more a call)
    if a.dtype in _HALF:  # added in float32, as PyTorch's (a float16 running sum stops at 2048)
        return a.sum(axis=axes, keepdims=True, dtype=np.float32).astype(a.dtype)
    return a.sum(axis=axes, keepdims=True)
