"""Thread control for the BLAS library NumPy links (OpenBLAS, MKL, BLIS…)."""

from __future__ import annotations

import os

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None
_libraries: tuple[list, int] | None = None  # (BLAS library controllers, their thread count)


def _blas() -> ThreadpoolController:
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller


def blas_libraries() -> tuple[list, int]:
    """The loaded BLAS libraries' threadpoolctl controllers and their thread count (cached;
    :func:`set_num_threads` updates it): what the GEMM kernel choice toggles."""
    global _libraries
    if _libraries is None:
        libs = [lib for lib in _blas().lib_controllers if lib.user_api == "blas"]
        _libraries = (libs, max((lib.num_threads for lib in libs), default=1))
    return _libraries


def blas_info() -> list[dict]:
    """One record per BLAS library loaded: its name, version, threading layer and threads."""
    return [{k: lib.get(k) for k in ("internal_api", "version", "threading_layer",
                                     "num_threads", "architecture")}
            for lib in _blas().info() if lib.get("user_api") == "blas"]


def set_num_threads(n: int) -> None:
    """Sets the number of threads BLAS uses for matmul and convolutions.

    Example:
        >>> ember.set_num_threads(2); ember.get_num_threads()
        2
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: expected a positive int, got {n!r}")
    global _libraries
    _blas().limit(limits=n, user_api="blas")
    _libraries = None  # re-read the thread count


def get_num_threads() -> int:
    """The number of threads BLAS uses (the largest over loaded BLAS libraries)."""
    counts = [lib["num_threads"] for lib in blas_info()]
    return max(counts) if counts else 1


def cpu_count() -> int:
    """Cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_interop_threads: int | None = None


def set_num_interop_threads(n: int) -> None:
    """Sets the number of threads for running independent ops at once (PyTorch's inter-op
    pool). Ember runs one op at a time and parallelises inside ops (see
    :func:`set_num_threads`), so the count is recorded for code that reads it back.

    Example:
        >>> ember.set_num_interop_threads(2); ember.get_num_interop_threads()
        2
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_interop_threads: expected a positive int, got {n!r}")
    global _interop_threads
    _interop_threads = n


def get_num_interop_threads() -> int:
    """The inter-op thread count: what :func:`set_num_interop_threads` set, else the cores
    this process may use (PyTorch's default).

    Example:
        >>> ember.get_num_interop_threads() >= 1
        True
    """
    return cpu_count() if _interop_threads is None else _interop_threads
