"""``lgamma``, ``digamma`` and trigamma (``polygamma(1)``) of :mod:`ember.ops.gamma_kernel` as
one-pass numba loops over float64 blocks (imported only when
:func:`ember.backend.compiled.numba_enabled`).

lgamma is the C library's ``lgamma`` (within 5e-16 relative over [-30, 1e308] against
mpmath, also beside the negative roots, where the twin's reflection loses digits: 9e-2 at
-2.4570247382208); digamma is the twin's own steps (the recurrence up to 12, the asymptotic
series, the reflection with cot below 0) for each element in turn, and trigamma likewise (the
twin's bits: ``tests/ops/test_gamma.py``). Special points as the twin's. The constants come
from :mod:`ember.ops.gamma_kernel` (see ``DEPENDENCY_DIGEST``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.gamma_kernel import BERNOULLI, polygamma_series

# the digest of gamma_kernel.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "e0b822387c4f5850"

# the asymptotic series' coefficients B_2k / (2k)
_SERIES = tuple(b / (2 * k) for k, b in enumerate(BERNOULLI, start=1))
_TRIGAMMA_SERIES = polygamma_series(1)
_PI2 = math.pi ** 2
_BLOCKS = [types.void(types.Array(types.float64, 1, "C", readonly=ro),
                      types.Array(types.float64, 1, "C")) for ro in (False, True)]


@njit(_BLOCKS)
def lgamma64(a, out):
    """``log|Γ(x)|`` of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = math.lgamma(a[i])


@njit("float64(float64)")
def _digamma_pos(x):
    """digamma of a finite x > 0."""
    acc = 0.0
    while x < 12.0:
        acc = acc - 1.0 / x
        x = x + 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = math.log(x) - 0.5 * inv
    power = inv2
    for c in _SERIES:
        series = series - c * power
        power = power * inv2
    return series + acc


@njit("float64(float64)")
def digamma(x):
    """digamma of one float64: ``∓inf`` at ``±0``, NaN at negative integers and at -inf."""
    if not math.isfinite(x):
        return x if x > 0 else math.nan
    if x > 0.0:
        return _digamma_pos(x)
    if x == math.floor(x):
        return (math.inf if math.copysign(1.0, x) < 0 else -math.inf) if x == 0 else math.nan
    r = x - np.rint(x)
    return _digamma_pos(1.0 - x) - math.pi * (math.cos(math.pi * r) / math.sin(math.pi * r))


@njit(_BLOCKS)
def digamma64(a, out):
    """digamma of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = digamma(a[i])


@njit("float64(float64)")
def _trigamma_pos(x):
    """trigamma of a finite x > 0."""
    acc = 0.0
    while x < 13.0:
        acc = acc + 1.0 / (x * x)
        x = x + 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv + 0.5 * inv * inv
    power = inv * inv2
    for c in _TRIGAMMA_SERIES:
        series = series + c * power
        power = power * inv2
    return series + acc


@njit(_BLOCKS)
def trigamma64(a, out):
    """trigamma of a float64 block into ``out``: +inf at poles, 0 at +inf, NaN at -inf."""
    for i in range(a.size):
        x = a[i]
        if x > 0.0:
            out[i] = _trigamma_pos(x) if x < math.inf else 0.0
        elif not math.isfinite(x):
            out[i] = math.nan
        elif x == math.floor(x):  # a pole
            out[i] = math.inf
        else:  # psi'(x) = -psi'(1 - x) + pi² (1 + cot²(pi x))
            r = x - np.rint(x)
            c = math.cos(math.pi * r) / math.sin(math.pi * r)
            # (not _PI2 * (1 + c * c): the twin's _horner steps for -1 - c², bit for bit)
            out[i] = -_trigamma_pos(1.0 - x) - _PI2 * ((-c + -0.0) * c - 1.0)
