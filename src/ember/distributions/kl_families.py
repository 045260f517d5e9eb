"""The ``kl_divergence`` pairs PyTorch registers for Cauchy, Gumbel, HalfNormal, Pareto and
ContinuousBernoulli, among themselves and with Normal, Laplace, Uniform, Exponential, Gamma
and Beta. Imported by ``ember.distributions`` for its registrations."""

from __future__ import annotations

import ember
from ember.distributions.cauchy import Cauchy
from ember.distributions.continuous import Exponential, Laplace, Normal, Uniform
from ember.distributions.dirichlet import Beta
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.extreme_value import Gumbel, Pareto, _pareto_mean, _pareto_variance
from ember.distributions.folded import HalfNormal
from ember.distributions.gamma import Gamma
from ember.distributions.kl import (
    _exponential_cross_entropy,
    _gamma_cross_entropy,
    _inf_where,
    _kl_exponential_cross,
    _kl_infinite,
    _kl_normal_cross,
    _kl_normal_normal,
    _normal_cross_entropy,
    _uniform_mean_log,
    register_kl,
)
from ember.distributions.unit_interval import ContinuousBernoulli
from ember.tensor import Tensor

__all__: list[str] = []

_UNBOUNDED = (Exponential, Gamma, Gumbel, Laplace, Normal)

# p puts mass where q has none
for _p in (*_UNBOUNDED, Pareto):
    register_kl(_p, ContinuousBernoulli)(_kl_infinite)
for _p in (*_UNBOUNDED, Beta, ContinuousBernoulli):
    register_kl(_p, Pareto)(_kl_infinite)
for _q in (Beta, Exponential, Gamma, Uniform):
    register_kl(Gumbel, _q)(_kl_infinite)
register_kl(Pareto, Beta)(_kl_infinite)
register_kl(Pareto, Uniform)(_kl_infinite)

# KL = cross-entropy - entropy, from p's mean (and variance)
register_kl(Gumbel, Normal)(_kl_normal_cross)
register_kl(ContinuousBernoulli, Normal)(_kl_normal_cross)
register_kl(ContinuousBernoulli, Exponential)(_kl_exponential_cross)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    """Chyzak and Nielsen (2019)."""
    return (ember.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2)
            - ember.log(4 * p.scale * q.scale))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


# Gumbel q: -log q(x) = log scale + t + exp(-t) for t = (x - loc) / scale, so the
# cross-entropy needs E[x] and E[exp(-t)] under p.


def _gumbel_cross_entropy(q: Gumbel, mean: Tensor, mean_exp: Tensor) -> Tensor:
    return ember.log(q.scale) + (mean - q.loc) / q.scale + mean_exp


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    mean_exp = ember.exp((q.loc - p.loc) / q.scale + ember.lgamma(1 + ratio))
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    rs = p.rate * q.scale
    mean_exp = ember.exp(q.loc / q.scale) * rs / (rs + 1)
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    log_mgf = -p.concentration * ember.log1p((p.rate * q.scale).reciprocal())
    mean_exp = ember.exp(q.loc / q.scale + log_mgf)
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_exp = ember.exp((q.loc - p.loc) / q.scale + 0.5 * (p.scale / q.scale) ** 2)
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    low, high = (p.low - q.loc) / q.scale, (p.high - q.loc) / q.scale
    mean_exp = (ember.exp(-low) - ember.exp(-high)) / (high - low)
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


# Pareto p: E[x] and Var[x] are finite for alpha above 1 and 2; the divergence is infinite
# below (the formulas see a safe alpha there, so gradients stay finite).


def _safe_alpha(p: Pareto, bound: float) -> tuple[Tensor, Tensor]:
    heavy = p.alpha <= bound
    return heavy, ember.where(heavy, bound + 1.0, p.alpha)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    """Infinite where p's support starts below q's."""
    alpha_ratio = q.alpha / p.alpha
    kl = q.alpha * ember.log(p.scale / q.scale) - ember.log(alpha_ratio) + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, kl)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    heavy, alpha = _safe_alpha(p, 1.0)
    cross = _exponential_cross_entropy(q, _pareto_mean(alpha, p.scale))
    return _inf_where(heavy, cross - p.entropy())


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    heavy, alpha = _safe_alpha(p, 1.0)
    mean_log = ember.log(p.scale) + p.alpha.reciprocal()
    cross = _gamma_cross_entropy(q, _pareto_mean(alpha, p.scale), mean_log)
    return _inf_where(heavy, cross - p.entropy())


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    heavy, alpha = _safe_alpha(p, 2.0)
    cross = _normal_cross_entropy(q, _pareto_mean(alpha, p.scale), _pareto_variance(alpha, p.scale))
    return _inf_where(heavy, cross - p.entropy())


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    """Infinite where p starts below q's scale."""
    cross = ((q.alpha + 1) * _uniform_mean_log(p.low, p.high) - ember.log(q.alpha)
             - q.alpha * ember.log(q.scale))
    return _inf_where(p.low < q.scale, cross - p.entropy())


# ContinuousBernoulli q: log q(x) = x logits + log(1 - probs) + log C(probs), linear in x.


def _cb_mean_log_density(q: ContinuousBernoulli, mean: Tensor) -> Tensor:
    return mean * q.logits + ember.log1p(-q.probs) + q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    return _cb_mean_log_density(p, p.mean) - _cb_mean_log_density(q, p.mean)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - _cb_mean_log_density(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    """Infinite where p reaches outside ``[0, 1]`` (PyTorch also where it touches 0 or 1)."""
    kl = -p.entropy() - _cb_mean_log_density(q, p.mean)
    return _inf_where((p.low < 0) | (p.high > 1), kl)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    """Infinite where q misses part of ``[0, 1]`` (PyTorch also where it starts at 0 or ends
    at 1)."""
    return _inf_where((q.low > 0) | (q.high < 1), ember.log(q.high - q.low) - p.entropy())


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log normalizer, for two members of one family that have
    no closed form registered."""
    if type(p) is not type(q):
        raise NotImplementedError(f"kl_divergence: the cross KL-divergence between different "
                                  f"exponential families ({type(p).__name__} || "
                                  f"{type(q).__name__}) cannot be computed using Bregman "
                                  f"divergences; hint: add a formula with @register_kl("
                                  f"{type(p).__name__}, {type(q).__name__})")
    return p._bregman_kl(q)
