"""float32 softplus, and logaddexp (``max + softplus(-|x - y|)``), as one-pass numba loops
(imported only when :func:`ember.backend.compiled.numba_enabled`; chosen by
:mod:`ember.ops.softplus_mish`).

Its values are the NumPy twin's (``max(s, 0) + log1p(exp(-|s|))`` of ``s = beta·x`` in float64,
rounded once to float32): the same steps, with float64 exp and log1p of Ember's own that the
loop vectorizes (libm's scalar ``log1p`` alone cost ~6 ns an element, the whole pass ~13).
Both are within ~2 float64 ulps (products and sums fused into multiply-adds, ``contract``), so
the float32 results are the twin's bit for bit but where the exact value lies within ~1e-16 of
a float32 rounding midpoint (none of every 16th float32, at beta 1 and four other
beta/threshold pairs; such a value would be off by 1 ulp, still within 0.5 ulp + 1e-16). One
thread, 10^5 elements: 233 µs (torch's float32 kernel 153, the twin's seven passes ~450;
6 December, host load 7 on 2 cores).

exp(t), ``-110 ≤ t ≤ 0`` (below, 0: e^-110 rounds to 0 in float32): t = n·ln2 + r,
``|r| ≤ ln2/2``, e^r by its Taylor series to degree 13 (first omitted term below 5e-18), 2^n
made from its bits. log1p(u), ``0 ≤ u ≤ 1``: ``v = 1 + u`` rounded,
``log(v) + (u - (v - 1))·(2 - v)`` (the rounding's correction, Goldberg's, with 1/v to within
u²: below 0.1 float64 ulp); ``log(v) = k·ln2 + 2·atanh(s)``, ``s = (m - 1)/(m + 1)``,
``m = v/2^k`` in [√2/2, √2], atanh by its series to s^23 (|s| ≤ 0.172: below 1e-18)."""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit

_F64 = np.float64
_LOG2E = _F64(1 / math.log(2))
# ln 2 as fdlibm's head (n·head exact for |n| < 2^11) and tail
LN2_HI, LN2_LO = _F64(6.93147180369123816490e-01), _F64(1.90821492927058770002e-10)
_LN2 = _F64(math.log(2))
_EXP_C = tuple(_F64(1 / math.factorial(k)) for k in range(13, 1, -1))  # 1/13! … 1/2!
_ATANH_SERIES = tuple(_F64(2 / (2 * k + 1)) for k in range(11, 0, -1))  # 2/23 … 2/3
_ROUNDER, _ROUNDER_BITS = _F64(1.5 * 2**52), np.int64(0x4338000000000000)
_LOWEST, _SQRT2 = _F64(-110), _F64(math.sqrt(2))
_ZERO, _ONE, _TWO, _HALF = _F64(0), _F64(1), _F64(2), _F64(0.5)
(_E13, _E12, _E11, _E10, _E9, _E8, _E7, _E6, _E5, _E4, _E3, _E2) = _EXP_C
(_A23, _A21, _A19, _A17, _A15, _A13, _A11, _A9, _A7, _A5, _A3) = _ATANH_SERIES


@njit("float64(float64)", contract=True)
def exp_nonpositive64(t):
    """e^t for float64 ``t ≤ 0`` (0 below -110; nan gives nan)."""
    keep = _ZERO if t < _LOWEST else _ONE
    t = _LOWEST if t < _LOWEST else t
    rounded = t * _LOG2E + _ROUNDER
    n = rounded - _ROUNDER
    r = t - n * LN2_HI - n * LN2_LO
    q = (((((((((((_E13 * r + _E12) * r + _E11) * r + _E10) * r + _E9) * r + _E8) * r + _E7)
              * r + _E6) * r + _E5) * r + _E4) * r + _E3) * r + _E2)
    power = np.int64((np.float64(rounded).view(np.int64) - _ROUNDER_BITS + 1023) << 52)
    return (_ONE + (r + r * r * q)) * power.view(np.float64) * keep


@njit("float64(float64)", contract=True)
def log1p_unit(u):
    """log(1 + u) for float64 ``0 ≤ u ≤ 1`` (nan gives nan)."""
    v = _ONE + u
    correction = (u - (v - _ONE)) * (_TWO - v)  # (1/v to within u²: enough for ≤ 1 ulp)
    high = v > _SQRT2
    log_m = log_reduced(v * _HALF if high else v)
    return ((_LN2 + log_m) if high else log_m) + correction


@njit("float64(float64)")
def log_reduced(m):
    """log of a float64 ``m`` in [√2/2, √2]: ``2·atanh(s)``, ``s = (m - 1)/(m + 1)``, by its
    series to s^23 (inlined: with its caller's flags)."""
    s = (m - _ONE) / (m + _ONE)
    s2 = s * s
    p = ((((((((((_A23 * s2 + _A21) * s2 + _A19) * s2 + _A17) * s2 + _A15) * s2 + _A13) * s2
              + _A11) * s2 + _A9) * s2 + _A7) * s2 + _A5) * s2 + _A3)
    return s * _TWO + s * s2 * p


def _block(readonly: bool) -> types.Array:
    return types.Array(types.float32, 1, "C", readonly=readonly)


_F32 = types.float32


@njit([types.void(_block(ro), _block(False), _F32, _F32) for ro in (False, True)], contract=True)
def softplus32(a, out, beta, threshold):
    """PyTorch's float32 softplus of the block ``a`` into ``out``: ``a`` where ``beta·a >
    threshold``, else ``log(1 + exp(beta·a)) / beta`` (logarithm in float64, rounded once)."""
    for i in range(a.size):
        x = a[i]
        s = x * beta
        w = np.float64(s)
        linear = w if w > _ZERO else _ZERO
        soft = np.float32(linear + log1p_unit(exp_nonpositive64(-abs(w)))) / beta
        out[i] = x if s > threshold else soft


@njit([types.void(_block(ra), _block(rb), _block(False)) for ra in (False, True)
       for rb in (False, True)], contract=True)
def logaddexp_block(a, b, out):
    """``log(exp(a) + exp(b))`` of a float32 block ``a`` and ``b`` (as long, or one element)
    into ``out``, NumPy's steps (``x + log(2)`` where ``x == y``, else the larger plus
    ``log1p(exp(-|x - y|))``, NaN where the difference is) in float64, rounded once."""
    one = b.size == 1
    for i in range(a.size):
        x, y = np.float64(a[i]), np.float64(b[0] if one else b[i])
        d = x - y
        high = x if d > _ZERO else y
        soft = high + log1p_unit(exp_nonpositive64(-abs(d)))
        out[i] = np.float32(x + _LN2 if x == y else soft if d == d else d)
