"""The float32 erf, gelu and gelu-slope kernels of :mod:`ember.ops.erf_kernel` as one-pass
numba loops (imported only when :func:`ember.backend.compiled.numba_enabled`).

Each element is read once and written once; NumPy's evaluation of the same rational fit makes
a dozen passes over each block. Same fit, same float32 arithmetic order; ``exp`` is
:func:`ember.ops.exp_numba.exp_nonpositive`, so that the loops vectorize. The functions of one
element are also the steps of :mod:`ember.jit.loops`' fused loops, so a compiled graph's
values are eager's bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.erf_kernel import _ERF32_P, _ERF32_Q, _INV_SQRT_2PI, _SQRT1_2
from ember.ops.exp_numba import exp_nonpositive

_P0, _P1, _P2, _P3, _P4, _P5, _P6 = _ERF32_P
_Q0, _Q1, _Q2, _Q3, _Q4 = _ERF32_Q
_ONE, _HALF, _LIMIT = np.float32(1), np.float32(0.5), np.float32(4)
# a contiguous float32 block (writable, or read-only: a memory-mapped array, an expand that
# only adds size-1 dimensions) into another
_BLOCK = [types.void(types.float32[::1], types.float32[::1]),
          types.void(types.Array(types.float32, 1, "C", readonly=True), types.float32[::1])]


@njit("float32(float32)")
def erf(x):
    """erf of one float32."""
    x = min(max(x, -_LIMIT), _LIMIT)
    x2 = x * x
    p = (((((x2 * _P0 + _P1) * x2 + _P2) * x2 + _P3) * x2 + _P4) * x2 + _P5) * x2 + _P6
    q = (((x2 * _Q0 + _Q1) * x2 + _Q2) * x2 + _Q3) * x2 + _Q4
    return p * x / q


@njit("float32(float32)")
def gelu(x):
    """Exact gelu ``x·Φ(x)`` of one float32."""
    return (erf(x * _SQRT1_2) + _ONE) * x * _HALF


@njit("float32(float32)")
def gelu_slope(x):
    """gelu's derivative ``Φ(x) + x·φ(x)`` of one float32."""
    cdf = (erf(x * _SQRT1_2) + _ONE) * _HALF
    return cdf + exp_nonpositive(x * x * -_HALF) * _INV_SQRT_2PI * x


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
