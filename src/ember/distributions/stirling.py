"""The remainders of Stirling's series for ``lgamma`` and ``digamma``: the small parts left
once the large terms, which entropies cancel between each other, are taken out by hand.

``lgamma(c) = (c - 1/2) log c - c + log(2 pi) / 2 + gamma_remainder(c)`` and
``digamma(c) = log c - 1 / (2 c) + digamma_remainder(c)``; both remainders are O(1/c) and
O(1/c²), summed from their asymptotic series from ``c = 16`` on (to double precision there)
and taken from ``lgamma`` and ``digamma`` below.
"""

from __future__ import annotations

import math

import ember
from ember.tensor import Tensor

__all__ = ["stirling_remainders"]

_SERIES_FROM = 16.0
# Bernoulli-number coefficients: 1/12, -1/360, 1/1260, -1/1680, 1/1188 (lgamma, in 1/c odd
# powers) and -1/12, 1/120, -1/252, 1/240, -1/132 (digamma, in 1/c even powers)
_LGAMMA = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)
_DIGAMMA = (-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132)


def _series(w: Tensor, coefficients: tuple[float, ...]) -> Tensor:
    """``sum_i coefficients[i] w^i`` by Horner's rule, ``w = 1 / c²``."""
    result = w * coefficients[-1]
    for c in reversed(coefficients[1:-1]):
        result = w * (result + c)
    return result + coefficients[0]


def stirling_remainders(c: Tensor) -> tuple[Tensor, Tensor]:
    """``(lgamma(c) - ((c - 1/2) log c - c + log(2 pi) / 2), digamma(c) - (log c - 1 / (2 c)))``,
    about ``1 / (12 c)`` and ``-1 / (12 c²)``. Each branch of the ``where`` sees ``c``
    clamped to its own side of 16, so neither sends a NaN slope through it.

    Example:
        >>> stirling_remainders(ember.tensor([1e2], dtype=ember.float64))[0]
        tensor([0.0008], dtype=ember.float64)
    """
    large = c >= _SERIES_FROM
    small, big = c.clamp(max=_SERIES_FROM), c.clamp(min=_SERIES_FROM)
    log_small = ember.log(small)
    gamma_direct = ember.lgamma(small) - ((small - 0.5) * log_small - small
                                          + 0.5 * math.log(2 * math.pi))
    digamma_direct = ember.digamma(small) - log_small + 0.5 / small
    u = big.reciprocal()
    w = u * u
    return (ember.where(large, _series(w, _LGAMMA) * u, gamma_direct),
            ember.where(large, _series(w, _DIGAMMA) * w, digamma_direct))
