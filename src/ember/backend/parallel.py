"""Independent pieces of one CPU computation, run on the cores at once.

NumPy releases the GIL inside its loops and BLAS calls, so a computation made of independent
pieces (the blocks of a float32 kernel, the matrices of a batch of small products) runs in
parallel on threads. As many threads share it as BLAS has (``ember.set_num_threads``); the
calling thread runs one share itself, a pool the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ember.backend import threads

_pool: tuple[ThreadPoolExecutor, int] | None = None  # (the pool, its worker count)


def workers() -> int:
    """How many threads share a parallel computation: the BLAS thread count."""
    return threads.blas_libraries()[1]


def _run_all(pieces: Sequence[Callable[[], object]]) -> None:
    for piece in pieces:
        piece()


def run(pieces: Sequence[Callable[[], object]]) -> None:
    """Runs every piece, in contiguous shares spread over :func:`workers` threads, and returns
    when all are done (an exception in a piece is raised here).

    Example:
        >>> out = np.empty(4)
        >>> run([lambda: out.__setitem__(0, 1.0), lambda: out.__setitem__(slice(1, None), 2.0)])
    """
    n = min(workers(), len(pieces))
    if n <= 1:
        _run_all(pieces)
        return
    global _pool
    if _pool is None or _pool[1] < n - 1:
        _pool = (ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="ember-cpu"), n - 1)
    bounds = [len(pieces) * i // n for i in range(n + 1)]
    futures = [_pool[0].submit(_run_all, pieces[lo:hi])
               for lo, hi in zip(bounds[1:-1], bounds[2:])]
    try:
        _run_all(pieces[:bounds[1]])
    finally:
        for f in futures:
            f.result()
