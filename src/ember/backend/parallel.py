"""Independent pieces of one CPU computation, run on the cores at once.

NumPy releases the GIL inside its loops and BLAS calls, so a computation made of independent
pieces (the blocks of a float32 kernel, the matrices of a batch of small products) runs in
parallel on threads. As many threads share it as BLAS has (``ember.set_num_threads``): the
calling thread and a pool's, each taking the next piece not yet taken, so that a pool thread
that wakes late (in `gpt`'s step on a 2-core VM a median 64 µs after the call, a tenth of
the calls over 120 µs) finds fewer pieces left, or none, instead of holding up half the
work. A piece of a call with several pieces that itself calls :func:`run` runs its pieces in
its own thread (the pool is busy with the outer call); a lone piece runs in the caller as
plain code, not as a piece (the pool is free: what it calls may use it), and a child process
made by ``fork`` starts a pool of its own.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from ember.backend import threads

_pool: tuple[ThreadPoolExecutor, int] | None = None  # (the pool, its worker count)
_PIECES_PER_WORKER = 4  # at most: a late thread then waits for no more than a quarter share


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
    """Whether this thread is running a piece of a :func:`run` call with several pieces (a
    nested call then runs serially). A lone piece runs in the caller, outside: False there
    (unless that caller is itself a piece), as the pool is free for what it calls.

    Example:
        >>> seen = []
        >>> run([lambda: seen.append(inside()), lambda: None]); run([lambda: seen.append(inside())])
        >>> seen
        [True, False]
    """
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
    """Into how many pieces :func:`run` should cut ``work`` units, each of at least ``least``
    (waking a core costs more than a smaller piece saves): from 1 (no other thread) to four
    per worker.

    Example:
        >>> share_count(3 << 20, 1 << 20)  # on 2 cores
        3
    """
    return max(1, min(workers() * _PIECES_PER_WORKER, work // least))


def over_rows(kernel: Callable[..., object], arrays: Sequence[Any], least: int,
              *args: Any) -> None:
    """``kernel(*blocks, *args)`` over contiguous blocks of the rows (the first dimension) of
    ``arrays``, shared among the cores where each block has at least ``least`` rows, else
    one call.

    Example:
        >>> x = np.arange(6.0).reshape(3, 2); out = np.empty_like(x)
        >>> over_rows(np.multiply, (x, x, out), 1)  # np.multiply(x[lo:hi], x[lo:hi], out[lo:hi])
        >>> out[:, 1].tolist()
        [1.0, 9.0, 25.0]
    """
    n = arrays[0].shape[0]
    shares = share_count(n, least)
    if shares == 1:
        kernel(*arrays, *args)
        return
    run([partial(kernel, *(a[lo:hi] for a in arrays), *args) for lo, hi in blocks(n, shares)])


def sums_over_blocks(kernel: Callable[..., object], blocks: Sequence[tuple[int, int]],
                     width: int, rows: Sequence[Any], *args: Any) -> tuple[Any, Any]:
    """Two float64 ``(width,)`` sums made by ``kernel(*row blocks, *args, first, second)``:
    each ``(lo, hi)`` block of ``rows`` a piece of :func:`run`, adding into sums of its own,
    the blocks' sums then added in order (the same bits on every run).

    Example:
        >>> def kernel(g, x, first, second):  # adds into its block's own sums
        ...     first += g.sum(0); second += (g * x).sum(0)
        >>> g, x = np.ones((4, 3)), np.arange(12.0).reshape(4, 3)
        >>> total, dot = sums_over_blocks(kernel, blocks(4, 2), 3, (g, x))
        >>> total.tolist(), dot.tolist()
        ([4.0, 4.0, 4.0], [18.0, 22.0, 26.0])
    """
    sums = [(np.zeros(width), np.zeros(width)) for _ in blocks]
    run([partial(kernel, *(r[lo:hi] for r in rows), *args, *s)
         for (lo, hi), s in zip(blocks, sums)])
    return sum(s[0] for s in sums), sum(s[1] for s in sums)


def run(pieces: Sequence[Callable[[], object]]) -> None:
    """Runs every piece on :func:`workers` threads, each taking the next piece not yet
    taken, and returns when all are done; an exception in a piece is raised then (the first
    piece's, in order, of those that failed; pieces not started by then are skipped). The
    calling thread takes pieces too, so a worker that wakes late finds fewer left, or none;
    it runs a single piece itself, with no queue, as plain code (:func:`inside` stays as it
    was).

    Example:
        >>> out = [0] * 4
        >>> run([lambda i=i: out.__setitem__(i, i * i) for i in range(4)])
        >>> out
        [0, 1, 4, 9]
    """
    global _pool
    if len(pieces) <= 1:  # (one piece runs here: the queue and its lock cost ~3 µs)
        if pieces:
            pieces[0]()
        return
    queue, helpers = _Queue(pieces), min(workers(), len(pieces)) - 1
    if helpers > 0 and not inside():
        if _pool is None or _pool[1] < helpers:
            _pool = (ThreadPoolExecutor(max_workers=helpers, thread_name_prefix="ember-cpu"),
                     helpers)
        try:
            for _ in range(helpers):
                _pool[0].submit(queue.drain)
        except RuntimeError:  # the interpreter is shutting down: the caller takes them all
            pass
    queue.drain()
    queue.wait()


class _Queue:
    """Pieces that threads take one at a time (``itertools.count`` hands out each index once,
    atomically under the GIL), and a lock held until the last one is done."""

    def __init__(self, pieces: Sequence[Callable[[], object]]) -> None:
        self.pieces = pieces
        self.take = itertools.count().__next__
        self.finish = itertools.count(1).__next__
        self.errors: dict[int, BaseException] = {}
        self.all_done = threading.Lock()
        self.all_done.acquire()

    def drain(self) -> None:
        """Runs pieces until none is left to take (once one has failed, the rest are taken
        and skipped)."""
        outer, _inside.active = _inside.active, True
        try:
            while (i := self.take()) < len(self.pieces):
                try:
                    if not self.errors:
                        self.pieces[i]()
                except BaseException as error:  # raised by the caller, in order
                    self.errors[i] = error
                if self.finish() == len(self.pieces):
                    self.all_done.release()
        finally:
            _inside.active = outer  # a nested call leaves its caller's piece still inside

    def wait(self) -> None:
        """Returns when every piece is done (no thread still writing), raising the first
        piece's error."""
        self.all_done.acquire()
        self.pieces = ()  # (a pool thread that wakes now finds none, nor keeps their arrays)
        if self.errors:
            raise self.errors[min(self.errors)]
