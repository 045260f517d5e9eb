"""The float32 erf, gelu and gelu-slope kernels of :mod:`ember.ops.erf_kernel` as one-pass
numba loops (imported only when :func:`ember.backend.compiled.numba_enabled`).

Each element is read once and written once; NumPy's evaluation of the same rational fit makes
a dozen passes over each block. Same fit, same float32 arithmetic order, each product and sum
fused into one multiply-add (these functions are compiled with ``contract``: one rounding
instead of two, ~1.5× faster). NumPy's twins (numba off) round apart; over every 64th
float32, erf agrees to 8 ulps, gelu to 2.6e-7·|x| + 1 ulp (many of its ulps where gelu(x) is
small, x below -3), gelu's slope to 2.4e-7 absolute. Gelu's slope inlines
:func:`exp_nonpositive`'s steps, so that the loops vectorize. Over every 64th float32
against a float64 reference (before fused multiply-adds in parentheses): erf within 3.8e-7
absolute (4.2e-7), gelu within 2e-7·|x| + 1 ulp, gelu's slope within 2.3e-7 absolute
(2.8e-7).

The functions of one element are also the steps of :mod:`ember.jit.loops`' fused loops, so a
compiled graph's values are eager's bit for bit: keep what they call in this file (numba's
disk cache notices an edit of a kernel's own file only, so a kernel cached with an older copy
of a function from elsewhere would differ from a loop compiled afresh).

:func:`exp_nonpositive`: y = n·ln2 + r with n an integer and |r| ≤ ln2/2; e^r by its Taylor
series to degree 7 (the first omitted term is below 0.05 ulp); 2^n made from its bits. Within
1.025 ulps of the exact value (over every float32 with a normal result: 27 inputs exceed 1 ulp;
NumPy's float32 ``exp`` is within 2.52), 3× faster than a float64 evaluation; results below
float32's normal range are rounded once; e^-104 and below are 0 (a product with 0, not an
underflow: a subnormal result costs the CPU ~3× the time, and a causal mask makes half of
softmax's inputs -inf), ``exp(nan)`` is nan. It is compiled apart, without fused
multiply-adds (with them: 1.06 ulps).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.erf_kernel import _ERF32_P, _ERF32_Q, _INV_SQRT_2PI, _SQRT1_2

# the digest of erf_kernel.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "4a3cd7184a97f5c4"

_P0, _P1, _P2, _P3, _P4, _P5, _P6 = _ERF32_P
_Q0, _Q1, _Q2, _Q3, _Q4 = _ERF32_Q
_HALF, _LIMIT = np.float32(0.5), np.float32(4)
# a contiguous float32 block (writable, or read-only: a memory-mapped array, an expand that
# only adds size-1 dimensions) into another
_BLOCK = [types.void(types.float32[::1], types.float32[::1]),
          types.void(types.Array(types.float32, 1, "C", readonly=True), types.float32[::1])]

_F = np.float32
_LOG2E = _F(1 / math.log(2))
# ln 2 as a short head (n·head is exact for |n| < 2^15) and a float32 tail
_LN2_HEAD = _F(0.693359375)
_LN2_TAIL = _F(math.log(2) - 0.693359375)
_C7, _C6, _C5, _C4, _C3, _C2 = (_F(1 / math.factorial(k)) for k in range(7, 1, -1))
_ZERO, _ONE, _LOWEST = _F(0), _F(1), _F(-104)
# y·log2e + 1.5·2^23 rounds y·log2e to an integer n, held in the low bits of its float32 bits
_ROUNDER, _ROUNDER_BITS = _F(1.5 * 2**23), np.int32(0x4B400000)
# 2^n is built as 2^(n + 64) (a normal float32 down to n = -190), then scaled by 2^-64
_BIAS, _UNBIAS = np.int32(127 + 64), _F(2.0**-64)


@njit("float32(float32)")
def _exp(y):
    """:func:`exp_nonpositive`'s steps, inlined with the caller's flags (with fused
    multiply-adds, in gelu's slope: within 1.06 ulps over every float32 y ≤ 0)."""
    unbias = _ZERO if y < _LOWEST else _UNBIAS
    y = _LOWEST if y < _LOWEST else y
    t = y * _LOG2E + _ROUNDER
    n = t - _ROUNDER
    r = y - n * _LN2_HEAD - n * _LN2_TAIL
    q = ((((_C7 * r + _C6) * r + _C5) * r + _C4) * r + _C3) * r + _C2
    power = np.int32((np.float32(t).view(np.int32) - _ROUNDER_BITS + _BIAS) << 23)
    return (_ONE + (r + r * r * q)) * power.view(np.float32) * unbias


@njit("float32(float32)", own_flags=True)
def exp_nonpositive(y):
    """e^y for float32 y ≤ 0 (and nan)."""
    return _exp(y)


@njit("float32(float32)", contract=True)
def erf(x):
    """erf of one float32."""
    x = min(max(x, -_LIMIT), _LIMIT)
    x2 = x * x
    p = (((((x2 * _P0 + _P1) * x2 + _P2) * x2 + _P3) * x2 + _P4) * x2 + _P5) * x2 + _P6
    q = (((x2 * _Q0 + _Q1) * x2 + _Q2) * x2 + _Q3) * x2 + _Q4
    return min(max(p * x / q, -_ONE), _ONE)  # (the fit exceeds 1 on 3.61…4)


@njit("float32(float32)", contract=True)
def gelu(x):
    """Exact gelu ``x·Φ(x)`` of one float32 (as Φ(x)·x: (1 + erf)·x would overflow)."""
    return (erf(x * _SQRT1_2) + _ONE) * _HALF * x


@njit("float32(float32)", contract=True)
def gelu_slope(x):
    """gelu's derivative ``Φ(x) + x·φ(x)`` of one float32."""
    cdf = (erf(x * _SQRT1_2) + _ONE) * _HALF
    return cdf + _exp(x * x * -_HALF) * _INV_SQRT_2PI * x


@njit(_BLOCK)
def erf32(a, out):
    """erf of a float32 block ``a`` into ``out``."""
    for i in range(a.size):
        out[i] = erf(a[i])


@njit(_BLOCK)
def gelu32(a, out):
    """Exact gelu of a float32 block into ``out``."""
    for i in range(a.size):
        out[i] = gelu(a[i])


@njit(_BLOCK)
def gelu_slope32(a, out):
    """gelu's derivative of a float32 block into ``out``."""
    for i in range(a.size):
        out[i] = gelu_slope(a[i])
