"""OpenBLAS's spin after a GEMM: Ember's setting holds whichever of NumPy and Ember a
single-threaded program imports first; a user's own setting is kept, and a program whose
other thread runs BLAS meanwhile is left alone."""

import os
import subprocess
import sys

import pytest

from ember.backend import threads

_PROGRAM = """
import numpy as np
a = np.arange(512 * 512, dtype=np.float32).reshape(512, 512) % 7
before = a @ a  # OpenBLAS's workers start, spinning as NumPy's load read
import ctypes
import ember
from ember.backend import threads
lib = threads.blas_libraries()[0][0]
assert np.array_equal(a @ a, before) and ember.get_num_threads() == 2  # workers back
print(ctypes.CDLL(lib.filepath).openblas_thread_timeout())
"""


def _pthreads_openblas() -> bool:
    return any(lib.internal_api == "openblas" and lib.threading_layer == "pthreads"
               for lib in threads.blas_libraries()[0])


@pytest.mark.skipif(not _pthreads_openblas(), reason="NumPy's BLAS is no pthreads OpenBLAS")
@pytest.mark.parametrize("users, read", [(None, 16), ("20", 20)])
def test_openblas_reads_embers_spin_when_numpy_came_first(users, read):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env["OPENBLAS_NUM_THREADS"] = "2"
    if users is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = users
    done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == read


_BUSY = """
import threading
import numpy as np
a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) % 7
want, done = a @ a, []
def products():
    while not done:
        assert np.array_equal(a @ a, want)
worker = threading.Thread(target=products, daemon=True)
worker.start()
import ctypes
import ember
from ember.backend import threads
done.append(True)
worker.join(10)
assert not worker.is_alive()
print(ctypes.CDLL(threads.blas_libraries()[0][0].filepath).openblas_thread_timeout())
"""


@pytest.mark.skipif(not _pthreads_openblas(), reason="NumPy's BLAS is no pthreads OpenBLAS")
def test_openblas_is_left_alone_while_another_thread_may_run_it():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env["OPENBLAS_NUM_THREADS"] = "2"
    done = subprocess.run([sys.executable, "-c", _BUSY], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 0  # OpenBLAS's own default, as NumPy's load read
