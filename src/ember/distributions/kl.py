"""``kl_divergence(p, q)`` with closed forms registered per pair of distribution types."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import ember
from ember.distributions.categorical import Categorical, OneHotCategorical
from ember.distributions.continuous import Exponential, Laplace, Normal, Uniform
from ember.distributions.dirichlet import Beta, Dirichlet
from ember.distributions.discrete import Bernoulli, Binomial, Geometric, Poisson
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Gamma
from ember.distributions.independent import Independent
from ember.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from ember.distributions.multivariate_normal import MultivariateNormal, _Gaussian
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.utils import EULER_GAMMA, sum_rightmost
from ember.errors import ArgumentError, ShapeError
from ember.tensor import Tensor

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
_KL_MEMO: dict[tuple[type, type], Callable | None] = {}

F = ember.nn.functional


def register_kl(type_p: type, type_q: type) -> Callable:
    """Registers ``fn(p, q)`` as the KL divergence for instances of ``type_p`` and
    ``type_q`` (subclasses included; the most specific registration wins).

    Example:
        >>> @register_kl(MyDist, MyDist)          # doctest: +SKIP
        ... def _kl_mine(p, q): ...
    """
    for t in (type_p, type_q):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"register_kl: expected Distribution subclasses, got {t!r}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMO.clear()
        return fn

    return decorator


def _dispatch(type_p: type, type_q: type) -> Callable | None:
    """The registration most specific in ``p``'s type first, then in ``q``'s, as PyTorch's
    dispatch; where the one most specific in ``q`` first differs, PyTorch's RuntimeWarning
    (summing the two MRO distances picked another registration than PyTorch)."""
    matches = [(type_p.__mro__.index(p), type_q.__mro__.index(q), p, q)
               for p, q in _KL_REGISTRY
               if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    left = min(matches, key=lambda m: (m[0], m[1]))
    right = min(matches, key=lambda m: (m[1], m[0]))
    fn = _KL_REGISTRY[left[2], left[3]]
    if fn is not _KL_REGISTRY[right[2], right[3]]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left[2].__name__}, {right[3].__name__})", RuntimeWarning,
                      stacklevel=3)
    return fn


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, one value per batch element.

    Example:
        >>> from ember.distributions import Normal, kl_divergence
        >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
        tensor(0.5000)
    """
    key = (type(p), type(q))
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _dispatch(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"kl_divergence: no formula for {type(p).__name__} || "
                                  f"{type(q).__name__}; hint: add one with @register_kl("
                                  f"{type(p).__name__}, {type(q).__name__}) or estimate it by "
                                  "sampling: (p.log_prob(x) - q.log_prob(x)).mean(0)")
    try:
        return fn(p, q)
    except ShapeError as exc:
        _raise_if_shapes_differ(p, q, exc)
        raise


def _raise_if_shapes_differ(p: Distribution, q: Distribution, exc: ShapeError) -> None:
    """Names both distributions' shapes where they do not broadcast, in place of the formula's
    own op (``div: shapes (3,) and (2,) do not broadcast``)."""
    pairs = [(f"{what.replace('_', ' ')}s", tuple(getattr(p, what)), tuple(getattr(q, what)))
             for what in ("batch_shape", "event_shape")]
    same = "event shape"
    if isinstance(p, Categorical) and isinstance(q, Categorical):  # (K is not in the event)
        pairs.append(("numbers of categories", (p._num_events,), (q._num_events,)))
        same = "event shape and number of categories"
    for what, a, b in pairs:
        try:
            ember.broadcast_shapes(a, b)
        except ValueError:
            raise ShapeError(f"kl_divergence: the {what} of {type(p).__name__} {a} and "
                             f"{type(q).__name__} {b} do not broadcast; hint: give both the "
                             f"same {same} and batch shapes that broadcast (see .expand)") from exc


def _inf_where(mask: Tensor, value: Tensor) -> Tensor:
    return ember.where(mask, ember.full_like(value, math.inf), value)


def _zero_where(mask: Tensor, value: Tensor) -> Tensor:
    return ember.where(mask, ember.zeros_like(value), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - ember.log(var_ratio))


def _neg_log(d: Bernoulli | Binomial, sign: float) -> Tensor:
    """``-log p`` (sign 1) or ``-log(1 - p)`` (sign -1) from the logits, exactly 0 where
    ``probs`` was given as exactly 1 (or 0): its logits are clamped to eps, and
    ``softplus(logit(eps))`` = eps made float32 KL(Bernoulli(0) || Bernoulli(1e-8))
    negative. The offset has no slope."""
    value = F.softplus(-sign * d.logits)
    if d._given != "probs":
        return value
    return value - _zero_where(d.probs != (1.0 if sign > 0 else 0.0), value.detach())


def _kl_binary(p: Bernoulli | Binomial, q: Bernoulli | Binomial) -> Tensor:
    p_probs, q_probs = p.probs, q.probs
    t1 = p_probs * (_neg_log(q, 1) - _neg_log(p, 1))
    t1 = _zero_where(p_probs == 0, _inf_where(q_probs == 0, t1))
    t2 = (1 - p_probs) * (_neg_log(q, -1) - _neg_log(p, -1))
    t2 = _zero_where(p_probs == 1, _inf_where(q_probs == 1, t2))
    return t1 + t2


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    return _kl_binary(p, q)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("kl_divergence: Binomial || Binomial with p.total_count < "
                                  "q.total_count has no closed form; hint: estimate it by "
                                  "sampling: (p.log_prob(x) - q.log_prob(x)).mean(0)")
    kl = p.total_count * _kl_binary(p, q)
    return _inf_where(p.total_count > q.total_count, kl)  # p puts mass where q has none


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    return _zero_where(p.probs == 0, _inf_where(q.probs == 0, t)).sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return ember.xlogy(p.rate, p.rate) - ember.xlogy(p.rate, q.rate) - (p.rate - q.rate)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - 1 - ember.log(ratio)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ember.log(scale_ratio) + gap / q.scale + scale_ratio * ember.exp(-gap / p.scale) - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ember.log((q.high - q.low) / (p.high - p.low))
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * ember.log(p.rate / q.rate)
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    a0, b0 = a.sum(-1), b.sum(-1)
    t1 = ember.lgamma(a0) - ember.lgamma(b0)
    t2 = (ember.lgamma(a) - ember.lgamma(b)).sum(-1)
    t3 = ((a - b) * (ember.digamma(a) - ember.digamma(a0).unsqueeze(-1))).sum(-1)
    return t1 - t2 + t3


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_gaussian_gaussian(p: _Gaussian, q: _Gaussian) -> Tensor:
    """``log(det Sq / det Sp) / 2 + (tr(Sq^-1 Sp) + d^T Sq^-1 d - n) / 2``, with ``Sp``
    entering through a factor ``A`` (``Sp = A A^T``) and ``Sq^-1`` through each family's
    solve (a triangular solve, or Woodbury for the low-rank normal)."""
    if p.event_shape != q.event_shape:
        raise ArgumentError(f"kl_divergence: {type(p).__name__} and {type(q).__name__} have "
                            f"different event shapes: {p.event_shape} and {q.event_shape}")
    trace = q._inverse_quadratic(p._covariance_factor())
    mahalanobis = q._inverse_quadratic((q.loc - p.loc).unsqueeze(-1))
    n = p.event_shape[0]
    return q._half_log_det() - p._half_log_det() + 0.5 * (trace + mahalanobis - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent || Independent needs equal "
                                  "reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution,
                                q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("kl_divergence: TransformedDistribution || "
                                  "TransformedDistribution needs the same transforms and "
                                  "event shape")
    kl = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(kl, len(p.event_shape) - len(p.base_dist.event_shape))


# Cross-family pairs: KL(p || q) = -H(p) + H(p, q), the cross-entropy H(p, q) = -E_p[log q(x)]
# written from the moments of p that q's log-density needs.


@register_kl(Normal, Uniform)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Beta)
@register_kl(Laplace, Uniform)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Beta)
@register_kl(Exponential, Uniform)
@register_kl(Exponential, Beta)
@register_kl(Gamma, Uniform)
@register_kl(Gamma, Beta)
@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_infinite(p: Distribution, q: Distribution) -> Tensor:
    """p puts mass where q has none."""
    return ember.full_like(p.mean.detach(), math.inf)


def _uniform_mean_log(low: Tensor, high: Tensor) -> Tensor:
    """``E[log x]`` for ``x ~ Uniform(low, high)``, ``low >= 0``."""
    return (ember.xlogy(high, high) - ember.xlogy(low, low)) / (high - low) - 1


def _normal_cross_entropy(q: Normal, mean: Tensor, variance: Tensor) -> Tensor:
    return (ember.log(q.scale) + 0.5 * math.log(2 * math.pi)
            + (variance + (mean - q.loc) ** 2) / (2 * q.scale ** 2))


def _exponential_cross_entropy(q: Exponential, mean: Tensor) -> Tensor:
    return q.rate * mean - ember.log(q.rate)


def _gamma_cross_entropy(q: Gamma, mean: Tensor, mean_log: Tensor) -> Tensor:
    c, r = q.concentration, q.rate
    return ember.lgamma(c) - c * ember.log(r) - (c - 1) * mean_log + r * mean


@register_kl(Uniform, Normal)
@register_kl(Laplace, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gamma, Normal)
@register_kl(Beta, Normal)
def _kl_normal_cross(p: Distribution, q: Normal) -> Tensor:
    return _normal_cross_entropy(q, p.mean, p.variance) - p.entropy()


@register_kl(Gamma, Exponential)
@register_kl(Beta, Exponential)
def _kl_exponential_cross(p: Distribution, q: Exponential) -> Tensor:
    return _exponential_cross_entropy(q, p.mean) - p.entropy()


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    return _inf_where(p.low < 0, _exponential_cross_entropy(q, p.mean) - p.entropy())


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    mean_log = -EULER_GAMMA - ember.log(p.rate)
    return _gamma_cross_entropy(q, p.mean, mean_log) - p.entropy()


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    a, b = p.concentration1, p.concentration0
    mean_log = ember.digamma(a) - ember.digamma(a + b)
    return _gamma_cross_entropy(q, p.mean, mean_log) - p.entropy()


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    kl = _gamma_cross_entropy(q, p.mean, _uniform_mean_log(p.low, p.high)) - p.entropy()
    return _inf_where(p.low < 0, kl)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    log_beta = ember.lgamma(a) + ember.lgamma(b) - ember.lgamma(a + b)
    cross = (log_beta - (a - 1) * _uniform_mean_log(p.low, p.high)
             - (b - 1) * _uniform_mean_log(1 - p.high, 1 - p.low))
    return _inf_where((p.low < 0) | (p.high > 1), cross - p.entropy())


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    return _inf_where((q.low > 0) | (q.high < 1), ember.log(q.high - q.low) - p.entropy())


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    gap = p.loc - q.loc
    z = gap / p.scale
    mean_abs = (math.sqrt(2 / math.pi) * p.scale * ember.exp(-0.5 * z ** 2)
                + gap * ember.erf(z / math.sqrt(2)))  # E|x - q.loc|
    return ember.log(2 * q.scale) + mean_abs / q.scale - p.entropy()


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return q.rate - p.probs * ember.log(q.rate) - p.entropy()
