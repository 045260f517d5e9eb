"""Fixes from the sweep65b sweep of ember.distributions against torch.distributions."""

import math

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D

TD = torch.distributions


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kumaraswamy_cdf_of_nan_is_nan_as_torch(dtype):
    # the cdf clamps to [0, 1] and then sent every value not below 1 to 1: NaN included
    a, b = np.array([0.5, 2.0, 2.0], dtype=dtype), np.array([0.5, 3.0, 3.0], dtype=dtype)
    x = np.array([math.nan, 1.0, 0.3], dtype=dtype)
    ours = D.Kumaraswamy(ember.tensor(a), ember.tensor(b), validate_args=False).cdf(ember.tensor(x))
    theirs = TD.Kumaraswamy(torch.tensor(a), torch.tensor(b), validate_args=False).cdf(
        torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, equal_nan=True)
    assert math.isnan(ours.numpy()[0])
