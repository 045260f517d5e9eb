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
    still_on = compiled.numba_enabled()
    compiled.use_numba(saved)
    # a kernel that fails to load turns numba off with a warning: NumPy was compared with NumPy
    assert still_on or request.param == "numpy", "numba's kernels turned off during the test"
