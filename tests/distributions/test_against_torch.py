"""Every distribution against torch.distributions: shapes, densities, moments, cdf/icdf,
entropy, expand, and float64 gradchecks of log_prob."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.gradcheck import gradcheck

from .cases import CASES, E, T, build, close, values


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_and_log_prob(name):
    d, t, _ = build(name)
    assert d.batch_shape == tuple(t.batch_shape)
    assert d.event_shape == tuple(t.event_shape)
    v = values(name)
    close(d.log_prob(E(v)), t.log_prob(T(v)))
    assert d.sample((2,)).shape == tuple(t.sample((2,)).shape)
    assert d.has_rsample == t.has_rsample


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("prop", ["mean", "variance", "stddev", "mode", "entropy"])
def test_moments_and_entropy(name, prop):
    d, t, _ = build(name)
    if (name, prop) == ("Kumaraswamy", "mode"):  # torch's is NaN everywhere
        a, b = (p.detach().numpy() for p in (t.concentration1, t.concentration0))
        want = np.where((a < 1) | (b < 1), np.nan, ((a - 1) / (a * b - 1)) ** (1 / a))
        close(d.mode, want)
        return
    if (name, prop) == ("Weibull", "mode"):  # torch's is NaN (or garbage) for k < 1
        k, s = t.concentration.numpy(), t.scale.numpy()
        close(d.mode, np.where(k > 1, s * ((k - 1) / np.where(k > 1, k, 2)) ** (1 / k), 0.0))
        return
    try:
        want = getattr(t, prop)
        want = want() if callable(want) else want
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            got = getattr(d, prop)
            got() if callable(got) else got
        return
    got = getattr(d, prop)
    close(got() if callable(got) else got, want)


CDF_CASES = ["Normal", "Laplace", "Uniform", "Exponential", "LogNormal", "Cauchy", "HalfCauchy",
             "HalfNormal", "Gumbel", "Weibull", "Pareto", "InverseGamma", "Kumaraswamy",
             "ContinuousBernoulliProbs", "ContinuousBernoulliLogits"]


@pytest.mark.parametrize("name", CDF_CASES)
def test_cdf_and_icdf(name):
    d, t, _ = build(name)
    v = values(name)
    close(d.cdf(E(v)), t.cdf(T(v)))
    q = np.random.default_rng(1).uniform(0.05, 0.95, (4, 3))
    try:
        want = t.icdf(T(q))
    except NotImplementedError:  # InverseGamma: Gamma has no icdf
        with pytest.raises(NotImplementedError):
            d.icdf(E(q))
        return
    close(d.icdf(E(q)), want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_expand(name):
    d, t, _ = build(name)
    shape = (2,) + d.batch_shape
    de, te = d.expand(shape), t.expand(torch.Size(shape))
    assert de.batch_shape == tuple(te.batch_shape) and de.event_shape == d.event_shape
    v = values(name)[:1]
    close(de.log_prob(E(v)), te.log_prob(T(v)))
    assert de.sample().shape == tuple(te.sample().shape)


CACHED = ["mean", "variance", "stddev", "covariance_matrix", "precision_matrix", "scale_tril",
          "probs", "logits"]


def _property(dist, attr):
    try:
        return getattr(dist, attr)
    except (AttributeError, NotImplementedError):
        return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_expand_after_cached_properties(name):
    """Properties computed (and cached) before ``expand`` take the new batch shape."""
    d, t, _ = build(name)
    for attr in CACHED:
        _property(d, attr)
    shape = (2,) + d.batch_shape
    de, te = d.expand(shape), t.expand(torch.Size(shape))
    for attr in CACHED:
        if isinstance(_property(te, attr), torch.Tensor):
            close(getattr(de, attr), getattr(te, attr), rtol=1e-5)


@pytest.mark.parametrize("name", ["BernoulliProbs", "CategoricalLogits", "OneHotCategorical",
                                  "BinomialProbs", "OneHotCategoricalST"])
def test_enumerate_support(name):
    d, t, _ = build(name)
    for expand in (True, False):
        close(d.enumerate_support(expand), t.enumerate_support(expand))


def test_parameters_broadcast():
    d = ember.distributions.Normal(ember.zeros(3, 1), ember.ones(4))
    t = torch.distributions.Normal(torch.zeros(3, 1), torch.ones(4))
    assert d.batch_shape == tuple(t.batch_shape) == (3, 4)
    assert ember.distributions.Normal(0.0, 1.0).batch_shape == ()
    assert ember.distributions.Normal(ember.zeros(2, dtype=ember.float64), 1.0).scale.dtype \
        == ember.float64


def _kwargs(params, names, xs):
    kw = dict(params, **dict(zip(names, xs)))
    for k in ("covariance_matrix", "precision_matrix"):
        if k in kw:  # a symmetric function of the input: cholesky reads one triangle only
            kw[k] = kw[k] @ kw[k].transpose(-2, -1) + ember.eye(2, dtype=ember.float64)
    return kw


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if n != "Uniform"])
def test_log_prob_gradcheck(name):
    d, _, params = build(name, requires_grad=True)
    names = [k for k, p in params.items() if isinstance(p, ember.Tensor) and p.requires_grad]
    v = E(values(name))
    cls = type(d)

    def log_prob(*xs):
        return cls(**_kwargs(params, names, xs), validate_args=False).log_prob(v)

    assert gradcheck(log_prob, tuple(params[k] for k in names))


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Uniform", "Exponential", "LogNormal",
                                  "MVNCov", "MVNScaleTril", "LowRankMVN", "RelaxedBernoulli",
                                  "LogitRelaxedBernoulli", "RelaxedOneHotCategorical",
                                  "ExpRelaxedCategorical", "Cauchy", "HalfCauchy",
                                  "HalfNormal", "Gumbel", "Weibull", "Pareto", "Kumaraswamy",
                                  "ContinuousBernoulliLogits", "LogisticNormal"])
def test_rsample_gradcheck(name):
    """Fixed seed: the sample is a smooth function of the parameters."""
    d, _, params = build(name, requires_grad=True)
    names = [k for k, p in params.items() if isinstance(p, ember.Tensor) and p.requires_grad]
    cls = type(d)

    def expectation(*xs):
        ember.manual_seed(0)
        x = cls(**_kwargs(params, names, xs), validate_args=False).rsample((5,))
        return (x ** 2).mean(0)

    assert gradcheck(expectation, tuple(params[k] for k in names))


def test_numbers_as_parameters():
    d = ember.distributions.Gamma(2.0, 3.0)
    t = torch.distributions.Gamma(2.0, 3.0)
    close(d.log_prob(ember.tensor(0.5)), t.log_prob(torch.tensor(0.5)), rtol=1e-5)
    assert ember.distributions.Beta(2.0, 3.0).batch_shape == ()
    assert repr(ember.distributions.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


@pytest.mark.parametrize("make", [
    lambda m: m.distributions.Normal(m.zeros(2), m.ones(2)),
    lambda m: m.distributions.Normal(m.tensor([0.5]), 1.0),
    lambda m: m.distributions.Independent(m.distributions.Normal(m.zeros(3, 2), 1.0), 1),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2), m.eye(2)),
])
def test_repr_shows_sizes_and_one_element_parameters_as_torch(make):
    assert repr(make(ember)).replace("ember", "torch") == repr(make(torch))
