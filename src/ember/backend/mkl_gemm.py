"""Intel MKL's GEMM for Ember's large matrix products, where the optional ``mkl`` package is
installed (``pip install 'ember[mkl]'``; ``EMBER_MKL=0`` leaves it unused).

NumPy's OpenBLAS runs the rest. On this project's 2-core x86 hosts (AVX-512), MKL's own two
threads took the large float32 products of `gpt`'s step ~10 % faster than OpenBLAS's on an idle
host (2048×256×1024: 338 against 302 GFLOP/s; PyTorch, whose CPU build uses MKL, 341), and far
faster while other jobs load the cores, where OpenBLAS's threads wait for a descheduled partner
(5 December, interleaved in one process: compiled `mlp` step 74.6 → 26.0 ms, `gpt` 1977 →
1182 ms). MKL's OpenMP threads go to sleep as soon as a product ends (``KMP_BLOCKTIME=0``
unless the environment sets it), so they leave the cores to Ember's own threads between
products.

Example:
    >>> mkl_gemm.available() in (True, False)
    True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.metadata
import os
from typing import Any, NamedTuple

import numpy as np

from ember.backend import threads

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enums
_INTEL_THREADS = 0  # MKL_THREADING_INTEL: Intel's OpenMP


class _Routines(NamedTuple):
    gemm: Any  # cblas_?gemm
    batched: Any  # cblas_?gemm_batch (the group interface: one group)
    scalar: Any  # the ctypes type of alpha and beta


_routines: dict[Any, _Routines] | None = None  # by dtype, once loaded ({} without MKL)


def library_path() -> str | None:
    """Where ``libmkl_rt`` is: the ``mkl`` package's copy, else one the system's loader
    finds; None without MKL or with ``EMBER_MKL=0``."""
    if os.environ.get("EMBER_MKL", "1") == "0":
        return None
    try:
        files = importlib.metadata.files("mkl") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name.startswith("libmkl_rt.so"):
            return str(file.locate())
    return ctypes.util.find_library("mkl_rt")


def _load() -> dict[Any, _Routines]:
    """MKL's float32 and float64 routines by dtype, loaded once with as many threads as
    BLAS has now; {} where MKL is absent or fails to load."""
    global _routines
    if _routines is not None:
        return _routines
    _routines = {}
    path = library_path()
    if path is None:
        return _routines
    os.environ.setdefault("KMP_BLOCKTIME", "0")  # (read when MKL starts its OpenMP threads)
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return _routines
    lib.MKL_Set_Threading_Layer(ctypes.c_int(_INTEL_THREADS))
    lib.MKL_Set_Num_Threads(ctypes.c_int(threads.blas_libraries()[1]))
    threads.forget_libraries()  # thread settings now reach MKL too
    ints = ctypes.POINTER(ctypes.c_int)  # (MKL_INT: 32-bit in MKL's default interface)
    for dtype, prefix, scalar in ((np.float32, "s", ctypes.c_float),
                                  (np.float64, "d", ctypes.c_double)):
        gemm, batched = (getattr(lib, f"cblas_{prefix}gemm{kind}") for kind in ("", "_batch"))
        gemm.restype = batched.restype = None
        gemm.argtypes = [ctypes.c_int] * 6 + [scalar, ctypes.c_void_p, ctypes.c_int,
                                              ctypes.c_void_p, ctypes.c_int, scalar,
                                              ctypes.c_void_p, ctypes.c_int]
        batched.argtypes = [ctypes.c_int] + [ints] * 5 + [
            ctypes.POINTER(scalar), ctypes.c_void_p, ints, ctypes.c_void_p, ints,
            ctypes.POINTER(scalar), ctypes.c_void_p, ints, ctypes.c_int, ints]
        _routines[np.dtype(dtype)] = _Routines(gemm, batched, scalar)
    return _routines


def available() -> bool:
    """Whether MKL computes Ember's large float32/float64 matrix products."""
    return bool(_load())


def _operand(x: np.ndarray, rows: int, cols: int) -> tuple[int, int] | None:
    """(CBLAS transpose flag, leading dimension) for matrices with one unit stride."""
    size, (row, col) = x.itemsize, x.strides[-2:]
    if col == size and row % size == 0 and row >= cols * size:
        return _NO_TRANS, row // size
    if row == size and col % size == 0 and col >= rows * size:
        return _TRANS, col // size
    return None


def _apart(x: np.ndarray) -> bool:
    """Whether no two elements of ``x`` share memory (each dimension, by stride, steps past
    the span of the smaller ones)."""
    span = x.itemsize
    for size, stride in sorted(((n, abs(s)) for n, s in zip(x.shape, x.strides) if n > 1),
                               key=lambda dim: dim[1]):
        if stride < span:
            return False
        span = stride * (size - 1) + span
    return True


def _addresses(x: np.ndarray) -> np.ndarray:
    """The address of each matrix of a stack, in C order of its batch dimensions."""
    offsets = np.zeros((), np.intp)
    for size, stride in zip(x.shape[:-2], x.strides[:-2]):
        offsets = offsets[..., None] + np.arange(size, dtype=np.intp) * stride
    return (offsets + x.ctypes.data).ravel()


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """``a @ b`` (into ``out`` if given) by MKL, for float32 or float64 matrices, or stacks of
    them with one batch shape, of one dtype, each matrix with a unit stride in one dimension,
    ``out``'s rows contiguous, its elements apart from each other and from both; None
    elsewhere (or without MKL): then NumPy's matmul runs it. A stack is one
    ``cblas_?gemm_batch`` call, its matrices shared among MKL's threads."""
    routines = _load().get(a.dtype)
    if routines is None or b.dtype != a.dtype or a.ndim < 2 or b.ndim != a.ndim or \
            a.shape[:-2] != b.shape[:-2] or not (a.flags.aligned and b.flags.aligned):
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    left, right = _operand(a, m, k), _operand(b, k, n)
    if left is None or right is None or b.shape[-2] != k or 0 in a.shape or 0 in b.shape:
        return None
    shape = a.shape[:-2] + (m, n)
    if out is None:
        out = np.empty(shape, a.dtype)
    elif out.shape != shape or out.dtype != a.dtype or out.strides[-1] != a.itemsize or \
            out.strides[-2] < n * a.itemsize or out.strides[-2] % a.itemsize or \
            not out.flags.aligned or not out.flags.writeable or not _apart(out) or \
            np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    ldc = out.strides[-2] // a.itemsize
    if a.ndim == 2:
        routines.gemm(_ROW_MAJOR, left[0], right[0], m, n, k, 1.0, a.ctypes.data, left[1],
                      b.ctypes.data, right[1], 0.0, out.ctypes.data, ldc)
        return out
    one, scalar = ctypes.c_int * 1, routines.scalar
    matrices = [_addresses(x) for x in (a, b, out)]  # (held until MKL returns)
    routines.batched(_ROW_MAJOR, one(left[0]), one(right[0]), one(m), one(n), one(k),
                     scalar(1.0), matrices[0].ctypes.data, one(left[1]),
                     matrices[1].ctypes.data, one(right[1]), scalar(0.0),
                     matrices[2].ctypes.data, one(ldc), 1, one(len(matrices[2])))
    return out
