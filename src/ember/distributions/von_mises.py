"""The von Mises distribution on the circle, sampled by Best and Fisher's (1979) rejection
method (``ember._sample_von_mises``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import _Elementwise
from ember.tensor import Tensor

__all__ = ["VonMises"]

# Polynomial approximations of the modified Bessel functions I0 and I1 (Abramowitz and
# Stegun 9.8.1-9.8.4): in (x / 3.75)^2 below 3.75, in 3.75 / x above (times e^x / sqrt(x)).
_SMALL = {0: [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
          1: [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2,
              0.32411e-3]}
_LARGE = {0: [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2,
              -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2],
          1: [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
              0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2]}

# the coefficients of P0 - P1 after the constant (their constant terms are equal)
_LARGE_GAP = [a - b for a, b in zip(_LARGE[0][1:], _LARGE[1][1:])]


def _polynomial(y: Tensor, coefficients: Sequence[float]) -> Tensor:
    result: Any = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = c + y * result
    return result


def _log_bessel_ie(x: Tensor, order: int) -> Tensor:
    """``log I_order(x) - x`` for ``x > 0`` and order 0 or 1 (the approximations PyTorch
    uses), without the ``x`` that would cancel against ``k cos`` and between the orders.
    Each branch sees only its own range, so the other's overflow sends no NaN slope."""
    below = x < 3.75
    xs, xl = ember.where(below, x, 1.0), ember.where(below, 3.75, x)
    small = _polynomial((xs / 3.75) ** 2, _SMALL[order])
    if order == 1:
        small = xs.abs() * small
    large = -0.5 * ember.log(xl) + ember.log(_polynomial(3.75 / xl, _LARGE[order]))
    return ember.where(below, ember.log(small) - xs, large)


class VonMises(_Elementwise):
    """The von Mises (circular normal) distribution with mean direction ``loc`` and
    ``concentration``; ``loc`` and values are angles in radians, read modulo ``2 pi``
    (samples lie in ``[-pi, pi]``). ``mean`` and ``variance`` are the circular ones. Only
    ``sample`` (a rejection sampler, in float64), no ``rsample``, as in PyTorch.

    Example:
        >>> d = ember.distributions.VonMises(ember.tensor([0.0]), ember.tensor([1.0]))
        >>> d.log_prob(ember.tensor([0.0]))
        tensor([-1.0738])
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    _param_event_dims = {"loc": 0, "concentration": 0}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        super().__init__(("loc", "concentration"), (loc, concentration), validate_args)

    mean = property(lambda self: self.loc, doc="The circular mean, ``loc``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    @property
    def variance(self) -> Tensor:
        """The circular variance, ``1 - I1(concentration) / I0(concentration)``; above 3.75
        as ``(P0 - P1) / P0`` for the two large-argument polynomials, whose difference has no
        constant term (``1 - P1 / P0`` cancels: float32's was 0 at 1e4)."""
        k = self.concentration
        below = k < 3.75
        # below 3.75, 1 - k S1 / S0 of the small-argument polynomials: it stays above 0.146,
        # so nothing cancels
        ks = ember.where(below, k, 1.0)
        x = (ks / 3.75) ** 2
        small = 1 - ks * _polynomial(x, _SMALL[1]) / _polynomial(x, _SMALL[0])
        y = 3.75 / ember.where(below, 3.75, k)
        large = y * _polynomial(y, _LARGE_GAP) / _polynomial(y, _LARGE[0])
        return ember.where(below, small, large)

    def log_prob(self, value: Tensor) -> Tensor:
        """``k (cos(x - loc) - 1) - log(2 pi) - log(I0(k) e^-k)``, with ``cos - 1`` as
        ``-2 sin^2``."""
        value = self._checked(value)
        k = self.concentration
        return (-2.0 * k * ember.sin(0.5 * (value - self.loc)) ** 2 - math.log(2 * math.pi)
                - _log_bessel_ie(k, 0))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Best and Fisher's rejection sampler (``ember._sample_von_mises``, in float64)."""
        shape = self._extended_shape(sample_shape)
        return ember._sample_von_mises(self.loc.expand(shape), self.concentration.expand(shape))
