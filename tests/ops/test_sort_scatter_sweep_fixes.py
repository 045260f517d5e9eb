"""Divergences from PyTorch found by the sorting/scatter/scan sweep, each against torch."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import assert_same


@pytest.mark.parametrize("lo,hi,bins", [(2.0, 3.0, 3), (-5.0, -4.0, 7), (4.0, 5.0, 5)])
def test_histogram_value_on_an_inner_edge_opens_the_next_bin(lo, hi, bins):
    edges = np.linspace(lo, hi, bins + 1)
    for lib in (ember, torch):  # the same edges in both, so the bins must agree
        assert np.array_equal(lib.linspace(lo, hi, bins + 1, dtype=lib.float64).numpy(), edges)
    mine, ref = (lib.histogram(lib.tensor(edges), bins) for lib in (ember, torch))
    assert_same(tuple(mine), tuple(ref))
    pts = np.stack([edges, edges[::-1]], axis=1)
    mine, ref = (lib.histogramdd(lib.tensor(pts), [bins, bins]) for lib in (ember, torch))
    assert_same(mine.hist, ref.hist)
