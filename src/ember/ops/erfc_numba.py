"""``erfinv``, ``erfc`` and ``ndtri`` of :mod:`ember.ops.erfc_kernel` as one-pass numba loops
over float32 and float64 blocks (ndtri: float64 only; the twin computes float32 in float64
too), imported only when :func:`ember.backend.compiled.numba_enabled`.

Each element is computed in float64, on its own, by the twin's steps: Giles' first guess of
erfinv (or erfc's asymptotic series where ``1 - |y| < 1e-7``) and one Halley step, on ``erf``
below ``|y| = 1/2`` and on ``log(erfc)`` above (two from the asymptotic guess), with the C
library's ``erf`` and ``erfc`` (correctly rounded but for an ulp, down to erfc's subnormals)
in place of Ember's fits; float32 is rounded once at the end. NumPy's twin makes dozens of
passes over masked copies of the array. ndtri is the twin's first guess (erfinv's, or
Abramowitz and Stegun's below 1e-3) and Newton steps on ``log(ndtr)``. The constants and
functions of one number come from :mod:`ember.ops.erfc_kernel` (see ``DEPENDENCY_DIGEST``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops import erfc_kernel
from ember.ops.erfc_kernel import _ERFINV_CENTRAL, _ERFINV_TAIL, _SQRT_PI

# the digest of erfc_kernel.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "c09d53ac27123592"

_HALF_SQRT_PI = _SQRT_PI / 2
_TWO_OVER_SQRT_PI = 2 / _SQRT_PI
_SQRT1_2, _SQRT2, _SQRT_HALF_PI = math.sqrt(0.5), math.sqrt(2), math.sqrt(math.pi / 2)
# the twin's own functions of one number, compiled as they are
_fraction = njit("float64(float64, int64)")(erfc_kernel._erfcx_fraction)
_ndtri_tail = njit("float64(float64)")(erfc_kernel._ndtri_tail)
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
    u = math.sqrt(w) - 3.0
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


@njit(_blocks(types.float32))
def erfinv32(a, out):
    """erfinv of a float32 block into ``out`` (in float64, rounded once)."""
    for i in range(a.size):
        out[i] = np.float32(erfinv(np.float64(a[i])))


@njit(_blocks(types.float64))
def erfc64(a, out):
    """erfc of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = math.erfc(a[i])


@njit(_blocks(types.float32))
def erfc32(a, out):
    """erfc of a float32 block into ``out`` (in float64, rounded once)."""
    for i in range(a.size):
        out[i] = np.float32(math.erfc(np.float64(a[i])))


@njit("float64(float64)")
def _erfcx(s):
    """``exp(s²) erfc(s)`` for s >= -1 (the continued fraction from 2 on)."""
    if s < 2.0:
        return math.exp(s * s) * math.erfc(s)
    return _fraction(s, 60 if s < 4.0 else 20)


@njit("float64(float64)")
def ndtri(p):
    """The standard normal quantile of one float64 (``-inf`` at 0, ``inf`` at 1, NaN outside
    ``[0, 1]``): the twin's first guess and Newton steps on ``log(ndtr)`` (three from the
    tail's guess, one from erfinv's below 1/4, none above)."""
    upper = p > 0.5
    q = 1.0 - p if upper else p  # exact for p > 1/2
    if not q > 0.0:
        x = -math.inf if q == 0.0 else math.nan
    else:
        log_q = math.log(q)
        steps = 3
        if q < 1e-3:
            x = _ndtri_tail(math.sqrt(-2.0 * log_q))
        else:  # (erfinv's guess is already within 1e-13: one step; none from 1/4, see
            # ndtri_array)
            x, steps = erfinv(2.0 * q - 1.0) * _SQRT2, 0 if q >= 0.25 else 1
        for _ in range(steps):
            e = _erfcx(-x * _SQRT1_2)
            x = x - (math.log(e / 2.0) - x * x / 2.0 - log_q) * (_SQRT_HALF_PI * e)
    return -x if upper else x


@njit(_blocks(types.float64))
def ndtri64(a, out):
    """ndtri of a float64 block into ``out``."""
    for i in range(a.size):
        out[i] = ndtri(a[i])
