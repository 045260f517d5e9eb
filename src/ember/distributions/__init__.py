"""Probability distributions with PyTorch's ``torch.distributions`` names and semantics:
sampling (``rsample`` is reparameterized), ``log_prob``, ``entropy``, moments, constraints,
transforms and ``kl_divergence``. Layer 3: written with Ember's ops, so every density is
differentiable without new rules.

Example:
    >>> from ember.distributions import Normal, kl_divergence
    >>> q = Normal(ember.zeros(2), ember.ones(2))
    >>> q.rsample((8,)).shape
    (8, 2)
"""

from ember.distributions import constraints, kl_families, transforms  # kl_families registers
from ember.distributions.categorical import Categorical, OneHotCategorical
from ember.distributions.cauchy import Cauchy
from ember.distributions.continuous import Exponential, Laplace, Normal, Uniform
from ember.distributions.dirichlet import Beta, Dirichlet
from ember.distributions.discrete import Bernoulli, Binomial, Geometric, Poisson
from ember.distributions.distribution import Distribution, set_default_validate_args
from ember.distributions.extreme_value import GeneralizedPareto, Gumbel, Pareto, Weibull
from ember.distributions.folded import HalfCauchy, HalfNormal
from ember.distributions.gamma import Chi2, Gamma
from ember.distributions.gamma_ratios import FisherSnedecor, InverseGamma, StudentT
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.logistic_normal import LogisticNormal
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.transformed_distribution import LogNormal, TransformedDistribution
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
)
from ember.distributions.unit_interval import ContinuousBernoulli, Kumaraswamy
from ember.distributions.von_mises import VonMises

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical",
           "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "ExpTransform", "Exponential", "FisherSnedecor", "Gamma",
           "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
           "InverseGamma", "Kumaraswamy", "Laplace", "LogNormal", "LogisticNormal",
           "MultivariateNormal", "Normal", "OneHotCategorical", "Pareto", "Poisson",
           "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "StickBreakingTransform",
           "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
           "VonMises", "Weibull", "constraints", "kl_divergence", "register_kl",
           "set_default_validate_args", "transforms"]
