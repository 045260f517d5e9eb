"""Probability distributions with PyTorch's ``torch.distributions`` names and semantics:
sampling (``rsample`` is reparameterized), ``log_prob``, ``entropy``, moments, constraints,
transforms and ``kl_divergence``. Layer 3: written with Ember's ops, so every density is
differentiable without new rules.

Example:
    >>> from ember.distributions import Normal, kl_divergence
    >>> q = Normal(ember.zeros(2), ember.ones(2))
    >>> q.rsample((8,)).shape
    ember.Size([8, 2])
"""

import sys as _sys

# (importing kl_families registers its KL pairs)
from ember.distributions import constraint_registry, constraints, kl_families, transforms
from ember.distributions.categorical import (
    Categorical,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from ember.distributions.cauchy import Cauchy
from ember.distributions.constraint_registry import biject_to, transform_to
from ember.distributions.continuous import Exponential, Laplace, Normal, Uniform
from ember.distributions.dirichlet import Beta, Dirichlet
from ember.distributions.discrete import Bernoulli, Binomial, Geometric, Poisson
from ember.distributions.distribution import Distribution, set_default_validate_args
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.extreme_value import GeneralizedPareto, Gumbel, Pareto, Weibull
from ember.distributions.folded import HalfCauchy, HalfNormal
from ember.distributions.gamma import Chi2, Gamma
from ember.distributions.gamma_ratios import FisherSnedecor, InverseGamma, StudentT
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.lkj_cholesky import LKJCholesky
from ember.distributions.logistic_normal import LogisticNormal
from ember.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from ember.distributions.mixture_same_family import MixtureSameFamily
from ember.distributions.multinomial import Multinomial
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.negative_binomial import NegativeBinomial
from ember.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from ember.distributions.transformed_distribution import LogNormal, TransformedDistribution
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from ember.distributions.unit_interval import ContinuousBernoulli, Kumaraswamy
from ember.distributions.von_mises import VonMises
from ember.distributions.wishart import Wishart

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
           "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
           "ExponentialFamily", "ExpRelaxedCategorical", "ExpTransform", "Exponential",
           "FisherSnedecor", "Gamma",
           "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
           "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
           "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli", "LowRankMultivariateNormal",
           "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
           "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises",
           "Weibull", "Wishart", "biject_to", "constraint_registry", "constraints",
           "identity_transform", "kl_divergence", "register_kl", "set_default_validate_args",
           "transform_to", "transforms"]

# torch.distributions' one-distribution submodules, for code that imports from them
# (``from ember.distributions.normal import Normal``): each is the Ember module defining the
# class (``ember.distributions.continuous`` for ``normal``), under PyTorch's path.
_SUBMODULE_CLASSES = {
    "bernoulli": Bernoulli, "beta": Beta, "binomial": Binomial, "chi2": Chi2,
    "continuous_bernoulli": ContinuousBernoulli, "exponential": Exponential,
    "fishersnedecor": FisherSnedecor, "generalized_pareto": GeneralizedPareto,
    "geometric": Geometric, "gumbel": Gumbel, "half_cauchy": HalfCauchy,
    "half_normal": HalfNormal, "inverse_gamma": InverseGamma, "kumaraswamy": Kumaraswamy,
    "laplace": Laplace, "log_normal": LogNormal, "normal": Normal,
    "one_hot_categorical": OneHotCategorical, "pareto": Pareto, "poisson": Poisson,
    "relaxed_bernoulli": RelaxedBernoulli, "relaxed_categorical": RelaxedOneHotCategorical,
    "studentT": StudentT, "uniform": Uniform, "weibull": Weibull,
}
for _name, _class in _SUBMODULE_CLASSES.items():
    globals()[_name] = _sys.modules[f"{__name__}.{_name}"] = _sys.modules[_class.__module__]
del _name, _class, _sys, _SUBMODULE_CLASSES
