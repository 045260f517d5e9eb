"""Families on ``[0, 1]`` besides Beta: Kumaraswamy (a closed-form CDF) and
ContinuousBernoulli (the normalized Bernoulli likelihood of a value in ``[0, 1]``)."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import Uniform
from ember.distributions.discrete import _BinaryParams
from ember.distributions.distribution import _all_true
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, PowerTransform
from ember.distributions.utils import (
    EULER_GAMMA,
    as_value,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    one_minus_exp,
)
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["ContinuousBernoulli", "Kumaraswamy"]

F = ember.nn.functional


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[x^n] = b B(1 + n / a, b)``."""
    arg = 1 + n / a
    return b * ember.exp(ember.lgamma(arg) + ember.lgamma(b) - ember.lgamma(arg + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on ``[0, 1]`` with ``concentration1`` (a) and
    ``concentration0`` (b): density ``a b x^(a-1) (1 - x^a)^(b-1)``, drawn as
    ``(1 - U^(1/b))^(1/a)``.

    Example:
        >>> ember.distributions.Kumaraswamy(ember.tensor([1.0]), ember.tensor([1.0])).mean
        tensor([0.5000])
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    _param_event_dims = {"concentration1": 0, "concentration0": 0}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(
            concentration1, concentration0, owner="Kumaraswamy")
        base = Uniform(ember.zeros_like(self.concentration0),
                       ember.ones_like(self.concentration0), validate_args=False)
        transforms = [PowerTransform(self.concentration0.reciprocal()),
                      AffineTransform(1.0, -1.0),
                      PowerTransform(self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args)

    @property
    def mean(self) -> Tensor:
        """``b B(1 + 1 / a, b)``."""
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """``((a - 1) / (a b - 1)) ** (1 / a)``; NaN where ``a < 1`` or ``b < 1`` (PyTorch's
        is NaN everywhere)."""
        a, b = self.concentration1, self.concentration0
        flat = (b < 1) | (a < 1)
        a, b = ember.where(flat, 2.0, a), ember.where(flat, 2.0, b)  # finite unused gradients
        return ember.where(flat, math.nan, ((a - 1) / (a * b - 1)) ** a.reciprocal())

    @property
    def variance(self) -> Tensor:
        """``E[x^2] - E[x]^2``."""
        a, b = self.concentration1, self.concentration0
        return _kumaraswamy_moment(a, b, 2) - self.mean ** 2

    def log_prob(self, value: Tensor) -> Tensor:
        """``log(a b) + (a - 1) log x + (b - 1) log1p(-x^a)``, ``-inf`` outside ``[0, 1]``
        (through the transforms ``1 - x^a`` rounded to 1, the base Uniform's edge: -inf
        below ``x = 1e-8`` for a = 2, as PyTorch's)."""
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        outside = (value < 0) | (value > 1)
        x = ember.where(outside, 0.5, value)  # (finite slopes in the branch not taken)
        log_prob = (ember.log(a * b) + ember.xlogy(a - 1, x)
                    + ember.special.xlog1py(b - 1, -x.pow(a)))
        return ember.where(outside, -math.inf, log_prob)

    def cdf(self, value: Tensor) -> Tensor:
        """``1 - (1 - x^a)^b`` as ``-expm1(b log1p(-x^a))`` (through the transforms it
        cancelled: 11% off at ``x = 1e-8`` for a = 2)."""
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0  # (0 below 0 and 1 above 1, as the
        x = as_value(value, a).clamp(0.0, 1.0)  # clamped Uniform cdf)
        # 1 at x = 1 with zero slopes (log1p(-1) made them 0 * inf = NaN); a NaN value stays
        inside = ~(x >= 1)  # inside, so its cdf is NaN (``x < 1`` sent it to 1)
        cdf = one_minus_exp(b * ember.log1p(-ember.where(inside, x, 0.5) ** a))
        return ember.where(inside, cdf, 1.0)

    def icdf(self, value: Tensor) -> Tensor:
        """``(1 - (1 - q)^(1/b))^(1/a)`` as ``(-expm1(log1p(-q) / b))^(1/a)``."""
        a, b = self.concentration1, self.concentration0
        value = as_value(value, a)
        # at q = 1 log1p(-1) = -inf made the slopes 0 * inf = NaN: there the plain form, 1
        # with PyTorch's slopes (d/dq inf for b > 1); each branch sees only its own values
        inside = value < 1
        q, edge = ember.where(inside, value, 0.5), ember.where(inside, 0.5, value)
        return ember.where(inside, one_minus_exp(ember.log1p(-q) / b) ** a.reciprocal(),
                           (1 - (1 - edge) ** b.reciprocal()) ** a.reciprocal())

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic_b = ember.digamma(b + 1) + EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - ember.log(a) \
            - ember.log(b)


class ContinuousBernoulli(_BinaryParams, ExponentialFamily):
    """The continuous Bernoulli distribution on ``[0, 1]`` (Loaiza-Ganem and Cunningham,
    2019): density ``C(p) p^x (1 - p)^(1 - x)``, given by ``probs`` in ``(0, 1)`` or
    ``logits``. Near ``p = 1/2`` (inside ``lims``) the normalizer, moments, CDF and inverse
    CDF use Taylor expansions, as in PyTorch (whose CDF and inverse there are the identity;
    these are second order in the logit, with the exact ones' slope in ``probs``).

    Example:
        >>> d = ember.distributions.ContinuousBernoulli(ember.tensor([0.5]))
        >>> d.mean, d.log_prob(ember.tensor([0.3]))
        (tensor([0.5000]), tensor([0.]))
    """

    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        shape, _ = self._set_param(probs, logits)
        if "probs" in self.__dict__:
            checking = self._validate_args if validate_args is None else validate_args
            if checking and not _all_true(constraints.unit_interval.check(self.probs)):
                raise ArgumentError(f"ContinuousBernoulli: expected parameter probs (Tensor of "
                                    f"shape {tuple(self.probs.shape)}) to lie in [0, 1], but found "
                                    f"invalid values:\n{self.probs}\nhint: pass "
                                    "validate_args=False to skip this check")
            self.probs = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(shape, (), validate_args)

    @lazy_property
    def probs(self) -> Tensor:
        """``sigmoid(logits)``, kept inside ``[eps, 1 - eps]``."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """``probs``, moved to ``lims[0]`` inside the unstable region (where the Taylor
        branch is used instead), in float64: the exact formulas cancel next to ``lims`` (in
        float32 the variance at ``p = 0.499`` came out 0.25, not 1/12)."""
        return ember.where(self._outside_unstable_region(), self.probs.double(), self._lims[0])

    def _pick(self, exact: Tensor, taylor: Tensor) -> Tensor:
        """The exact formula (in float64, from ``_cut_probs``) outside ``lims``, the Taylor
        series inside, in the Taylor branch's dtype."""
        return ember.where(self._outside_unstable_region(), exact.to(taylor.dtype), taylor)

    @staticmethod
    def _abs_log_odds(p: Tensor) -> tuple[Tensor, Tensor]:
        """``|log((1 - p) / p)|`` as ``log1p((1 - 2q) / q)`` for ``q = min(p, 1 - p)`` (``q``
        and ``1 - 2q`` are exact near 1/2, where ``log1p(-p) - log(p)`` cancels), and ``q``."""
        q = ember.minimum(p, 1.0 - p)
        return ember.log1p((1.0 - 2.0 * q) / q), q

    def _log_odds_gap(self, p: Tensor) -> Tensor:
        """``log((1 - p) / p)``, without cancellation (see ``_abs_log_odds``)."""
        gap = self._abs_log_odds(p)[0]
        return ember.where(p <= 0.5, gap, -gap)

    def _cont_bern_log_norm(self) -> Tensor:
        """``log C(p)``, the log normalizing constant, ``log |log((1-p)/p)| - log |1 - 2p|``."""
        gap, q = self._abs_log_odds(self._cut_probs())
        log_norm = ember.log(gap) - ember.log1p(-2.0 * q)
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return self._pick(log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        """The mean, ``p / (2p - 1) + 1 / log((1 - p) / p)``."""
        p = self._cut_probs()
        exact = p / (2.0 * p - 1.0) + 1.0 / self._log_odds_gap(p)
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return self._pick(exact, taylor)

    @property
    def variance(self) -> Tensor:
        """The variance, ``p (p - 1) / (1 - 2p)^2 + 1 / log((1 - p) / p)^2``."""
        p = self._cut_probs()
        exact = p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / self._log_odds_gap(p) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return self._pick(exact, taylor)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(ember.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, self._checked(value))
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        p = self._cut_probs()
        exact = (1.0 - p) * ember.expm1(-value * self._log_odds_gap(p)) / (2.0 * p - 1.0)
        # expm1(l x) / expm1(l) for the logit l, to second order (PyTorch: x)
        lam = self.logits
        taylor = value + 0.5 * lam * value * (value - 1.0) * (1.0 + lam * (2.0 * value - 1.0) / 6.0)
        inside = self._pick(exact, taylor)
        return ember.where(value <= 0.0, 0.0, ember.where(value >= 1.0, 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        p = self._cut_probs()
        exact = -ember.log1p(value * (2.0 * p - 1.0) / (1.0 - p)) / self._log_odds_gap(p)
        # log1p(u expm1(l)) / l for the logit l, to second order (PyTorch: u)
        lam = self.logits
        taylor = value + 0.5 * lam * value * (1.0 - value) * (1.0 + lam * (1.0 - 2.0 * value) / 3.0)
        return self._pick(exact, taylor)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """``log((e^x - 1) / x)``, by its Taylor series near ``x = 0`` (``probs`` near 1/2)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ember.where(outside, x, self._lims[0] - 0.5)
        log_norm = ember.log(ember.abs(ember.expm1(cut))) - ember.log(ember.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ember.where(outside, log_norm, taylor)

    def entropy(self) -> Tensor:
        log_p0, log_p1 = ember.log1p(-self.probs), ember.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0
