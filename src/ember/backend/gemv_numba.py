"""A one-row product ``x @ W.T`` (a Linear layer's forward on one sample), with its bias and
relu if asked, in numba, its rows shared by numba's OpenMP threads (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :func:`ember.backend.gemm.matmul`,
and with its bias and relu by :func:`ember.backend.gemm.one_row`).

A GEMV reads each weight once: it is bound by memory, so it runs at the speed of the cores
that read. OpenBLAS runs a batch-1 network's GEMVs on one thread (waking its sleeping second
thread costs more than it saves: see :mod:`ember.backend.gemm`), and Ember's own pool wakes
through a condition variable, ~50 µs a call. OpenMP's threads spin for a while after each
parallel region, so the next layer's product starts at once: a 784→1024→1024→10 chain
measured 134 µs against 214 µs on one OpenBLAS thread and 147 µs for PyTorch (2 cores).
Only with OpenMP's threads (numba's ``omp`` layer); GNU OpenMP is not safe across ``fork``, so a
child forked once numba's threads started leaves it to BLAS.
"""

from __future__ import annotations

import os

import numba
from numba import prange, types

from ember.backend.compiled import njit

_SIGNATURES = [types.void(types.Array(f, 1, "C"), types.Array(f, 2, "C"), types.Array(f, 1, "C"),
                          types.Array(f, 1, "C"), types.intp, types.intp)
               for f in (types.float32, types.float64)]
_FINISH_SIGNATURES = [f(f, types.Array(f, 1, "C"), types.intp, types.intp)
                      for f in (types.float32, types.float64)]
_SPIN = "20000"  # GNU OpenMP's spins before a thread sleeps (its default, 300 000, ~3.5 ms here)


def _start_threads() -> bool:
    """Starts numba's threads now; whether they are OpenMP's (another layer's sleep between
    products, and the kernel would be slower than BLAS). GNU OpenMP reads how long its idle
    threads spin when it starts: a layer's products are ~10-40 µs apart, and a thread
    spinning after the last one slows what runs next (a training step 25 % for ~3 ms), so it
    spins ~0.2 ms unless ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` say otherwise."""
    ours = not {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"} & os.environ.keys()
    if ours:
        os.environ["GOMP_SPINCOUNT"] = _SPIN
    try:
        numba.get_num_threads()  # (launches the threading layer)
    finally:
        if ours:
            del os.environ["GOMP_SPINCOUNT"]
    return numba.threading_layer() == "omp"


OPENMP = _start_threads()


@njit(_FINISH_SIGNATURES, own_flags=True)
def _finish(total, bias, j, epilogue):
    """Row ``j``'s value from its sum: plus ``bias[j]`` if ``epilogue & 1``, then relu if
    ``epilogue & 2`` (NaN and -0.0 kept, as eager's relu). Its own flags: the
    sum's reassociation cannot reach the bias's addition, so each step rounds as eager's."""
    if epilogue & 1:
        total = total + bias[j]
    if epilogue & 2 and total < 0:
        return 0.0  # (in the dtype: the signature's)
    return total


@njit(_SIGNATURES, reassociate=True, parallel=True)
def rows_times(x, w, bias, out, parts, epilogue):
    """``out[j] = Σ_i w[j, i] · x[i]``, finished by :func:`_finish` (a bias, a relu), the rows
    of ``w`` split into ``parts`` contiguous blocks, one per thread; each sum runs in the
    dtype, in vectorized partial sums."""
    n, k = w.shape
    for p in prange(parts):
        for j in range(n * p // parts, n * (p + 1) // parts):
            total = w[j, 0] * x[0]  # (k > 0: the caller sends no empty rows)
            for i in range(1, k):
                total += w[j, i] * x[i]
            out[j] = _finish(total, bias, j, epilogue)
