"""Elementary continuous distributions: Normal, Laplace, Uniform, Exponential."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import _Elementwise
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import one_minus_exp
from ember.tensor import Tensor

__all__ = ["Exponential", "Laplace", "Normal", "Uniform"]


class _LocationScale(_Elementwise):
    """A distribution on the real line given by ``loc`` (its mean and mode) and a positive
    ``scale``: what Normal and Laplace share."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    _param_event_dims = {"loc": 0, "scale": 0}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        super().__init__(("loc", "scale"), (loc, scale), validate_args)

    mean = property(lambda self: self.loc, doc="The mean, ``loc``.")
    mode = property(lambda self: self.loc, doc="The mode, ``loc``.")


class Normal(_LocationScale, ExponentialFamily):
    """The normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Example:
        >>> d = ember.distributions.Normal(ember.tensor([0.0]), ember.tensor([1.0]))
        >>> d.log_prob(ember.tensor([0.0]))
        tensor([-0.9189])
    """

    stddev = property(lambda self: self.scale, doc="The standard deviation, ``scale``.")
    variance = property(lambda self: self.scale ** 2, doc="The variance, ``scale ** 2``.")

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = ember.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return (-((value - self.loc) ** 2) / (2 * self.scale ** 2) - ember.log(self.scale)
                - 0.5 * math.log(2 * math.pi))

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return 0.5 * ember.special.erfc((self.loc - value) / (self.scale * math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        """``loc + scale * ndtri(value)``: PyTorch's ``erfinv(2 q - 1) sqrt(2)`` rounds
        ``2 q - 1`` to -1 below ``q = 1e-16`` (``-inf`` for ``icdf(1e-20)``, not -9.26)."""
        return self.loc + self.scale * ember.special.ndtri(value)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * ember.log(-math.pi / y)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + ember.log(self.scale)


class Laplace(_LocationScale):
    """The Laplace distribution: density ``exp(-|x - loc| / scale) / (2 scale)``.

    Example:
        >>> ember.distributions.Laplace(0.0, 1.0).variance
        tensor(2.)
    """

    stddev = property(lambda self: math.sqrt(2) * self.scale, doc="``sqrt(2) * scale``.")
    variance = property(lambda self: 2 * self.scale ** 2, doc="``2 * scale ** 2``.")

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = ember.finfo(self.loc.dtype).eps
        u = self._uniform(sample_shape, self.loc.dtype) * (2 - eps) - (1 - eps)  # in (-1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return -ember.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        z = value - self.loc  # 0.5 e^(z/b) below loc (0.5 + 0.5 expm1 cancelled there)
        below = z < 0
        u = ember.where(below, z, -z) / self.scale
        return ember.where(below, 0.5 * ember.exp(u), 0.5 - 0.5 * ember.expm1(u))

    def icdf(self, value: Tensor) -> Tensor:
        """``log(2 q)`` below the median and ``-log(2 (1 - q))`` above, in scale units
        (PyTorch's ``log1p(-2 |q - 1/2|)`` rounds ``q - 1/2`` to -1/2 below ``q = 1e-17``:
        ``-inf`` for ``icdf(1e-20)``, not -45.36)."""
        below = value < 0.5
        z = ember.log(2 * ember.where(below, value, 1 - value))
        return self.loc + self.scale * ember.where(below, z, -z)

    def entropy(self) -> Tensor:
        return 1 + ember.log(2 * self.scale)


class Uniform(_Elementwise):
    """The uniform distribution on the half-open interval ``[low, high)``.

    Example:
        >>> ember.distributions.Uniform(0.0, 2.0).mean
        tensor(1.)
    """

    _param_event_dims = {"low": 0, "high": 0}
    has_rsample = True

    def __init__(self, low: Tensor | float, high: Tensor | float,
                 validate_args: bool | None = None) -> None:
        super().__init__(("low", "high"), (low, high), validate_args)

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """``low < high``, checked elementwise."""
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2, doc="``(low + high) / 2``.")
    stddev = property(lambda self: (self.high - self.low) / 12 ** 0.5,
                      doc="``(high - low) / sqrt(12)``.")
    variance = property(lambda self: (self.high - self.low) ** 2 / 12,
                        doc="``(high - low) ** 2 / 12``.")

    @property
    def mode(self) -> Tensor:
        """Every point is a mode: NaN, as in PyTorch (``nan * high``, so it stays in the graph)."""
        return self.high * math.nan

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.low + self._uniform(sample_shape, self.low.dtype) * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return ember.log(inside) - ember.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return ember.log(self.high - self.low)


class Exponential(_Elementwise, ExponentialFamily):
    """The exponential distribution with ``rate`` (mean ``1 / rate``).

    Example:
        >>> ember.distributions.Exponential(ember.tensor(2.0)).mean
        tensor(0.5000)
    """

    arg_constraints = {"rate": constraints.positive}
    _param_event_dims = {"rate": 0}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(("rate",), (rate,), validate_args)

    mean = property(lambda self: self.rate.reciprocal(), doc="``1 / rate``.")
    mode = property(lambda self: ember.zeros_like(self.rate), doc="Zero.")
    stddev = property(lambda self: self.rate.reciprocal(), doc="``1 / rate``.")
    variance = property(lambda self: self.rate ** -2, doc="``1 / rate ** 2``.")

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # inverse-CDF draws (as Tensor.exponential_ makes them), out of place so vmap batches
        return self.icdf(self._uniform(sample_shape, self.rate.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return ember.log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return one_minus_exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -ember.log1p(-value) / self.rate

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -ember.log(-x)

    def entropy(self) -> Tensor:
        return 1.0 - ember.log(self.rate)
