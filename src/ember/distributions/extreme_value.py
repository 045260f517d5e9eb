"""Extreme-value and tail families: Gumbel, Weibull, Pareto (pushed-forward Uniform or
Exponential draws) and GeneralizedPareto (inverse-CDF draws)."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import Exponential, Uniform
from ember.distributions.distribution import _Elementwise
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, ExpTransform, PowerTransform
from ember.distributions.utils import (
    EULER_GAMMA,
    as_value,
    broadcast_all,
    one_minus_exp,
    where_above,
)
from ember.tensor import Tensor

__all__ = ["GeneralizedPareto", "Gumbel", "Pareto", "Weibull"]


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution with location ``loc`` and ``scale``:
    ``loc - scale * log(-log(U))`` for ``U`` uniform.

    Example:
        >>> ember.distributions.Gumbel(ember.tensor([1.0]), ember.tensor([2.0])).mode
        tensor([1.])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    _param_event_dims = {"loc": 0, "scale": 0}
    support = constraints.real

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale, owner="Gumbel")
        finfo = ember.finfo(self.loc.dtype)
        base = Uniform(ember.full_like(self.loc, finfo.tiny),
                       ember.full_like(self.loc, 1 - finfo.eps), validate_args=False)
        transforms = [ExpTransform().inv, AffineTransform(0.0, -ember.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]
        super().__init__(base, transforms, validate_args)

    mean = property(lambda self: self.loc + self.scale * EULER_GAMMA,
                    doc="``loc + scale * euler_gamma``.")
    mode = property(lambda self: self.loc, doc="``loc``.")
    stddev = property(lambda self: (math.pi / math.sqrt(6)) * self.scale,
                      doc="``pi / sqrt(6) * scale``.")
    variance = property(lambda self: self.stddev ** 2, doc="``pi^2 / 6 * scale^2``.")

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - ember.exp(y)) - ember.log(self.scale)

    def cdf(self, value: Tensor) -> Tensor:
        """``exp(-exp(-(x - loc) / scale))``: through the transforms the base Uniform's
        support check refused a cdf that rounds to 1 (``Gumbel(0, 1).cdf(40)`` raised, as in
        PyTorch). A Python number is taken as a tensor of ``loc``'s dtype, as PyTorch's
        transformed cdf takes one."""
        value = as_value(value, self.loc)
        if self._validate_args:
            self._validate_sample(value)
        return ember.exp(-ember.exp((self.loc - value) / self.scale))

    def icdf(self, value: Tensor) -> Tensor:
        """``loc - scale * log(-log(q))``, with ``q`` kept in ``[tiny, 1 - eps]`` as PyTorch's
        base Uniform keeps it (finite ends); through the transforms that Uniform's icdf
        rescaled every ``q`` by ``1 - eps``, 0.6% off at ``q = 1 - 1e-15``."""
        q = as_value(value, self.loc)
        finfo = ember.finfo(q.dtype)
        q = ember.where((q >= 0) & (q <= 1), q.clamp(finfo.tiny, 1 - finfo.eps), q)
        return self.loc - self.scale * ember.log(-ember.log(q))

    def entropy(self) -> Tensor:
        return ember.log(self.scale) + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """The Weibull distribution with ``scale`` (lambda) and ``concentration`` (k):
    ``scale * E ** (1 / k)`` for ``E ~ Exponential(1)``.

    Example:
        >>> ember.distributions.Weibull(ember.tensor([2.0]), ember.tensor([1.0])).mean
        tensor([2.])
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    _param_event_dims = {"scale": 0, "concentration": 0, "concentration_reciprocal": 0}
    support = constraints.positive

    def __init__(self, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration, owner="Weibull")
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ember.ones_like(self.scale), validate_args=False)
        transforms = [PowerTransform(self.concentration_reciprocal),
                      AffineTransform(0.0, self.scale)]
        super().__init__(base, transforms, validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        """``log(k / scale) + (k - 1) log z - z^k`` for ``z = value / scale``: through the
        transforms the Exponential draw ``z^k`` underflowed to 0 and the density to ``-inf``
        (``Weibull(1, 50).log_prob(1e-7)``, -785.9 in float32, as PyTorch's)."""
        if self._validate_args:
            self._validate_sample(value)
        k, z = self.concentration, value / self.scale
        return ember.log(k / self.scale) + ember.xlogy(k - 1, z) - z.pow(k)

    @property
    def mean(self) -> Tensor:
        """``scale * Gamma(1 + 1 / k)``."""
        return self.scale * ember.exp(ember.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        """``scale * ((k - 1) / k) ** (1 / k)``, zero for ``k <= 1`` (where PyTorch's is NaN or
        worse)."""
        return where_above(self.concentration, 1.0,
                           lambda k: self.scale * ((k - 1) / k) ** k.reciprocal(), 0.0, self.scale)

    @property
    def variance(self) -> Tensor:
        """``scale^2 (Gamma(1 + 2 / k) - Gamma(1 + 1 / k)^2)``."""
        r = self.concentration_reciprocal
        return self.scale ** 2 * (ember.exp(ember.lgamma(1 + 2 * r))
                                  - ember.exp(2 * ember.lgamma(1 + r)))

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return EULER_GAMMA * (1 - r) + ember.log(self.scale * r) + 1


def _pareto_mean(alpha: Tensor, scale: Tensor) -> Tensor:
    """The mean of a Pareto distribution with ``alpha > 1``."""
    return alpha * scale / (alpha - 1)


def _pareto_variance(alpha: Tensor, scale: Tensor) -> Tensor:
    """The variance of a Pareto distribution with ``alpha > 2``."""
    return scale ** 2 * alpha / ((alpha - 1) ** 2 * (alpha - 2))


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution on ``[scale, inf)`` with tail index ``alpha``:
    ``scale * exp(E)`` for ``E ~ Exponential(alpha)``.

    Example:
        >>> ember.distributions.Pareto(ember.tensor([1.0]), ember.tensor([3.0])).mean
        tensor([1.5000])
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _param_event_dims = {"scale": 0, "alpha": 0}

    def __init__(self, scale: Tensor | float, alpha: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha, owner="Pareto")
        base = Exponential(self.alpha, validate_args=False)
        super().__init__(base, [ExpTransform(), AffineTransform(0.0, self.scale)],
                         validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    mode = property(lambda self: self.scale, doc="``scale``.")

    @property
    def mean(self) -> Tensor:
        """``alpha * scale / (alpha - 1)``, infinite for ``alpha <= 1``."""
        return where_above(self.alpha, 1.0, lambda a: _pareto_mean(a, self.scale), math.inf,
                           self.scale)

    @property
    def variance(self) -> Tensor:
        """``scale^2 alpha / ((alpha - 1)^2 (alpha - 2))``, infinite for ``alpha <= 2``."""
        return where_above(self.alpha, 2.0, lambda a: _pareto_variance(a, self.scale), math.inf,
                           self.scale)

    def entropy(self) -> Tensor:
        return ember.log(self.scale / self.alpha) + (1 + self.alpha.reciprocal())


class GeneralizedPareto(_Elementwise):
    """The generalized Pareto distribution with ``loc``, ``scale`` and ``concentration``
    (xi): Exponential at ``xi = 0``, a Pareto for ``xi > 0``, bounded above by
    ``loc - scale / xi`` for ``xi < 0``.

    Example:
        >>> d = ember.distributions.GeneralizedPareto(0.0, 1.0, ember.tensor([0.0]))
        >>> d.cdf(ember.tensor([1.0]))
        tensor([0.6321])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    _param_event_dims = {"loc": 0, "scale": 0, "concentration": 0}
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 concentration: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(("loc", "scale", "concentration"), (loc, scale, concentration),
                         validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = ember.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                            math.inf)
        return constraints.interval(self.loc, upper)

    def _split(self, t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """For ``log1p(xi t) / xi`` and ``expm1(xi t) / xi``: where the series in ``xi`` is
        used (``xi`` within ``isclose`` of zero and ``|xi t|`` small, so the series is exact
        to rounding), the concentration with ones there (so the ``xi != 0`` formulas stay
        finite where they are not used) and the series' first-order term ``xi t^2 / 2``.
        Keeping that term keeps the slope in ``xi`` at zero (PyTorch's is zero); it is
        zero for an infinite ``t``, so the limits there stay those of PyTorch."""
        xi = self.concentration
        finite_t = ember.where(ember.isfinite(t), t, 0.0)
        xi_t = xi * finite_t
        series = ember.isclose(xi, ember.zeros_like(xi)) & (xi_t.abs() < 1e-4)
        # (0 where unused: far out xi t^2 overflows, and its inf times a zero slope was NaN)
        return series, ember.where(series, 1.0, xi), ember.where(series, 0.5 * xi_t * finite_t, 0.0)

    def _z(self, value: Tensor) -> Tensor:
        return (value - self.loc) / self.scale

    mode = property(lambda self: self.loc, doc="``loc``.")

    @property
    def mean(self) -> Tensor:
        """``loc + scale / (1 - xi)``; inf for ``xi >= 1`` (the tail is Pareto's, whose mean is
        inf there; PyTorch's is NaN)."""
        return where_above(-self.concentration, -1.0,
                           lambda neg_xi: self.loc + self.scale / (1 + neg_xi), math.inf,
                           self.loc, self.scale)

    @property
    def variance(self) -> Tensor:
        """``scale^2 / ((1 - xi)^2 (1 - 2 xi))``; inf for ``xi >= 1/2``, as ``Pareto``'s
        (PyTorch's is NaN)."""
        return where_above(-self.concentration, -0.5, lambda neg_xi: self.scale ** 2
                           / ((1 + neg_xi) ** 2 * (1 + 2 * neg_xi)), math.inf, self.scale)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(self._uniform(sample_shape, self.loc.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        z = self._z(self._checked(value))
        series, xi, first_order = self._split(z)
        y = 1 / xi + 1
        exact = ember.where(y == 0, y, y * ember.log1p(xi * z))
        near_zero = (z - first_order) * (1 + self.concentration)
        return -ember.log(self.scale) - ember.where(series, near_zero, exact)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log P(X > value)``."""
        z = self._z(self._checked(value))
        series, xi, first_order = self._split(z)
        return ember.where(series, first_order - z, -ember.log1p(xi * z) / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log P(X <= value)``: ``log(1 - e^s)`` of the log survival ``s``, as
        ``log(-expm1(s))`` above ``-log 2`` (no cancellation next to ``loc``)."""
        s = self.log_survival_function(value)
        near = s > -math.log(2.0)
        return ember.where(near, ember.log(-ember.expm1(ember.where(near, s, -1.0))),
                           ember.log1p(-ember.exp(ember.where(near, -1.0, s))))

    def cdf(self, value: Tensor) -> Tensor:
        s = self.log_survival_function(value)  # (NaN below loc, as log_cdf and PyTorch)
        return ember.where(s > 0, math.nan, one_minus_exp(ember.where(s > 0, 0.0, s)))

    def icdf(self, value: Tensor) -> Tensor:
        t = -ember.log1p(-value)
        series, xi, first_order = self._split(t)
        return self.loc + self.scale * ember.where(series, t + first_order,
                                                   ember.expm1(xi * t) / xi)

    def entropy(self) -> Tensor:
        return ember.broadcast_to(ember.log(self.scale) + self.concentration + 1,
                                  self._batch_shape)
