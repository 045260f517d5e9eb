"""The Gamma distribution and the reparameterized standard-gamma sample that Gamma, Beta and
Dirichlet share.

Gradients of a gamma sample ``z`` with respect to its concentration ``a`` use implicit
reparameterization (Figurnov et al., 2018): ``z`` solves ``P(a, z) = u`` for the regularized
lower incomplete gamma ``P``, so ``dz/da = -(dP/da) / pdf(z)``. Dividing the series
``P(a, z) = sum_k z^(a+k) e^(-z) / Gamma(a+k+1)`` by the density gives

    dz/da = -sum_k r_k (log z - digamma(a + k + 1)),   r_0 = z / a,   r_(k+1) = r_k z / (a+k+1),

summed in float64 until the terms vanish (about ``z + 10 sqrt(z)`` terms).
"""

from __future__ import annotations

from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions._sampling import standard_gamma
from ember.distributions.distribution import _Elementwise
from ember.tensor import Tensor

__all__ = ["Chi2", "Gamma", "standard_gamma_rsample"]

_MAX_TERMS = 100_000


def _standard_gamma_grad(concentration: Tensor, z: Tensor) -> Tensor:
    """``dz/da`` of a Gamma(a, 1) sample ``z`` at fixed CDF level (see the module docstring)."""
    with ember.no_grad():
        a, z = concentration.to(ember.float64), z.to(ember.float64)
        log_z = ember.log(z)
        r = z / a
        total = ember.zeros_like(z)
        for k in range(_MAX_TERMS):
            term = r * (log_z - ember.digamma(a + k + 1))
            total = total + term
            r = r * z / (a + k + 1)
            past_peak = bool((a + k + 1 > z).all())  # r only shrinks from here on
            if past_peak and bool((term.abs() <= 1e-17 * total.abs() + 1e-300).all()):
                break
        return (-total).to(concentration.dtype)


def standard_gamma_rsample(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) samples, one per element, differentiable with respect to
    ``concentration`` through the implicit reparameterization gradient.

    Example:
        >>> a = ember.tensor([2.0], requires_grad=True)
        >>> standard_gamma_rsample(a).sum().backward()
    """
    z = standard_gamma(concentration)
    if not (concentration.requires_grad and ember.is_grad_enabled()):
        return z
    dz_da = _standard_gamma_grad(concentration.detach(), z)
    # the value is z; the first derivative with respect to the concentration is dz_da
    return z + (concentration - concentration.detach()) * dz_da


class Gamma(_Elementwise):
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
        z = standard_gamma_rsample(self.concentration.expand(shape)) / self.rate.expand(shape)
        return z.clamp(min=ember.finfo(z.dtype).tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        c, r = self.concentration, self.rate
        return ember.xlogy(c, r) + ember.xlogy(c - 1, value) - r * value - ember.lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        """``P(concentration, rate * value)``, the regularized lower incomplete gamma function
        (no gradient in the concentration, as in PyTorch)."""
        value = self._checked(value)
        return ember.special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - ember.log(self.rate) + ember.lgamma(c) + (1 - c) * ember.digamma(c)


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
