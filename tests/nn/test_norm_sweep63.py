"""Normalisation layers against torch 2.13 (sweep layers63)."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("size", [np.int64(4), np.int32(4)])
def test_normalized_shape_numpy_integer_as_torch(name, size):
    # torch takes any numbers.Integral (Ember's TypeError: 'numpy.int64' is not iterable)
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    e, t = getattr(nn, name)(size), getattr(torch.nn, name)(size)
    assert e.normalized_shape == (4,) and tuple(e.weight.shape) == tuple(t.weight.shape)
    np.testing.assert_allclose(e.to(ember.float64)(ember.tensor(x)).detach().numpy(),
                               t.double()(torch.tensor(x)).detach().numpy(), rtol=1e-12)
