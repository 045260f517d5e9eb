"""``lgamma``, ``digamma`` and trigamma (``polygamma(1)``) of :mod:`ember.ops.gamma_kernel` as
one-pass numba loops over float64 blocks (imported only when
:func:`ember.backend.compiled.numba_enabled`).

lgamma of a finite x > 0 is one branch-free pass that LLVM vectorizes (libm's scalar
``lgamma`` cost ~16 ns an element): below 12.5 the twin's series at 2 (with ``z = x - 2 - m``
for ``m = round(x) - 2`` from -2 to 10, the recurrence's product in one log), Stirling's series
to 1/x^15 above; the log is Ember's own (exponent from the bits, ``2·atanh((m - 1)/(m + 1))``
of the mantissa, :func:`ember.ops.softplus_numba.log_reduced`). Within 2.3 float64 ulps of
mpmath over (0, 1e308] with the C library's ``lgamma`` on (0.5, 1.75) (``lgamma64``); without
it (``lgamma64_narrow``, for float32 results: correctly rounded once cast) up to 8.4 ulps there,
beside the minimum at 1.46, where ``lgamma(x + 1) - log(x)`` cancels
(``tests/ops/test_gamma.py``). Below 0, the reflection in the same pass (its own
``sin(pi x)`` series) where it does not cancel; poles, zeros, non-finite x and the reflection's
cancellations beside the negative roots go to the C library's ``lgamma`` (within 5e-16
relative against mpmath there, where the twin's reflection loses digits: 9e-2 at
-2.4570247382208). digamma is the twin's
own steps (the recurrence up to 12, the asymptotic
series, the reflection with cot below 0) for each element in turn, and trigamma likewise (the
twin's bits: ``tests/ops/test_gamma.py``). Special points as the twin's. The constants come
from :mod:`ember.ops.gamma_kernel` (see ``DEPENDENCY_DIGEST``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.gamma_kernel import BERNOULLI, LGAMMA_AT_2, polygamma_series
from ember.ops.softplus_numba import LN2_HI, LN2_LO, log_reduced

# the digest of gamma_kernel.py and softplus_numba.py, whose code the kernels below compile:
# numba's disk cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "fe52c5a69e9b5015"

# the asymptotic series' coefficients B_2k / (2k)
_SERIES = tuple(b / (2 * k) for k, b in enumerate(BERNOULLI, start=1))
_TRIGAMMA_SERIES = polygamma_series(1)
_PI2 = math.pi ** 2
_BLOCKS = [types.void(types.Array(types.float64, 1, "C", readonly=ro),
                      types.Array(types.float64, 1, "C")) for ro in (False, True)]


_LGAMMA_DOWN = LGAMMA_AT_2[::-1]
# Stirling's series' coefficients B_2k / (2k (2k - 1)), highest first, k = 1..8
_STIRLING_DOWN = tuple(b / (2 * k * (2 * k - 1)) for k, b in enumerate(BERNOULLI[:8], 1))[::-1]
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_TINY, _TWO54, _SQRT2 = 2.0 ** -1022, 2.0 ** 54, math.sqrt(2)
_MANTISSA, _ONE_BITS = np.int64(0x000FFFFFFFFFFFFF), np.int64(0x3FF0000000000000)
# (named one by one: a loop over a tuple stays a loop, and the pass does not vectorize)
(_L26, _L25, _L24, _L23, _L22, _L21, _L20, _L19, _L18, _L17, _L16, _L15, _L14, _L13, _L12,
 _L11, _L10, _L9, _L8, _L7, _L6, _L5, _L4, _L3, _L2, _L1) = _LGAMMA_DOWN
(_S8, _S7, _S6, _S5, _S4, _S3, _S2, _S1) = _STIRLING_DOWN
# sin(pi r) = r · sum_k (-1)^k pi^(2k+1) r^2k / (2k+1)!, k = 11..0 (|r| <= 1/2: below 1e-18)
(_P11, _P10, _P9, _P8, _P7, _P6, _P5, _P4, _P3, _P2, _P1, _P0) = tuple(
    (-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(11, -1, -1))
_LOG_PI = math.log(math.pi)
# float64 x in (0.5, _CANCELS_BELOW) go to the C library (see lgamma64)
_CANCELS_BELOW = 1.75


@njit("float64(float64)")
def log_positive(v):
    """log of a finite float64 ``v > 0`` (subnormals too) in steps LLVM vectorizes:
    ``v = 2^k·m``, ``m`` in [√2/2, √2], ``k·ln2 + 2·atanh((m - 1)/(m + 1))`` (within ~1 ulp)."""
    tiny = v < _TINY
    bits = np.float64(v * _TWO54 if tiny else v).view(np.int64)
    m = np.int64((bits & _MANTISSA) | _ONE_BITS).view(np.float64)
    high = m > _SQRT2
    m = m * 0.5 if high else m
    k = np.float64((bits >> 52) - (1077 if tiny else 1023) + (1 if high else 0))
    return k * LN2_HI + (log_reduced(m) + k * LN2_LO)


@njit("float64(float64)")
def _lgamma_positive(x):
    """lgamma of a finite x > 0, without branches (inlined: with its caller's flags)."""
    near = x < 12.5
    a = x if near else 2.0
    m = math.floor(a + 0.5) - 2.0  # -2 .. 10
    z = a - (2.0 + m)  # exact, |z| <= 1/2
    h = (((_L26 * z + _L25) * z + _L24) * z + _L23) * z + _L22
    h = (((h * z + _L21) * z + _L20) * z + _L19) * z + _L18
    h = (((h * z + _L17) * z + _L16) * z + _L15) * z + _L14
    h = (((h * z + _L13) * z + _L12) * z + _L11) * z + _L10
    h = (((h * z + _L9) * z + _L8) * z + _L7) * z + _L6
    h = (((h * z + _L5) * z + _L4) * z + _L3) * z + _L2
    h = h * z + _L1
    series = h * z
    # lgamma(a) = lgamma(2 + z) + sign(m) log(steps)
    steps = (a if m < 0.0 else 1.0) * (a + 1.0 if m < -1.0 else 1.0)
    for j in range(1, 11):
        steps = steps * (a - j if m >= j else 1.0)
    log = log_positive(steps if near else x)
    inv = 1.0 / x
    inv2 = inv * inv
    tail = (((_S8 * inv2 + _S7) * inv2 + _S6) * inv2 + _S5) * inv2 + _S4
    tail = ((tail * inv2 + _S3) * inv2 + _S2) * inv2 + _S1
    far = x * (log - 1.0) + (tail * inv - 0.5 * log + _HALF_LOG_2PI)
    return (series + (-log if m < 0.0 else log)) if near else far


@njit("float64(float64)")
def _lgamma_real(x):
    """lgamma of a finite x, without branches: below 0 by the reflection
    ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` (r = x - round(x) exact); NaN at poles, beside
    0 (|x| < 1e-150: sin's argument would lose digits) and where the reflection cancels (its
    terms over 2x the result: beside the roots)."""
    negative = x < 0.0
    core = _lgamma_positive(1.0 - x if negative else x)
    r = x - np.rint(x)
    r2 = r * r
    p = (((_P11 * r2 + _P10) * r2 + _P9) * r2 + _P8) * r2 + _P7
    p = (((p * r2 + _P6) * r2 + _P5) * r2 + _P4) * r2 + _P3
    p = ((p * r2 + _P2) * r2 + _P1) * r2 + _P0
    head = _LOG_PI - log_positive(abs(r * p) if negative else 1.0)
    value = head - core
    bad = (abs(value) * 2.0 < max(abs(head), abs(core))) | (r == 0.0) | (abs(x) < 1e-150)
    return (math.nan if bad else value) if negative else core


@njit([types.void(block, types.Array(types.float64, 1, "C"), types.float64)
       for block in (_BLOCKS[0].args[0], _BLOCKS[1].args[0])])
def _lgamma_pass(a, out, high):
    """``log|Γ(x)|`` of a float64 block into ``out`` (inlined: with its caller's flags): one
    vectorized pass (with the reflection where the block holds a negative), then the C
    library's ``lgamma`` where it gave NaN (poles, ±0, ±inf, NaN, beside the negative roots:
    +inf at poles and ±inf) and on (0.5, ``high``) (none where ``high`` is 0.5)."""
    negative = False
    for i in range(a.size):
        negative |= a[i] < 0.0
    if negative:
        for i in range(a.size):
            x = a[i]
            inside = (x != 0.0) & (abs(x) < math.inf) & ((x <= 0.5) | (x >= high))
            out[i] = _lgamma_real(x if inside else 1.0) if inside else math.nan
    else:
        for i in range(a.size):
            x = a[i]
            inside = (x > 0.0) & (x < math.inf) & ((x <= 0.5) | (x >= high))
            out[i] = _lgamma_positive(x if inside else 1.0) if inside else math.nan
    for i in range(a.size):
        if out[i] != out[i]:
            out[i] = math.lgamma(a[i])


@njit(_BLOCKS, contract=True)
def lgamma64(a, out):
    """``log|Γ(x)|`` of a float64 block into ``out``, for float64 results: the C library's
    ``lgamma`` on (0.5, 1.75), where the pass's ``lgamma(x + 1) - log(x)`` cancels beside the
    minimum at 1.46 (up to 8 ulps; the C library's within 2)."""
    _lgamma_pass(a, out, _CANCELS_BELOW)


@njit(_BLOCKS, contract=True)
def lgamma64_narrow(a, out):
    """``log|Γ(x)|`` of a float64 block into ``out``, for results rounded to float32 or
    narrower: the pass alone on (0.5, 1.75) too (its value, rounded once, is the correctly
    rounded float32 there)."""
    _lgamma_pass(a, out, 0.5)


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
    cot = math.sin(math.pi * (0.5 - abs(r))) / math.sin(math.pi * r)  # (the twin's cot)
    return _digamma_pos(1.0 - x) - math.pi * cot


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
            c = math.sin(math.pi * (0.5 - abs(r))) / math.sin(math.pi * r)
            # (not _PI2 * (1 + c * c): the twin's _horner steps for -1 - c², bit for bit)
            out[i] = -_trigamma_pos(1.0 - x) - _PI2 * ((-c + -0.0) * c - 1.0)
