"""float32 two-operand kernels without a family of their own, ``hypot`` and ``copysign``, as
one-pass numba loops over a block and a second block as long or of one element (imported only
when :func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.binary32_kernel`).

copysign is ``a``'s bits with ``b``'s sign bit, NaN included, as NumPy's. glibc's ``hypotf``,
which NumPy's loop calls (~4 ns an element), is ``sqrt(x² + y²)`` in float64, rounded once;
this loop is the same steps, vectorized: the same bits at every pair of finite float32 values
(checked on 2·10^6 random bit patterns); inf where either is infinite (even beside a quiet NaN;
beside a signaling one, NaN, as glibc's), NaN where either is NaN otherwise.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit

_INF = np.float64(np.inf)
_EXPONENT_QUIET, _EXPONENT, _PAYLOAD = np.uint32(0x7FC00000), np.uint32(0x7F800000), \
    np.uint32(0x003FFFFF)


@njit("boolean(float32)")
def _signaling(v):
    """Whether ``v`` is a signaling NaN (all exponent bits, the quiet bit clear, a payload)."""
    bits = np.float32(v).view(np.uint32)
    return (bits & _EXPONENT_QUIET) == _EXPONENT and (bits & _PAYLOAD) != 0


def _block(readonly: bool) -> types.Array:
    return types.Array(types.float32, 1, "C", readonly=readonly)


@njit([types.void(_block(ra), _block(rb), _block(False)) for ra in (False, True)
       for rb in (False, True)])
def hypot_block(a, b, out):
    """``hypot`` of a block ``a`` and ``b`` (as long, or one element) into ``out``."""
    one = b.size == 1
    for i in range(a.size):
        xf, yf = a[i], b[0] if one else b[i]
        x, y = np.float64(xf), np.float64(yf)
        r = np.sqrt(x * x + y * y)
        infinite = (abs(x) == _INF or abs(y) == _INF) and not (_signaling(xf) or _signaling(yf))
        out[i] = np.float32(_INF if infinite else r)


@njit([types.void(_block(ra), _block(rb), _block(False)) for ra in (False, True)
       for rb in (False, True)])
def copysign_block(a, b, out):
    """``copysign`` of a block ``a`` and ``b`` (as long, or one element) into ``out``: ``a``'s
    bits with ``b``'s sign bit (NaN included, as NumPy's)."""
    one = b.size == 1
    for i in range(a.size):
        out[i] = math.copysign(a[i], b[0] if one else b[i])
