"""Module behaviour the torch.nn 2.13 re-sweep (nn52) found different, each compared with
torch: feature dropout on other ranks, and constructor signatures."""

import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def _varying_dims(y: np.ndarray) -> list[int]:
    return [d for d in range(y.ndim) if not (y == np.take(y, [0], axis=d)).all()]


@pytest.mark.parametrize("name", ["Dropout2d", "Dropout3d"])
@pytest.mark.parametrize("rank", [1, 2, 3, 5, 6])
def test_feature_dropout_other_ranks_as_torch(name, rank):
    """torch's Dropout2d/3d take any rank (with a deprecation warning): dropout2d draws per
    (N, C), dropout3d per leading dim; eval is the identity. Ember raised ShapeError."""
    x = np.ones(((12, 12) + (2,) * 4)[:rank])  # long leading dims: no all-kept/dropped draw
    results = {}
    for lib, mod in (("torch", torch.nn), ("ember", nn)):
        m = getattr(mod, name)(0.5)
        t = torch.tensor(x) if lib == "torch" else ember.tensor(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                y = np.asarray(m(t).numpy())
                results[lib] = ("ok", _varying_dims(y), set(np.unique(y)) <= {0.0, 2.0})
            except Exception:  # noqa: BLE001 (both must fail alike)
                results[lib] = ("error",)
            m.eval()
            np.testing.assert_array_equal(np.asarray(m(t).numpy()), x)
    assert results["ember"] == results["torch"]


def test_feature_dropout_other_ranks_warn_and_short_inputs_raise():
    with pytest.warns(UserWarning, match="dropout3d: received a 2-D input"):
        nn.Dropout3d()(ember.ones(3, 4))
    with pytest.raises(ember.ShapeError, match="dropout2d"):
        nn.Dropout2d()(ember.ones(3))
    with pytest.raises(ember.ShapeError, match="dropout1d"):
        nn.Dropout1d()(ember.ones(2, 3, 4, 5))
