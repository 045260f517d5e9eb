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


def _user_family(m, d):
    # a user's family written the torch way: its expand starts with _get_checked_instance
    class Shifted(d.Distribution):
        arg_constraints = {"loc": d.constraints.real}
        support = d.constraints.real

        def __init__(self, loc, validate_args=None):
            self.loc = loc
            super().__init__(loc.shape, validate_args=validate_args)

        def expand(self, batch_shape, _instance=None):
            new = self._get_checked_instance(Shifted, _instance)
            new.loc = self.loc.expand(batch_shape)
            super(Shifted, new).__init__(m.Size(batch_shape), validate_args=False)
            new._validate_args = self._validate_args
            return new

        def log_prob(self, value):
            return -((value - self.loc) ** 2) / 2

    class Child(Shifted):
        def __init__(self, loc, extra, validate_args=None):
            self.extra = extra
            super().__init__(loc, validate_args=validate_args)

    return Shifted, Child


def test_a_user_subclass_expand_uses_get_checked_instance_as_torch():
    # torch's subclassing pattern: Distribution._get_checked_instance was missing (AttributeError)
    results = []
    for m, d in [(torch, TD), (ember, D)]:
        shifted, child = _user_family(m, d)
        e = shifted(m.tensor([0.0, 1.0])).expand((3, 2))
        assert type(e) is shifted and tuple(e.batch_shape) == (3, 2)
        results.append(e.log_prob(m.tensor([0.5, 0.5])).numpy())
        given = shifted.__new__(shifted)
        assert shifted(m.tensor([0.0])).expand((2,), _instance=given) is given
        with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
            child(m.tensor([0.0, 1.0]), 3).expand((3, 2))
    np.testing.assert_allclose(results[1], results[0])


def test_multivariate_normal_log_prob_at_an_infinite_coordinate_is_minus_inf_as_torch():
    # the last coordinate infinite: the triangular solve gave NaN in the first ones (LU
    # pivoting), so log_prob was NaN; torch -inf
    cov = np.array([[2.0, 0.5, 0.3], [0.5, 1.5, 0.2], [0.3, 0.2, 1.0]])
    x = np.array([0.0, 0.0, np.inf])
    ours = D.MultivariateNormal(ember.zeros(3, dtype=ember.float64), ember.tensor(cov),
                                validate_args=False).log_prob(ember.tensor(x))
    theirs = TD.MultivariateNormal(torch.zeros(3, dtype=torch.float64), torch.tensor(cov),
                                   validate_args=False).log_prob(torch.tensor(x))
    assert theirs.item() == -np.inf and ours.item() == -np.inf


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_as_value_makes_a_number_a_tensor_of_the_parameters_dtype(dtype):
    # the one conversion Gumbel.cdf and Kumaraswamy.cdf/icdf share (review58h item 6)
    from ember.distributions.utils import as_value
    like = ember.ones(2, dtype=dtype)
    assert as_value(0.25, like).dtype is dtype and as_value(0.25, like).item() == 0.25
    t = ember.tensor([0.5], dtype=ember.float64)
    assert as_value(t, like) is t
