"""The float32 erf, gelu and gelu-slope kernels of :mod:`ember.ops.erf_kernel` as one-pass
numba loops (imported only when :func:`ember.backend.compiled.numba_enabled`).

Each element is read once and written once; NumPy's evaluation of the same rational fit makes
a dozen passes over each block. Same fit, same float32 arithmetic order; ``exp`` is its own,
so that the loops vectorize.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.erf_kernel import _ERF32_P, _ERF32_Q, _INV_SQRT_2PI, _SQRT1_2

_P0, _P1, _P2, _P3, _P4, _P5, _P6 = _ERF32_P
_Q0, _Q1, _Q2, _Q3, _Q4 = _ERF32_Q
_ONE, _HALF, _LIMIT = np.float32(1), np.float32(0.5), np.float32(4)
# a contiguous float32 block (writable, or read-only: a memory-mapped array, an expand that
# only adds size-1 dimensions) into another
_BLOCK = [types.void(types.float32[::1], types.float32[::1]),
          types.void(types.Array(types.float32, 1, "C", readonly=True), types.float32[::1])]


@njit("float32(float32)")
def _erf(x):
    x = min(max(x, -_LIMIT), _LIMIT)
    x2 = x * x
    p = (((((x2 * _P0 + _P1) * x2 + _P2) * x2 + _P3) * x2 + _P4) * x2 + _P5) * x2 + _P6
    q = (((x2 * _Q0 + _Q1) * x2 + _Q2) * x2 + _Q3) * x2 + _Q4
    return p * x / q


_E9, _E8, _E7, _E6, _E5, _E4, _E3, _E2 = (1 / math.factorial(k) for k in range(9, 1, -1))


@njit("float32(float32)")
def _exp_nonpositive(y):
    """e^y for float32 y ≤ 0 (a loop of it vectorizes; libm's expf does not): in float64,
    e^(y/256) by its Taylor series on [-0.41, 0], squared 8 times; within 0.53 ulp in float32,
    and e^-104 and below round to 0 there."""
    z = max(np.float64(y), -104.0) * (1 / 256)
    e = ((((((((_E9 * z + _E8) * z + _E7) * z + _E6) * z + _E5) * z + _E4) * z + _E3) * z
          + _E2) * z + 1.0) * z + 1.0
    e *= e
    e *= e
    e *= e
    e *= e
    e *= e
    e *= e
    e *= e
    e *= e
    return np.float32(e)


@njit(_BLOCK)
def erf32(a, out):
    """erf of a float32 block ``a`` into ``out``."""
    for i in range(a.size):
        out[i] = _erf(a[i])


@njit(_BLOCK)
def gelu32(a, out):
    """Exact gelu ``a·Φ(a)`` of a float32 block into ``out``."""
    for i in range(a.size):
        x = a[i]
        out[i] = (_erf(x * _SQRT1_2) + _ONE) * x * _HALF


@njit(_BLOCK)
def gelu_slope32(a, out):
    """gelu's derivative ``Φ(a) + a·φ(a)`` of a float32 block into ``out``."""
    for i in range(a.size):
        x = a[i]
        cdf = (_erf(x * _SQRT1_2) + _ONE) * _HALF
        out[i] = cdf + _exp_nonpositive(x * x * -_HALF) * _INV_SQRT_2PI * x
