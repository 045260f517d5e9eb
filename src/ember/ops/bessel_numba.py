"""The modified Bessel functions ``I_0`` and ``I_1`` (and their scaled forms) of
:mod:`ember.ops.bessel_kernel` as one-pass numba loops over float64 blocks (imported only
when :func:`ember.backend.compiled.numba_enabled`): the twin's power series up to
``|x| = 30`` and Hankel's expansion beyond, each element on its own. The series stops once a
term adds less than 1e-17 of the sum (the twin sums all 90 terms: ~3× fewer steps on
``[-10, 10]``; the terms it leaves out change no result by more than an ulp), and each term
is the last times ``q`` times a precomputed ``1 / (k (nu + k))``: a division there made the
loop wait on it (3× the time; both within 2e-15 of mpmath on ``[-30, 30]``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.bessel_kernel import _I_SERIES_TERMS

# the digest of bessel_kernel.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "0bc0bbb262e9df16"

_HANKEL_TERMS = 40
# 1 / (k (nu + k)) for nu = 0, 1 and k < _I_SERIES_TERMS (k = 0 unused)
_RECIPROCALS = np.array([[0.0] + [1.0 / (k * (nu + k)) for k in range(1, _I_SERIES_TERMS)]
                         for nu in (0, 1)])
_SQRT_2PI = math.sqrt(2 * math.pi)


@njit("float64(float64, int64, boolean)")
def bessel_i(x, nu, scaled):
    """``I_nu(x)`` (nu 0 or 1) of one float64, or ``e^-|x| I_nu(x)`` when ``scaled``."""
    ax = abs(x)
    if ax <= 30.0:
        q = 0.25 * ax * ax
        term = 1.0
        total = 1.0
        for k in range(1, _I_SERIES_TERMS):
            term = term * (q * _RECIPROCALS[nu, k])
            total = total + term
            if term < 1e-17 * total:
                break
        if nu == 1:
            total = total * (0.5 * ax)
        out = total * math.exp(-ax) if scaled else total
    elif ax > 30.0:
        mu = 4.0 * nu * nu
        term = 1.0
        series = 1.0
        for k in range(1, _HANKEL_TERMS):
            term = term * (mu - (2 * k - 1) ** 2) / (8.0 * k * ax)
            series = series + (-term if k % 2 else term)
        scaled_big = series / (_SQRT_2PI * math.sqrt(ax))  # 2 pi ax may overflow
        half = math.exp(0.5 * ax)  # e^ax in two exact halves: finite up to I's own overflow
        out = scaled_big if scaled else half * (half * scaled_big)
    else:
        out = math.nan
    return -out if nu == 1 and x < 0 else out


@njit([types.void(types.Array(types.float64, 1, "C", readonly=ro),
                  types.Array(types.float64, 1, "C"), types.int64, types.boolean)
       for ro in (False, True)])
def bessel_i64(a, out, nu, scaled):
    """``bessel_i`` of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = bessel_i(a[i], nu, scaled)
