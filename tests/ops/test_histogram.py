"""histogram against PyTorch: int and tensor bins, range, weight, density, edge cases."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import assert_same, raises_like_torch

RNG = np.random.default_rng(0)
DATA = RNG.standard_normal(500).astype(np.float32)


def _lib(lib, v):
    return lib.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize("x,bins,kw", [
    (np.array([1.0, 2, 1, 2.5, 4], np.float32), 3, {}),
    (np.ones(3, np.float32), 2, {}),
    (np.zeros(0, np.float32), 2, {}),
    (np.array([1.0, 2, 1, 2.5, 4], np.float32), np.array([0.0, 1, 2, 4], np.float32), {}),
    (np.array([1.0, 2, 1, 2.5, 4], np.float32), 2,
     {"range": (0.0, 2.0), "weight": np.array([1.0, 2, 3, 4, 5], np.float32), "density": True}),
    (DATA, 17, {}),
    (DATA.reshape(20, 25).astype(np.float64), 10, {"range": (-1, 1.5), "density": True}),
    (DATA, np.sort(RNG.standard_normal(12)).astype(np.float32), {"weight": np.abs(DATA)}),
    (np.array([0.0, 1.0, np.nan], np.float32), 4, {"range": (0.0, 1.0)}),
])
def test_histogram_matches_torch(x, bins, kw):
    def run(lib):
        return lib.histogram(_lib(lib, x), _lib(lib, bins),
                             **{k: _lib(lib, v) for k, v in kw.items()})
    mine = run(ember)
    assert_same(tuple(mine), tuple(run(torch)), rtol=1e-6, atol=1e-6)
    assert mine.hist is mine[0]


def test_histogram_errors():
    x = lambda lib: lib.tensor([1.0, 2.0, 4.0])  # noqa: E731
    raises_like_torch(lambda lib: lib.histogram(x(lib), 0), ValueError, "bins must be > 0")
    raises_like_torch(lambda lib: lib.histogram(x(lib), 2, range=(2.0, 1.0)), ValueError,
                      "min should not exceed max")
    raises_like_torch(lambda lib: lib.histogram(x(lib), 2, weight=lib.ones(2)),
                      ember.ShapeError, "weight")
    raises_like_torch(lambda lib: lib.histogram(x(lib), lib.tensor([[1.0, 2.0]])),
                      ember.ShapeError, "one dimension")
    raises_like_torch(lambda lib: lib.histogram(x(lib), lib.tensor([0.0, 1.0],
                                                                     dtype=lib.float64)),
                      ember.DTypeError, "one dtype")
    raises_like_torch(lambda lib: lib.histogram(lib.tensor([1.0, float("nan")]), 2),
                      ValueError, "not finite")
    with pytest.raises(ember.DTypeError, match="floating"):
        ember.histogram(ember.tensor([1, 2]), 2)
    for edges in ([1.0], []):  # were bare index errors
        raises_like_torch(lambda lib, e=edges: lib.histogram(x(lib), lib.tensor(e)),
                          ember.ShapeError, "at least 2")
