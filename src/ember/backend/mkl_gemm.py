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
from typing import Any

import numpy as np

from ember.backend import threads

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enums
_INTEL_THREADS = 0  # MKL_THREADING_INTEL: Intel's OpenMP
_routines: dict[Any, Any] | None = None  # dtype → cblas_?gemm, once loaded ({} if absent)


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


def _load() -> dict[Any, Any]:
    """MKL's ``cblas_sgemm``/``cblas_dgemm`` by dtype, loaded once with as many threads as
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
    for dtype, name, scalar in ((np.float32, "cblas_sgemm", ctypes.c_float),
                                (np.float64, "cblas_dgemm", ctypes.c_double)):
        gemm = getattr(lib, name)
        gemm.restype = None
        gemm.argtypes = [ctypes.c_int] * 6 + [scalar, ctypes.c_void_p, ctypes.c_int,
                                              ctypes.c_void_p, ctypes.c_int, scalar,
                                              ctypes.c_void_p, ctypes.c_int]
        _routines[np.dtype(dtype)] = gemm
    return _routines


def available() -> bool:
    """Whether MKL computes Ember's large float32/float64 matrix products."""
    return bool(_load())


def _operand(x: np.ndarray, rows: int, cols: int) -> tuple[int, int] | None:
    """(CBLAS transpose flag, leading dimension) for a matrix with one unit stride."""
    size = x.itemsize
    if x.strides[1] == size and x.strides[0] % size == 0 and x.strides[0] >= cols * size:
        return _NO_TRANS, x.strides[0] // size
    if x.strides[0] == size and x.strides[1] % size == 0 and x.strides[1] >= rows * size:
        return _TRANS, x.strides[1] // size
    return None


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """``a @ b`` (into ``out`` if given) by MKL, for 2-D float32 or float64 matrices of one
    dtype, each with a unit stride in one dimension, ``out`` row-contiguous and apart from
    both; None elsewhere (or without MKL): then NumPy's matmul runs it."""
    gemm = _load().get(a.dtype)
    if gemm is None or b.dtype != a.dtype or a.ndim != 2 or b.ndim != 2 or \
            not (a.flags.aligned and b.flags.aligned):
        return None
    (m, k), n = a.shape, b.shape[1]
    left, right = _operand(a, m, k), _operand(b, k, n)
    if left is None or right is None or b.shape[0] != k or 0 in (m, n, k):
        return None
    if out is None:
        out = np.empty((m, n), a.dtype)
    elif out.shape != (m, n) or out.dtype != a.dtype or out.strides[1] != a.itemsize or \
            out.strides[0] < n * a.itemsize or out.strides[0] % a.itemsize or \
            not out.flags.aligned or not out.flags.writeable or \
            np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    gemm(_ROW_MAJOR, left[0], right[0], m, n, k, 1.0, a.ctypes.data, left[1],
         b.ctypes.data, right[1], 0.0, out.ctypes.data, out.strides[0] // a.itemsize)
    return out
