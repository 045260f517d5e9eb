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
    raises_like_torch(lambda lib: lib.histogram(x(lib), 0), RuntimeError, "bins must be > 0")
    raises_like_torch(lambda lib: lib.histogram(x(lib), 2, range=(2.0, 1.0)), RuntimeError,
                      "min should not exceed max")
    raises_like_torch(lambda lib: lib.histogram(x(lib), 2, weight=lib.ones(2)),
                      ember.ShapeError, "weight")
    raises_like_torch(lambda lib: lib.histogram(x(lib), lib.tensor([[1.0, 2.0]])),
                      ember.ShapeError, "one dimension")
    raises_like_torch(lambda lib: lib.histogram(x(lib), lib.tensor([0.0, 1.0],
                                                                     dtype=lib.float64)),
                      ember.DTypeError, "one dtype")
    raises_like_torch(lambda lib: lib.histogram(lib.tensor([1.0, float("nan")]), 2),
                      RuntimeError, "not finite")
    with pytest.raises(ember.DTypeError, match="floating"):
        ember.histogram(ember.tensor([1, 2]), 2)
    for edges in ([1.0], []):  # were bare index errors
        raises_like_torch(lambda lib, e=edges: lib.histogram(x(lib), lib.tensor(e)),
                          ember.ShapeError, "at least 2")
    for rng in ((0.0, 1.0, 2.0), (0.0,), ()):  # (0, 1, 2) was taken as (0, 1); (0,) an IndexError
        with pytest.raises(RuntimeError, match=f"should have 2 elements, but got {len(rng)}"):
            torch.histogram(x(torch), 2, range=rng)
        with pytest.raises(RuntimeError, match=f"histogram: for a 1-dimensional histogram range "
                           f"should have 2 elements, but got {len(rng)}"):
            ember.histogram(x(ember), 2, range=rng)


_X2 = np.random.default_rng(1).random((10, 2)).astype(np.float32)


@pytest.mark.parametrize("bins,kw,match", [
    # one fault each
    ([3, 4, 5], {}, "size of bins"),
    (-1, {}, "bins must be > 0"),
    ([3, 0], {}, "bins must be > 0"),
    (["e", "e2d"], {}, "bin edges"),
    (["e1", "e"], {}, "bin edges"),
    (["e64", "e"], {}, "one dtype"),
    (3, {"range": [1.0, 0.0, 0.0, 1.0]}, "min should not exceed max"),
    (3, {"weight": "w64"}, "weight"),
    # two faults: the one PyTorch checks first is the one named
    ([3, 4, 5], {"range": [0.0, 1.0]}, "range should have 4 elements"),
    ([3, 4, 5], {"weight": "w9"}, "size of bins"),
    ([0, 3], {"range": [0.0, 1.0, 1.0, 0.0]}, "min should not exceed max"),
    (-1, {"weight": "w9"}, "bins must be > 0"),
    (["e", "e2d"], {"weight": "w9"}, "bin edges"),
    (["e64", "e2d"], {}, "one dtype"),
])
def test_histogramdd_bins_errors_are_torchs_class_in_torchs_order(bins, kw, match):
    def run(lib):
        made = {"e": lib.tensor([0.0, 1.0]), "e1": lib.tensor([0.0]),
                "e2d": lib.tensor([[0.0, 1.0]]), "e64": lib.tensor([0.0, 1.0], dtype=lib.float64),
                "w9": lib.ones(9), "w64": lib.ones(10, dtype=lib.float64)}
        b = [made.get(v, v) for v in bins] if isinstance(bins, list) else bins
        return lib.histogramdd(lib.from_numpy(_X2.copy()), bins=b,
                               **{k: made.get(v, v) if isinstance(v, str) else v
                                  for k, v in kw.items()})
    with pytest.raises(RuntimeError) as torch_error:
        run(torch)
    with pytest.raises(RuntimeError, match=match) as error:
        run(ember)
    assert isinstance(error.value, ember.EmberError)
    # the same fault as torch's message names (its wording differs)
    words = {"size of bins": "size of bins", "bins must be > 0": "element|bins must be > 0|steps",
             "bin edges": "dimension|element|bins must be > 0", "one dtype": "dtype",
             "min should not exceed max": "min should not exceed max", "weight": "weight",
             "range should have 4 elements": "range should have 4 elements"}[match]
    assert __import__("re").search(words, str(torch_error.value)), torch_error.value


@pytest.mark.parametrize("bins", ["tensor", "mixed"])
def test_histogramdd_bins_of_a_tensor_or_a_mix_is_a_type_error_as_torch(bins):
    def run(lib):
        b = lib.tensor([2, 3]) if bins == "tensor" else [2, lib.tensor([0.0, 1.0])]
        return lib.histogramdd(lib.from_numpy(_X2.copy()), bins=b)
    with pytest.raises(TypeError):
        run(torch)
    with pytest.raises(TypeError, match="histogramdd: bins must be"):
        run(ember)
