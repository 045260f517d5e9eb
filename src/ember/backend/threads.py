"""Thread control for the BLAS library NumPy links (OpenBLAS, MKL, BLIS…)."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import Any

from threadpoolctl import ThreadpoolController

from ember.errors import ArgumentError

_controller: ThreadpoolController | None = None
_libraries: tuple[list, int] | None = None  # (BLAS library controllers, their thread count)
_switches: list[tuple[Callable[[], int], Callable[[int], object]]] | None = None


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


def _runs_own_threads(lib: object) -> bool:
    """Whether ``lib`` is an OpenBLAS that runs its own (pthreads) workers."""
    return lib.internal_api == "openblas" and getattr(lib, "threading_layer", None) == "pthreads"


def openblas_functions(lib: Any, *names: str) -> tuple[list[Any], str] | None:
    """The C functions ``names`` of the loaded OpenBLAS ``lib`` (a threadpoolctl controller)
    under the first symbol prefix ("", "scipy_": NumPy ≥ 2's wheels) and suffix ("", "64_",
    "_64": ILP64 builds) that has them all, with that suffix; None where no naming has them
    all or the library cannot be opened.

    Example:
        >>> libs, _ = blas_libraries()
        >>> found = [openblas_functions(lib, "openblas_get_num_threads") for lib in libs]
        >>> all(f is None or callable(f[0][0]) for f in found)
        True
    """
    try:
        dll = ctypes.CDLL(lib.filepath)  # (already loaded: the same handle)
    except (OSError, TypeError):
        return None
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            found = [getattr(dll, f"{prefix}{name}{suffix}", None) for name in names]
            if None not in found:
                return found, suffix
    return None


def _switch(lib: object) -> tuple[Callable[[], int], Callable[[int], object]]:
    """(get, set) of one BLAS library's thread count: OpenBLAS's own C functions where it
    runs its own threads (pthreads), else threadpoolctl's (which adds ~1.5 µs a call)."""
    if _runs_own_threads(lib):
        found = openblas_functions(lib, "openblas_get_num_threads", "openblas_set_num_threads")
        if found is not None:
            return found[0][0], found[0][1]
    return (lambda: lib.num_threads), lib.set_num_threads


def apply_openblas_thread_timeout() -> bool:
    """Where a loaded OpenBLAS that runs its own threads read another
    ``OPENBLAS_THREAD_TIMEOUT`` (how long its idle workers spin) than the environment's now
    (NumPy loaded it before Ember set the variable), has it read its environment again and
    stops its workers, which start again under the new setting at its next parallel call.
    Only while the process runs one thread: stopping the workers under another thread's
    product would hang both. Returns whether any library changed.

    Example:
        >>> apply_openblas_thread_timeout()  # after `import numpy; import ember`: applied
        False
    """
    if threading.active_count() > 1:
        return False
    try:
        wanted = int(os.environ.get("OPENBLAS_THREAD_TIMEOUT", "0"))
    except ValueError:
        return False
    changed = False
    for lib in blas_libraries()[0]:
        if not _runs_own_threads(lib):
            continue
        dll = ctypes.CDLL(lib.filepath)  # (already loaded: the same handle)
        read, stop, timeout = (getattr(dll, name, None) for name in (
            "openblas_read_env", "blas_thread_shutdown_", "openblas_thread_timeout"))
        if None not in (read, stop, timeout) and timeout() != wanted:
            read()
            stop()
            changed = True
    return changed


def blas_to_one_thread() -> list[int] | None:
    """Sets every loaded BLAS library to one thread; returns the counts it found, for
    :func:`restore_blas_threads`, or None where all ran on one already (a user's
    ``threadpool_limits`` is kept). ~1 µs both ways: the GEMM kernel choice calls it around
    each small product.

    Example:
        >>> found = blas_to_one_thread()
        >>> restore_blas_threads(found)
    """
    global _switches
    if _switches is None:
        _switches = [_switch(lib) for lib in blas_libraries()[0]]
    found = [get() for get, _ in _switches]
    if max(found, default=1) <= 1:
        return None
    for _, set_ in _switches:
        set_(1)
    return found


def restore_blas_threads(found: list[int] | None) -> None:
    """Gives each BLAS library back the thread count :func:`blas_to_one_thread` found."""
    if found is not None:
        for (_, set_), count in zip(_switches, found):
            set_(count)


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
        raise ArgumentError(f"set_num_threads: expected a positive int, got {n!r}")
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
        raise ArgumentError(f"set_num_interop_threads: expected a positive int, got {n!r}")
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
