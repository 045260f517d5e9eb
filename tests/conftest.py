"""Fixtures shared by the test packages."""

import pytest


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
    compiled.use_numba(saved)
