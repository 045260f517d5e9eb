"""The numba-kernel benchmark: every case runs with numba, with its NumPy twin and in PyTorch,
and leaves numba on."""

import pytest

from benchmarks import kernels
from ember.backend import compiled


def test_every_case_runs_three_ways():
    pytest.importorskip("numba")
    for name, (ember_step, torch_step) in kernels.cases().items():
        for on in (True, False):
            kernels._with_numba(ember_step, on)()
            assert compiled.numba_enabled(), name
        torch_step()
