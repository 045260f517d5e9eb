"""Shared cases: each builds the same distribution in Ember and in torch.distributions from
NumPy parameters, with a few values in its support."""

import numpy as np
import torch

import ember
import ember.distributions as D

rng = np.random.default_rng(0)


def E(x):  # noqa: N802
    return ember.tensor(np.asarray(x))


def T(x):  # noqa: N802
    return torch.tensor(np.asarray(x))


def pos(*shape):
    return rng.uniform(0.5, 3.0, shape)


def unit(*shape):
    return rng.uniform(0.05, 0.95, shape)


def _spd(n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _corr(n):
    c = _spd(n)
    d = np.sqrt(np.diag(c))
    return c / d[:, None] / d[None, :]


_low = rng.normal(size=3)
_mvn_loc = rng.normal(size=(3, 2))
_cov = _spd(2)

# name -> (class name, params, values, reparameterized params for gradchecks)
CASES = {
    "Normal": ("Normal", dict(loc=rng.normal(size=3), scale=pos(3)), rng.normal(size=(4, 3))),
    "Laplace": ("Laplace", dict(loc=rng.normal(size=3), scale=pos(3)), rng.normal(size=(4, 3))),
    "Uniform": ("Uniform", dict(low=_low, high=_low + pos(3)),
                _low + unit(4, 3) * 0.5),
    "Exponential": ("Exponential", dict(rate=pos(3)), pos(4, 3)),
    "Gamma": ("Gamma", dict(concentration=pos(3), rate=pos(3)), pos(4, 3)),
    "Beta": ("Beta", dict(concentration1=pos(3), concentration0=pos(3)), unit(4, 3)),
    "Dirichlet": ("Dirichlet", dict(concentration=pos(2, 4)),
                  rng.dirichlet(np.ones(4), size=(3, 2))),
    "LogNormal": ("LogNormal", dict(loc=rng.normal(size=3), scale=pos(3)), pos(4, 3)),
    "BernoulliProbs": ("Bernoulli", dict(probs=unit(3)), rng.integers(0, 2, (4, 3)) * 1.0),
    "BernoulliLogits": ("Bernoulli", dict(logits=rng.normal(size=3)),
                        rng.integers(0, 2, (4, 3)) * 1.0),
    "CategoricalProbs": ("Categorical", dict(probs=pos(3, 4)), rng.integers(0, 4, (5, 3))),
    "CategoricalLogits": ("Categorical", dict(logits=rng.normal(size=(3, 4))),
                          rng.integers(0, 4, (5, 3))),
    "OneHotCategorical": ("OneHotCategorical", dict(logits=rng.normal(size=(3, 4))),
                          np.eye(4)[rng.integers(0, 4, (5, 3))]),
    "Poisson": ("Poisson", dict(rate=pos(3) * 4), rng.integers(0, 12, (4, 3)) * 1.0),
    "BinomialProbs": ("Binomial", dict(total_count=np.full(3, 10.0), probs=unit(3)),
                      rng.integers(0, 11, (4, 3)) * 1.0),
    "BinomialLogits": ("Binomial", dict(total_count=np.full(3, 7.0), logits=rng.normal(size=3)),
                       rng.integers(0, 8, (4, 3)) * 1.0),
    "Geometric": ("Geometric", dict(probs=unit(3)), rng.integers(0, 9, (4, 3)) * 1.0),
    "MVNCov": ("MultivariateNormal", dict(loc=_mvn_loc, covariance_matrix=_cov),
               rng.normal(size=(4, 3, 2))),
    "MVNPrecision": ("MultivariateNormal", dict(loc=_mvn_loc, precision_matrix=_spd(2)),
                     rng.normal(size=(4, 3, 2))),
    "MVNScaleTril": ("MultivariateNormal",
                     dict(loc=_mvn_loc, scale_tril=np.linalg.cholesky(np.stack([_spd(2)] * 3))),
                     rng.normal(size=(4, 3, 2))),
    "NegativeBinomialProbs": ("NegativeBinomial", dict(total_count=pos(3), probs=unit(3)),
                              rng.integers(0, 9, (4, 3)) * 1.0),
    "NegativeBinomialLogits": ("NegativeBinomial",
                               dict(total_count=pos(3), logits=rng.normal(size=3)),
                               rng.integers(0, 9, (4, 3)) * 1.0),
    "MultinomialProbs": ("Multinomial", dict(total_count=6, probs=pos(3, 4)),
                         rng.multinomial(6, np.ones(4) / 4, size=(5, 3)) * 1.0),
    "MultinomialLogits": ("Multinomial", dict(total_count=5, logits=rng.normal(size=(3, 4))),
                          rng.multinomial(5, np.ones(4) / 4, size=(5, 3)) * 1.0),
    "OneHotCategoricalST": ("OneHotCategoricalStraightThrough", dict(probs=pos(3, 4)),
                            np.eye(4)[rng.integers(0, 4, (5, 3))]),
    "LowRankMVN": ("LowRankMultivariateNormal",
                   dict(loc=rng.normal(size=(3, 4)), cov_factor=rng.normal(size=(4, 2)),
                        cov_diag=pos(3, 4)),
                   rng.normal(size=(5, 3, 4))),
    "RelaxedBernoulli": ("RelaxedBernoulli", dict(temperature=pos(3), probs=unit(3)),
                         unit(4, 3)),
    "LogitRelaxedBernoulli": ("LogitRelaxedBernoulli",
                              dict(temperature=pos(3), logits=rng.normal(size=3)),
                              rng.normal(size=(4, 3))),
    "RelaxedOneHotCategorical": ("RelaxedOneHotCategorical",
                                 dict(temperature=np.array(0.7), logits=rng.normal(size=(3, 4))),
                                 rng.dirichlet(np.ones(4), size=(5, 3))),
    "ExpRelaxedCategorical": ("ExpRelaxedCategorical",
                              dict(temperature=np.array(1.3), probs=pos(3, 4)),
                              np.log(rng.dirichlet(np.ones(4), size=(5, 3)))),
    "WishartCov": ("Wishart", dict(df=np.array([3.5, 5.0, 2.5]), covariance_matrix=_cov),
                   np.stack([[_spd(2) for _ in range(3)] for _ in range(4)])),
    "WishartScaleTril": ("Wishart", dict(df=np.array(4.0), scale_tril=np.linalg.cholesky(
        np.stack([_spd(2)] * 3))), np.stack([[_spd(2) for _ in range(3)] for _ in range(4)])),
    "LKJCholesky": ("LKJCholesky", dict(dim=3, concentration=pos(2)),
                    np.linalg.cholesky(np.stack([[_corr(3) for _ in range(2)]
                                                 for _ in range(4)]))),
    "Cauchy": ("Cauchy", dict(loc=rng.normal(size=3), scale=pos(3)), rng.normal(size=(4, 3))),
    "HalfCauchy": ("HalfCauchy", dict(scale=pos(3)), pos(4, 3)),
    "HalfNormal": ("HalfNormal", dict(scale=pos(3)), pos(4, 3)),
    "StudentT": ("StudentT", dict(df=pos(3) + 2, loc=rng.normal(size=3), scale=pos(3)),
                 rng.normal(size=(4, 3))),
    "Gumbel": ("Gumbel", dict(loc=rng.normal(size=3), scale=pos(3)), rng.normal(size=(4, 3))),
    "Weibull": ("Weibull", dict(scale=pos(3), concentration=pos(3)), pos(4, 3)),
    "Pareto": ("Pareto", dict(scale=pos(3), alpha=pos(3) + 2), 3 + pos(4, 3)),
    "VonMises": ("VonMises", dict(loc=rng.normal(size=3), concentration=pos(3)),
                 rng.normal(size=(4, 3))),
    "InverseGamma": ("InverseGamma", dict(concentration=pos(3) + 2, rate=pos(3)), pos(4, 3)),
    "Kumaraswamy": ("Kumaraswamy", dict(concentration1=pos(3), concentration0=pos(3)),
                    unit(4, 3)),
    "FisherSnedecor": ("FisherSnedecor", dict(df1=pos(3) + 2, df2=pos(3) + 4), pos(4, 3)),
    "ContinuousBernoulliProbs": ("ContinuousBernoulli", dict(probs=np.array([0.2, 0.5, 0.8])),
                                 unit(4, 3)),
    "ContinuousBernoulliLogits": ("ContinuousBernoulli", dict(logits=rng.normal(size=3)),
                                  unit(4, 3)),
    "LogisticNormal": ("LogisticNormal", dict(loc=rng.normal(size=(2, 3)), scale=pos(2, 3)),
                       rng.dirichlet(np.ones(4), size=(3, 2))),
}

# checked against their CDFs in test_continuous_families.py (heavy tails, circular values or
# no mean) instead of by their sample moments in test_sampling.py
CDF_CHECKED = {"Cauchy", "HalfCauchy", "HalfNormal", "StudentT", "Gumbel", "Weibull", "Pareto",
               "VonMises", "InverseGamma", "Kumaraswamy", "FisherSnedecor",
               "ContinuousBernoulliProbs", "ContinuousBernoulliLogits", "LogisticNormal"}


def torch_class(cls):
    """torch's class of that name; two live only in their modules."""
    hidden = {"ExpRelaxedCategorical": torch.distributions.relaxed_categorical,
              "LogitRelaxedBernoulli": torch.distributions.relaxed_bernoulli}
    return getattr(hidden.get(cls, torch.distributions), cls)


def build(name, requires_grad=False, validate_args=None):
    """The case's (ember distribution, torch distribution, ember params)."""
    cls, params, _ = CASES[name]
    eparams = {k: E(v) if isinstance(v, np.ndarray) else v for k, v in params.items()}
    if requires_grad:
        for k, v in eparams.items():
            if k != "total_count" and isinstance(v, ember.Tensor):
                v.requires_grad_(True)
    d = getattr(D, cls)(**eparams, validate_args=validate_args)
    t = torch_class(cls)(**{k: T(v) if isinstance(v, np.ndarray) else v
                                             for k, v in params.items()})
    return d, t, eparams


def values(name):
    return CASES[name][2]


def close(a, b, rtol=1e-6, atol=1e-8):
    a = np.asarray(a.detach().numpy() if hasattr(a, "detach") else a, dtype=np.float64)
    b = np.asarray(b.detach().numpy() if hasattr(b, "detach") else b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
