"""Fixes from the sweep58h sweep of ember.distributions against torch.distributions."""

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D

TD = torch.distributions


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("value", [0.3, 1, 0.0])
def test_gumbel_cdf_takes_a_python_number_as_torch(validate, value):
    # Gumbel.cdf(0.3) raised "the value argument must be an ember Tensor" (torch's transformed
    # cdf takes a number: its transforms turn it into a tensor)
    loc, scale = np.array([[0.5], [-1.0]]), np.array([1.5, 4.0])
    ours = D.Gumbel(ember.tensor(loc), ember.tensor(scale), validate_args=validate).cdf(value)
    theirs = TD.Gumbel(torch.tensor(loc), torch.tensor(scale), validate_args=validate).cdf(value)
    assert ours.dtype == ember.float64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("value", [0.3, 1, 0.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kumaraswamy_icdf_takes_a_python_number_as_torch(validate, value, dtype):
    # Kumaraswamy.icdf(0.3) failed in where(): "argument 'condition' must be Tensor, not bool"
    a, b = np.array([[2.0], [0.7]], dtype=dtype), np.array([1.5, 4.0], dtype=dtype)
    ours = D.Kumaraswamy(ember.tensor(a), ember.tensor(b), validate_args=validate).icdf(value)
    theirs = TD.Kumaraswamy(torch.tensor(a), torch.tensor(b), validate_args=validate).icdf(value)
    assert str(ours.dtype) == f"ember.{dtype}"
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol)
