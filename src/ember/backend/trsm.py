"""BLAS ``trsm`` (triangular solve by substitution) from the BLAS library NumPy links.

``numpy.linalg`` has no triangular solver: solving ``T X = B`` through its LU (``solve``) is
O(n³) for an O(n² k) problem (a 256×256 triangle with one column: ~8 ms against ~10 µs for
``trsm``). The OpenBLAS that NumPy's wheels bundle exports ``cblas_?trsm``; it is called here
through ``ctypes``, one matrix of a batch at a time (~1–2 µs a call). Where no such library is
found (another BLAS, another array library, a library that cannot be opened, or an
integer width its symbol names and ``openblas_get_config`` disagree on) :func:`solve`
answers ``None`` and the caller solves another way.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from ember.backend import gemm, threads

_ROW_MAJOR, _LEFT, _UPPER, _LOWER, _NO_TRANS, _NON_UNIT, _UNIT = 101, 141, 121, 122, 111, 131, 132
_SMALL = 32  # a batch of triangles smaller than this: None (NumPy's batched LU)
_CHARS = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
          np.dtype(np.complex128): "z"}
_found: dict[np.dtype, Any] | None = None


def _index_type(suffix: str, config: bytes | None) -> Any:
    """The C integer of a ``cblas_?trsm`` whose symbol ends in ``suffix`` (``64_``/``_64``:
    an ILP64 build), checked against ``openblas_get_config``'s string where there is one
    (``USE64BITINT`` in it for ILP64); None where the two disagree (an INTERFACE64 build
    without a suffix): that library is not called."""
    wide = suffix != ""
    if config is not None and (b"USE64BITINT" in config) != wide:
        return None
    return ctypes.c_int64 if wide else ctypes.c_int


def _config(lib: Any) -> bytes | None:
    """``openblas_get_config()``'s string of the OpenBLAS ``lib``, None where it has none."""
    found = threads.openblas_functions(lib, "openblas_get_config")
    if found is None:
        return None
    get = found[0][0]
    get.restype, get.argtypes = ctypes.c_char_p, []
    return get()


def _functions() -> dict[np.dtype, Any]:
    """``cblas_?trsm`` of the loaded OpenBLAS per dtype (empty if there is none, or if its
    symbols or integer width cannot be told: the caller solves another way)."""
    global _found
    if _found is None:
        try:
            _found = _lookup()
        except (OSError, AttributeError, TypeError, ValueError):
            _found = {}
    return _found


def _lookup() -> dict[np.dtype, Any]:
    """:func:`_functions`'s search, over the loaded OpenBLAS libraries."""
    for lib in threads.blas_libraries()[0]:
        if lib.internal_api != "openblas":
            continue
        found = threads.openblas_functions(lib, *(f"cblas_{c}trsm" for c in _CHARS.values()))
        index = None if found is None else _index_type(found[1], _config(lib))
        if index is None:
            continue
        for (dtype, char), fn in zip(_CHARS.items(), found[0]):
            scalar = ctypes.c_void_p if dtype.kind == "c" else \
                (ctypes.c_float if char == "s" else ctypes.c_double)
            fn.restype = None
            fn.argtypes = [ctypes.c_int] * 5 + [index, index, scalar, ctypes.c_void_p, index,
                                                 ctypes.c_void_p, index]
        return dict(zip(_CHARS, found[0]))
    return {}


def solve(xp: Any, t: Any, b: Any, upper: bool, unit: bool = False) -> Any:
    """``X`` with ``T X = B`` for a batch of ``(n, n)`` triangles ``t`` (only the ``upper``
    or lower triangle read, its diagonal as ones if ``unit``) and ``(…, n, k)`` right sides
    of the same batch, by BLAS ``trsm``; ``None`` where no ``trsm`` is at hand for these
    arrays, or for a batch of small triangles (NumPy's batched LU is faster than a call
    each).

    Example:
        >>> solve(np, np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[2.0], [3.0]]), False)
        array([[1.],
               [2.]])
    """
    fn = _functions().get(b.dtype) if xp is np and t.dtype == b.dtype else None
    *batch, n, k = b.shape
    count = math.prod(batch)
    if fn is None or (count > 1 and n < _SMALL):
        return None
    x = np.array(b, order="C", copy=True)
    if not x.size:
        return x
    if t.shape != b.shape[:-1] + (n,):
        t = np.broadcast_to(t, b.shape[:-1] + (n,))
    t = np.ascontiguousarray(t)
    one = np.ones((), b.dtype)  # (kept alive: complex alpha goes by pointer)
    alpha = one.ctypes.data if b.dtype.kind == "c" else 1.0
    step_t, step_x = n * n * t.itemsize, n * k * x.itemsize
    at, ax = t.ctypes.data, x.ctypes.data
    uplo, diag = _UPPER if upper else _LOWER, _UNIT if unit else _NON_UNIT
    # OpenBLAS splits even a 16×16 solve over its threads, and each call wakes them: under
    # load 32×32 k=32 took 46 µs against 10 on one thread; gemm's rule (a batch: one each)
    found = threads.blas_to_one_thread() if gemm.one_thread(n * n * k, count) else None
    try:
        for i in range(count):
            fn(_ROW_MAJOR, _LEFT, uplo, _NO_TRANS, diag, n, k, alpha, at + i * step_t, n,
               ax + i * step_x, k)
    finally:
        threads.restore_blas_threads(found)
    return x
