"""Argument and sample validation: clear ValueErrors, and the switches that turn them off."""

import math

import pytest
import torch

import ember
import ember.distributions as D


@pytest.mark.parametrize(("make", "words"), [
    (lambda: D.Normal(0.0, -1.0), ["Normal", "scale", "GreaterThan"]),
    (lambda: D.Gamma(ember.tensor([1.0, 0.0]), 1.0), ["Gamma", "concentration", "(2,)"]),
    (lambda: D.Bernoulli(probs=ember.tensor(1.5)), ["Bernoulli", "probs"]),
    (lambda: D.Categorical(probs=ember.tensor([0.5, -0.5])), ["Categorical", "probs"]),
    (lambda: D.Dirichlet(ember.tensor([1.0, -1.0])), ["Dirichlet", "concentration"]),
    (lambda: D.Binomial(2.5, probs=ember.tensor(0.5)), ["Binomial", "total_count"]),
    (lambda: D.MultivariateNormal(ember.zeros(2), ember.tensor([[1.0, 2.0], [2.0, 1.0]])),
     ["MultivariateNormal", "covariance_matrix"]),
])
def test_bad_parameters(make, words):
    with pytest.raises(ValueError) as err:
        make()
    for w in words:
        assert w in str(err.value)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: D.Bernoulli(probs=0.5, logits=0.0), ["Bernoulli", "exactly one", "both"]),
    (lambda: D.Categorical(), ["Categorical", "neither"]),
    (lambda: D.MultivariateNormal(ember.zeros(2)), ["exactly one"]),
    (lambda: D.MultivariateNormal(ember.zeros(2), scale_tril=ember.eye(3)), ["(2, 2)"]),
    (lambda: D.Independent(D.Normal(ember.zeros(2), 1.0), 2), ["reinterpreted_batch_ndims"]),
    (lambda: D.Normal(ember.zeros(2), ember.ones(3)), ["Normal", "(2,)", "(3,)"]),
    (lambda: D.Dirichlet(ember.tensor(1.0)), ["Dirichlet", "at least one dim"]),
])
def test_bad_construction(make, words):
    with pytest.raises(ValueError) as err:
        make()
    for w in words:
        assert w in str(err.value)


def test_bad_values():
    d = D.Exponential(ember.ones(3))
    with pytest.raises(ValueError, match="Exponential.*support"):
        d.log_prob(ember.tensor([-1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="ember Tensor"):
        d.log_prob(1.0)
    with pytest.raises(ValueError, match="broadcast"):
        d.log_prob(ember.ones(4))
    with pytest.raises(ValueError, match="event_shape"):
        D.Dirichlet(ember.ones(3)).log_prob(ember.ones(4) / 4)
    with pytest.raises(ValueError, match="support"):
        D.Categorical(logits=ember.zeros(3)).log_prob(ember.tensor(3))


def test_switches():
    D.Normal(0.0, -1.0, validate_args=False)
    assert D.Exponential(1.0, validate_args=False).log_prob(ember.tensor(-1.0)).item() == 1.0
    D.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="True or False"):
        D.set_default_validate_args(2)


def test_unsupported_methods_name_the_distribution():
    with pytest.raises(NotImplementedError, match="Poisson does not implement entropy"):
        D.Poisson(1.0).entropy()
    with pytest.raises(NotImplementedError, match="Gamma does not implement icdf"):
        D.Gamma(1.0, 1.0).icdf(ember.tensor(0.5))
    with pytest.raises(TypeError, match="ember Tensors or Python numbers"):
        D.Normal([0.0], 1.0)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: D.Uniform(ember.tensor([0.0, 2.0]), 1.0), ["Uniform", "low", "LessThan"]),
    (lambda: D.Uniform(1.0, 1.0), ["Uniform", "low"]),
    (lambda: D.Geometric(ember.tensor([0.5, 0.0])), ["Geometric", "probs", "positive"]),
    (lambda: D.Beta(ember.tensor([1.0, 0.0]), 1.0), ["Beta", "concentration1"]),
    (lambda: D.Beta(ember.tensor([1.0, 2.0]), 1.0).expand((3,)), ["Beta.expand", "Size([2])"]),
    (lambda: D.Normal(ember.zeros(3, 4), 1.0).expand((7,)),
     ["Normal.expand", "Size([3, 4])", "Size([7])"]),
    (lambda: D.Multinomial(-1, probs=ember.ones(3) / 3), ["Multinomial", "total_count"]),
    (lambda: D.MultivariateNormal(ember.zeros(3), ember.full((3, 3), math.nan)),
     ["MultivariateNormal", "covariance_matrix", "PositiveDefinite"]),
])
def test_parameter_checks_torch_makes(make, words):
    with pytest.raises(ValueError) as err:
        make()
    for w in words:
        assert w in str(err.value)


def test_the_same_checks_in_torch():
    # (torch's default is set for this test: torch._dynamo's set-up, run by torch.cond or
    # torch.export in an earlier test of the same process, turns it off, and Multinomial's
    # inner Binomial, which checks total_count, follows the default)
    default = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    try:
        with pytest.raises(ValueError):
            torch.distributions.Multinomial(-1, probs=torch.ones(3) / 3)
        with pytest.raises(ValueError, match="covariance_matrix"):
            torch.distributions.MultivariateNormal(torch.zeros(3), torch.full((3, 3), math.nan))
    finally:
        torch.distributions.Distribution.set_default_validate_args(default)
    assert D.Multinomial(-1, probs=ember.ones(3) / 3, validate_args=False).total_count == -1


def test_switch_is_also_a_static_method_of_distribution():
    """PyTorch's spelling: Distribution.set_default_validate_args."""
    D.Distribution.set_default_validate_args(False)
    try:
        D.Uniform(1.0, 0.0)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Uniform(1.0, 0.0)


def test_validated_distributions_work_under_jit_and_vmap():
    """The checks read values, which tracing hides; they pass there instead of failing."""
    @ember.jit.compile
    def log_prob(loc, x):
        return D.Normal(loc, 1.0).log_prob(x).sum()

    loc, x = ember.zeros(3), ember.ones(3)
    assert log_prob(loc, x).item() == pytest.approx(D.Normal(loc, 1.0).log_prob(x).sum().item())
    got = ember.func.vmap(lambda l: D.Categorical(logits=l).log_prob(ember.tensor(1)))(
        ember.zeros(4, 2))
    assert got.shape == (4,)
    with pytest.raises(ValueError, match="Normal"):  # eager calls still check
        D.Normal(loc, 1.0).log_prob(ember.tensor(float("nan")))
