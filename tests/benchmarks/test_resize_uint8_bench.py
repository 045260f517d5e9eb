"""The uint8 resize benchmark: its columns are what they say (numba left off stays off, and
its column is then left out)."""

import pytest

from benchmarks import resize_uint8
from ember.backend import compiled


@pytest.fixture
def numba_restored():
    saved = compiled.numba_enabled()
    yield
    compiled.use_numba(saved)


def test_numba_off_stays_off_and_has_no_column(numba_restored):
    compiled.use_numba(False)  # as EMBER_NUMBA=0
    line = resize_uint8._case(1, 12, 5, "bilinear", True, repeats=1)
    # before: the NumPy column turned numba back on, and the "numba" column timed it after
    assert not compiled.numba_enabled()
    assert "numba" not in line and "numpy" in line and "torch" in line


def test_numba_on_has_all_three_columns(numba_restored):
    pytest.importorskip("numba")
    compiled.use_numba(True)
    line = resize_uint8._case(1, 12, 5, "bicubic", False, repeats=1)
    assert compiled.numba_enabled()
    assert "numba" in line and "numpy" in line and "torch" in line
