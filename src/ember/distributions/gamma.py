"""The Gamma distribution and Chi2, its special case; both sample through
``ember._standard_gamma`` (implicit reparameterization gradients in the concentration)."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import _Elementwise
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.stirling import stirling_remainders
from ember.tensor import Tensor

__all__ = ["Chi2", "Gamma"]


class Gamma(_Elementwise, ExponentialFamily):
    """The Gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    ``rsample`` is reparameterized in both parameters (implicit gradients for the
    concentration).

    Example:
        >>> ember.distributions.Gamma(ember.tensor(2.0), ember.tensor(4.0)).mean
        tensor(0.5000)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    _param_event_dims = {"concentration": 0, "rate": 0}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Tensor | float, rate: Tensor | float,
                 validate_args: bool | None = None) -> None:
        super().__init__(("concentration", "rate"), (concentration, rate), validate_args)

    mean = property(lambda self: self.concentration / self.rate, doc="``concentration / rate``.")
    variance = property(lambda self: self.concentration / self.rate ** 2,
                        doc="``concentration / rate ** 2``.")

    @property
    def mode(self) -> Tensor:
        """``(concentration - 1) / rate``, or zero when the concentration is below one."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        z = ember._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return z.clamp(min=ember.finfo(z.dtype).tiny)

    def log_prob(self, value: Tensor | float) -> Tensor:
        # (a number or a tensor of another dtype is converted first, as PyTorch does)
        value = self._checked(ember.as_tensor(value, dtype=self.rate.dtype))
        c, r = self.concentration, self.rate
        return ember.xlogy(c, r) + ember.xlogy(c - 1, value) - r * value - ember.lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        """``P(concentration, rate * value)``, the regularized lower incomplete gamma function
        (no gradient in the concentration, as in PyTorch)."""
        value = self._checked(value)
        return ember.special.gammainc(self.concentration, self.rate * value)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def entropy(self) -> Tensor:
        """``c + lgamma(c) + (1 - c) digamma(c) - log(rate)`` with the ``c log c`` terms
        cancelled by hand (Stirling's remainders; PyTorch's form is 1e-3 off at ``c = 1e4``
        in float32)."""
        c = self.concentration
        gamma_rest, digamma_rest = stirling_remainders(c)
        return (0.5 * ember.log((2 * math.pi) * c) + 0.5 - 0.5 / c + gamma_rest
                - (c - 1) * digamma_rest - ember.log(self.rate))


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Example:
        >>> ember.distributions.Chi2(ember.tensor([3.0])).variance
        tensor([6.])
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args)

    df = property(lambda self: self.concentration * 2, doc="The degrees of freedom.")
