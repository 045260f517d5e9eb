"""Fixtures shared by the test packages."""

import os
import sys
import tempfile

import pytest

# The suite starts ~80 Python processes (MPI ranks, CLI runs). Where the environment forbids
# writing bytecode, each compiled all of Ember from source: 2.6 s of CPU per `import ember`
# instead of 1.3 s. They (and the xdist workers) share compiled bytecode under the temporary
# folder instead, which keeps the source tree free of it all the same.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "ember-test-pycache")

# What Ember keeps between runs (the jit's compiled loops, the hub's downloads) goes to a
# folder of the suite's, shared by its processes, not to the user's ~/.cache/ember.
os.environ["EMBER_HOME"] = os.path.join(tempfile.gettempdir(), "ember-test-home")


@pytest.fixture(scope="session", autouse=True)
def torch_threads_shared_among_xdist_workers():
    """Under pytest-xdist (``-n N``) gives torch, the reference, each worker's share of the
    cores. Its OpenMP threads (one per core in every worker) spin against each other: ResNet-18's
    agreement test took 35 s of CPU on two threads per worker, 15 s on one. (Ember's own
    threads are left alone: its parallel paths are under test.)"""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and "torch" in sys.modules:
        from ember.backend import cpu_count

        share = max(1, cpu_count() // workers)
        sys.modules["torch"].set_num_threads(share)
    yield


@pytest.fixture
def threads_restored():
    """Restores the BLAS thread count a test changes."""
    import ember

    saved = ember.get_num_threads()
    yield
    ember.set_num_threads(saved)


@pytest.fixture(params=["numba", "numpy"])
def numba_or_numpy(request):
    """Runs a test with numba's kernels (skipped without numba), then with their NumPy
    twins."""
    from ember.backend import compiled

    if request.param == "numba":
        pytest.importorskip("numba")
    saved = compiled.numba_enabled()
    compiled.use_numba(request.param == "numba")
    yield request.param
    still_on = compiled.numba_enabled()
    compiled.use_numba(saved)
    # a kernel that fails to load turns numba off with a warning: NumPy was compared with NumPy
    assert still_on or request.param == "numpy", "numba's kernels turned off during the test"
