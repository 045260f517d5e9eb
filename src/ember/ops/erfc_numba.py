"""``erfinv``, ``erfc`` and ``ndtri`` of :mod:`ember.ops.erfc_kernel` as one-pass numba loops
over float32 and float64 blocks, imported only when :func:`ember.backend.compiled.numba_enabled`.

Each float64 element is computed on its own by the twin's steps: Giles' first guess of
erfinv (or erfc's asymptotic series where ``1 - |y| < 1e-7``) and one Halley step, on ``erf``
below ``|y| = 1/2`` and on ``log(erfc)`` above (two from the asymptotic guess), with the C
library's ``erf`` and ``erfc`` (correctly rounded but for an ulp, down to erfc's subnormals)
in place of Ember's fits. NumPy's twin makes dozens of
passes over masked copies of the array. ndtri evaluates the twin's three rationals (AS 241)
for every element and picks one, with :func:`_log`, in a loop that vectorizes (float32 in
float64, rounded once). The constants and
functions of one number come from :mod:`ember.ops.erfc_kernel` (see ``DEPENDENCY_DIGEST``).

float32 erfc and erfinv have loops of their own without the C library, which vectorize (12×
and 20× faster than the C library's functions element by element), still in float64 and
rounded once: :func:`_exp`, :func:`_log` and fits of erfcx and of erfinv of this file. erfc
over 3e6 points of [-40, 11] is within 0.5 ulp of ``math.erfc`` rounded to float32 (and equal
but for 1 in 1e5), subnormals down to erfc(10.05) included (torch's float32 erfc flushes them
to 0); erfinv over every 128th float32 in (-1, 1) equals float64's erfinv rounded but for one
tie (8.4415305e-07, 0.5000000 ulp either way; torch's misses 990 of those 1.7e7 by up to
0.501 ulp).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops import erfc_kernel
from ember.ops.erfc_kernel import (
    _ERFINV_CENTRAL,
    _ERFINV_TAIL,
    _SQRT_PI,
    NDTRI_CENTRAL,
    NDTRI_FAR,
    NDTRI_NEAR,
)

# the digest of erfc_kernel.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "966effe8778dc1dc"

_HALF_SQRT_PI = _SQRT_PI / 2
_TWO_OVER_SQRT_PI = 2 / _SQRT_PI
# erfcx(s) = exp(s²) erfc(s) on [0, 10.5] in t = (s - 3) / (s + 3), highest power first: a
# Chebyshev fit made for Ember against mpmath's 30 digits (to 5e-12 relative), in t's powers
_ERFCX_FIT = (
    7.42163077062135e-07, 1.0947999353007549e-06, -8.02887367781487e-06,
    -1.2064725907987146e-05, 6.434777258969864e-05, 4.499598559067258e-05,
    -0.0005971965127923648, 0.0007077872924313637, 0.004269161890774065,
    -0.02439250246567766, 0.07166583505414512, -0.15011593638928314, 0.24560380177781377,
    -0.3262335600444492, 0.17900115118106874)
# erfinv(y) / y in u = w - 2.5 for w = -log(1 - y²) < 5 and in v = sqrt(w) - 3 for
# 5 <= w < 16 (every float32 below 1), highest power first: Chebyshev fits made for Ember
# against its float64 erfinv (to 1.2e-14 and 1.9e-14 relative; fuzz/nnops53/fit_erfinv.py)
_ERFINV32_CENTRAL = (
    1.204803424907176e-15, -4.803673348172927e-15, -6.806505177194506e-14,
    5.510181285738258e-13, 8.592882589555956e-13, -3.117642148321639e-11,
    1.1980961265537303e-10, 9.075158816360019e-10, -1.0861644187816428e-08,
    1.3416447633377508e-08, 4.787258724069174e-07, -3.4166192768147822e-06,
    -4.996080084047156e-06, 0.00021825026421154825, -0.0012527079076494882,
    -0.004177317724358005, 0.24664027674415198, 1.5014093511107907,)
_ERFINV32_TAIL = (
    6.670090153892119e-08, -1.5213575564300314e-07, -4.1754784233037454e-07,
    1.9936566418685063e-06, -1.8757626633171339e-06, -5.885725777543551e-06,
    2.205533104347499e-05, -2.29206511798494e-05, -4.649884023240979e-05,
    0.0002055337994885148, -0.0002831171824197805, -0.00014890142204513322,
    0.0014837365670709844, -0.003558793684459616, 0.005685182460835802, -0.00764380558492757,
    0.00944552201102209, 1.0016752766936212, 2.8329767987282786,)
_EXP_TAYLOR = tuple(1 / math.factorial(k) for k in range(11, -1, -1))
_LOG2E = 1 / math.log(2)
# ln 2 as a head of 32 bits (n·head is exact for |n| < 2^20) and a tail
_LN2_HEAD = 6.93147180369123816490e-01
_LN2_TAIL = math.log(2) - _LN2_HEAD
# y·log2e + 1.5·2^52 rounds y·log2e to an integer n, held in the low bits of its bits
_ROUNDER = 1.5 * 2.0**52
_ROUNDER_BITS = np.int64(np.float64(_ROUNDER).view(np.int64))
_LN2 = math.log(2)
_SQRT_HALF_BITS = np.int64(np.float64(math.sqrt(0.5)).view(np.int64))
_ATANH_SERIES = tuple(2 / (2 * k + 1) for k in range(10, -1, -1))  # 2 atanh(s) / s in s²
_SMALLEST_NORMAL, _TWO_54, _LOG_2_54 = 2.0**-1022, 2.0**54, 54 * math.log(2)
# the twin's own functions of one number, compiled as they are
_far = njit(types.float64(types.float64, types.Omitted(np)))(erfc_kernel._erfinv_far)  # xp = np


def _blocks(f: types.Type) -> list:
    """A contiguous block (writable, or read-only: a memory-mapped array) into another."""
    return [types.void(types.Array(f, 1, "C", readonly=ro), types.Array(f, 1, "C"))
            for ro in (False, True)]


@njit("float64(float64)")
def _central(w):
    """Giles' erfinv(y) / y for ``w = -log(1 - y²) < 5``."""
    u = w - 2.5
    acc = 0.0
    for c in _ERFINV_CENTRAL:
        acc = acc * u + c
    return acc


@njit("float64(float64)")
def _tail(w):
    """Giles' erfinv(y) / y for ``5 <= w < 16``."""
    u = np.sqrt(w) - 3.0
    acc = 0.0
    for c in _ERFINV_TAIL:
        acc = acc * u + c
    return acc


@njit("float64(float64, float64)")
def _halley_tail(x, log_q):
    """One Halley step on ``log(erfc(x)) = log(q)``."""
    e = math.erfc(x)
    r = math.log(e) - log_q
    phi = _TWO_OVER_SQRT_PI * math.exp(-x * x) / e  # -d log(erfc) / dx
    return x + 2.0 * r / (2.0 * phi - r * (2.0 * x - phi))


@njit("float64(float64)")
def erfinv(y):
    """erfinv of one float64: ±inf at ±1, NaN beyond and for NaN."""
    a = abs(y)
    if not a < 1.0:
        x = math.inf if a == 1.0 else math.nan
    elif a < 0.5:
        x = a * _central(-math.log1p(-a * a))
        d = (math.erf(x) - a) * _HALF_SQRT_PI * math.exp(x * x)  # f / f'
        x = x - d / (1.0 + x * d)
    else:
        q = 1.0 - a  # exact
        w = -math.log(q * (1.0 + a))
        log_q = math.log(q)
        if w < 16.0:
            x = _halley_tail(a * (_central(w) if w < 5.0 else _tail(w)), log_q)
        else:  # the asymptotic guess is only good to 2e-5: two steps
            x = _halley_tail(_halley_tail(_far(q), log_q), log_q)
    return math.copysign(x, y)


@njit(_blocks(types.float64))
def erfinv64(a, out):
    """erfinv of a float64 block ``a`` into ``out``."""
    for i in range(a.size):
        out[i] = erfinv(a[i])


@njit(_blocks(types.float64))
def erfc64(a, out):
    """erfc of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = math.erfc(a[i])


@njit("float64(float64)", contract=True)
def _exp(y):
    """e^y for float64 |y| < 700 to 2e-14 relative, without the C library (so that a loop of
    it vectorizes): y = n·ln2 + r, |r| <= ln2/2, e^r by Taylor's series to degree 11, 2^n
    from its bits."""
    t = y * _LOG2E + _ROUNDER  # y·log2e rounded to an integer n, in t's low bits
    n = t - _ROUNDER
    r = y - n * _LN2_HEAD - n * _LN2_TAIL
    acc = _EXP_TAYLOR[0]
    for c in _EXP_TAYLOR[1:]:
        acc = acc * r + c
    power = np.int64((np.float64(t).view(np.int64) - _ROUNDER_BITS + 1023) << 52)
    return acc * power.view(np.float64)


@njit("float64(float64)", contract=True)
def _log(m):
    """log m for a normal float64 m > 0 to 3 ulps, without the C library: m = 2^e·f
    with f in [sqrt(1/2), sqrt(2)), log f = 2 atanh(s) by its series in s = (f - 1)/(f + 1)."""
    bits = np.float64(m).view(np.int64)
    e = (bits - _SQRT_HALF_BITS) >> 52
    f = np.int64(bits - (e << 52)).view(np.float64)
    s = (f - 1.0) / (f + 1.0)
    s2 = s * s
    acc = _ATANH_SERIES[0]
    for c in _ATANH_SERIES[1:]:
        acc = acc * s2 + c
    return np.float64(np.int32(e)) * _LN2 + s * acc


@njit("float64(float64)", contract=True)
def _erfcx_fit(s):
    """``exp(s²) erfc(s)`` for 0 <= s <= 10.5 by the fit (5e-12 relative)."""
    t = (s - 3.0) / (s + 3.0)
    acc = _ERFCX_FIT[0]
    for c in _ERFCX_FIT[1:]:
        acc = acc * t + c
    return acc


@njit("float32(float32)", contract=True)
def erfc_single(x):
    """erfc of one float32, computed in float64 and rounded once: ``exp(-s²) erfcx(s)`` for
    ``s = |x|`` (s² exact), ``2 -`` that below 0 (erfc is below float32's smallest subnormal
    beyond s = 10.5)."""
    wide = np.float64(x)
    s = min(abs(wide), 10.5)
    e = _exp(-s * s) * _erfcx_fit(s)
    e = e if wide >= 0.0 else 2.0 - e
    return np.float32(e if wide == wide else wide)


@njit(_blocks(types.float32))
def erfc32(a, out):
    """erfc of a float32 block into ``out`` (:func:`erfc_single`; the loop vectorizes)."""
    for i in range(a.size):
        out[i] = erfc_single(a[i])


@njit(_blocks(types.float32), contract=True)
def erfinv32(b, out):
    """erfinv of a float32 block into ``out``, each computed in float64 and rounded once (±inf
    at ±1, NaN beyond and for NaN), in a loop that vectorizes: a fit of degree 17 in
    ``w = -log(1 - a²)`` below ``w = 5``, of degree 18 in ``sqrt(w)`` above (every float32
    below 1 has ``w < 16``), both to 2e-14, with :func:`_log`, and no Newton step (Giles'
    guess with a step on erf or erfcx took 2.3x as long: two divisions to one)."""
    for i in range(b.size):
        a = abs(np.float64(b[i]))
        w = -_log((1.0 - a) * (1.0 + a))  # (1 - a exact)
        u, v = w - 2.5, np.sqrt(w) - 3.0
        low = high = 0.0
        for c in _ERFINV32_CENTRAL[:9]:  # (loops of 9 unroll, and the outer loop vectorizes)
            low = low * u + c
        for c in _ERFINV32_CENTRAL[9:]:
            low = low * u + c
        for c in _ERFINV32_TAIL[:9]:
            high = high * v + c
        for c in _ERFINV32_TAIL[9:]:
            high = high * v + c
        x = a * (low if w < 5.0 else high)
        x = x if a < 1.0 else (math.inf if a == 1.0 else math.nan)
        out[i] = np.float32(math.copysign(x, b[i]))


@njit("float64(float64)")
def ndtri(p):
    """The standard normal quantile of one float64 (``-inf`` at 0, ``inf`` at 1, NaN outside
    ``[0, 1]``) by the twin's rationals (Wichura's AS 241), all three evaluated and one picked,
    with :func:`_log` (subnormal ``q`` scaled by 2^54 first): the loop vectorizes."""
    q = p - 0.5
    r = 0.180625 - q * q
    t = min(p, 1.0 - p)  # (exact for p > 1/2)
    tiny = t < _SMALLEST_NORMAL
    s = math.sqrt((_LOG_2_54 if tiny else 0.0) - _log(t * (_TWO_54 if tiny else 1.0)))
    far = s > 5.0
    u = s - 5.0 if far else s - 1.6
    num = den = near_num = near_den = far_num = far_den = 0.0
    for c in NDTRI_CENTRAL[0]:  # (a loop over each tuple alone: the outer loop vectorizes)
        num = num * r + c
    for c in NDTRI_CENTRAL[1]:
        den = den * r + c
    for c in NDTRI_NEAR[0]:
        near_num = near_num * u + c
    for c in NDTRI_NEAR[1]:
        near_den = near_den * u + c
    for c in NDTRI_FAR[0]:
        far_num = far_num * u + c
    for c in NDTRI_FAR[1]:
        far_den = far_den * u + c
    central = abs(q) <= 0.425
    top = q * num if central else math.copysign(far_num if far else near_num, q)
    x = top / (den if central else (far_den if far else near_den))  # (one division)
    ends = -math.inf if p == 0.0 else (math.inf if p == 1.0 else math.nan)
    return x if 0.0 < p < 1.0 else ends


@njit(_blocks(types.float64), contract=True)
def ndtri64(a, out):
    """ndtri of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = ndtri(a[i])


@njit(_blocks(types.float32), contract=True)
def ndtri32(a, out):
    """ndtri of a float32 block into ``out``, computed in float64 and rounded once."""
    for i in range(a.size):
        out[i] = np.float32(ndtri(np.float64(a[i])))
