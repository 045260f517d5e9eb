"""Independent pieces of one CPU computation, run on the cores at once.

NumPy releases the GIL inside its loops and BLAS calls, so a computation made of independent
pieces (the blocks of a float32 kernel, the matrices of a batch of small products) runs in
parallel on threads. As many threads share it as BLAS has (``ember.set_num_threads``); the
calling thread runs one share itself, a pool the others. A piece that itself calls
:func:`run` runs its pieces in its own thread (the pool is busy with the outer call), and a
child process made by ``fork`` starts a pool of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from functools import partial
from typing import Any

import numpy as np

from ember.backend import threads

_pool: tuple[ThreadPoolExecutor, int] | None = None  # (the pool, its worker count)


class _Inside(threading.local):
    active = False  # this thread is running pieces (a class default: asked at every matmul)


_inside = _Inside()


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has the pool object but none of its threads


os.register_at_fork(after_in_child=_forget_pool)


def workers() -> int:
    """How many threads share a parallel computation: the BLAS thread count."""
    return threads.blas_libraries()[1]


def inside() -> bool:
    """Whether this thread is running a piece of :func:`run` (a nested call runs serially)."""
    return _inside.active


def blocks(n: int, count: int) -> list[tuple[int, int]]:
    """``count`` contiguous ``(start, stop)`` blocks covering ``range(n)``, in order, their
    sizes within one of each other.

    Example:
        >>> blocks(10, 3)
        [(0, 3), (3, 6), (6, 10)]
    """
    return [(n * i // count, n * (i + 1) // count) for i in range(count)]


def share_count(work: int, least: int) -> int:
    """How many cores share ``work`` units when each takes at least ``least`` of them: from 1
    to :func:`workers` (waking a core costs more than a small share saves).

    Example:
        >>> share_count(3 << 20, 1 << 20)  # on 2 cores
        2
    """
    return max(1, min(workers(), work // least))


def over_rows(kernel: Callable[..., object], arrays: Sequence[Any], least: int,
              *args: Any) -> None:
    """``kernel(*blocks, *args)`` over contiguous blocks of the rows (the first dimension) of
    ``arrays``: one block per core where each takes at least ``least`` rows, else one call.

    Example:
        >>> over_rows(kernel, (x, out), 64)  # kernel(x[lo:hi], out[lo:hi]) on each core
    """
    n = arrays[0].shape[0]
    shares = share_count(n, least)
    if shares == 1:
        kernel(*arrays, *args)
        return
    run([partial(kernel, *(a[lo:hi] for a in arrays), *args) for lo, hi in blocks(n, shares)])


def _run_all(pieces: Sequence[Callable[[], object]]) -> None:
    outer, _inside.active = _inside.active, True
    try:
        for piece in pieces:
            piece()
    finally:
        _inside.active = outer  # a nested call leaves its caller's share still inside


def sums_over_blocks(kernel: Callable[..., object], blocks: Sequence[tuple[int, int]],
                     width: int, rows: Sequence[Any], *args: Any) -> tuple[Any, Any]:
    """Two float64 ``(width,)`` sums made by ``kernel(*row blocks, *args, first, second)``:
    each ``(lo, hi)`` block of ``rows`` on a core, adding into sums of its own, the blocks'
    sums then added in order (the same bits on every run).

    Example:
        >>> total, dot = sums_over_blocks(kernel, blocks(n, 2), channels, (g, x), mean)
    """
    sums = [(np.zeros(width), np.zeros(width)) for _ in blocks]
    run([partial(kernel, *(r[lo:hi] for r in rows), *args, *s)
         for (lo, hi), s in zip(blocks, sums)])
    return sum(s[0] for s in sums), sum(s[1] for s in sums)


def run(pieces: Sequence[Callable[[], object]]) -> None:
    """Runs every piece, in contiguous shares spread over :func:`workers` threads, and returns
    when all are done; an exception in a piece is raised then (the caller's share's first).

    Example:
        >>> out = [0] * 4
        >>> run([lambda i=i: out.__setitem__(i, i * i) for i in range(4)])
        >>> out
        [0, 1, 4, 9]
    """
    n = min(workers(), len(pieces))
    if n <= 1 or inside():
        _run_all(pieces)
        return
    global _pool
    if _pool is None or _pool[1] < n - 1:
        _pool = (ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="ember-cpu"), n - 1)
    (_, first), *others = blocks(len(pieces), n)
    futures = [_pool[0].submit(_run_all, pieces[lo:hi]) for lo, hi in others]
    try:
        _run_all(pieces[:first])
    finally:
        wait(futures)  # no share is still writing when this returns or raises
    for f in futures:
        f.result()
