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

from ember.distributions import constraints, transforms
from ember.distributions.categorical import Categorical, OneHotCategorical
from ember.distributions.continuous import Exponential, Laplace, Normal, Uniform
from ember.distributions.dirichlet import Beta, Dirichlet
from ember.distributions.discrete import Bernoulli, Binomial, Geometric, Poisson
from ember.distributions.distribution import Distribution, set_default_validate_args
from ember.distributions.gamma import Chi2, Gamma
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.transformed_distribution import LogNormal, TransformedDistribution
from ember.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Chi2",
           "ComposeTransform",
           "Dirichlet", "Distribution", "ExpTransform", "Exponential", "Gamma", "Geometric",
           "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Poisson", "SigmoidTransform", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "constraints", "kl_divergence",
           "register_kl", "set_default_validate_args", "transforms"]
