"""lerp of float32 blocks as one-pass numba loops (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.lerp_kernel`).

Each element is PyTorch's CPU kernel's value: ``end - input`` rounded to float32, then
``input + w·diff`` (``|w| < 0.5``) or ``end + (w - 1)·diff``, the product exact in float64 and
the sum rounded once, as PyTorch's fused multiply-add: rounded to float64, then to float32, and
where the float64 sum lands on a float32 tie (the second rounding's only error), the sum's
exact error picks the side. float16 and bfloat16 run here in float32, as PyTorch's do.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit


def _block(readonly: bool = False) -> types.Array:
    return types.Array(types.float32, 1, "C", readonly=readonly)


_NUMBER = [types.void(_block(ro_a), _block(ro_b), _block(), types.float32)
           for ro_a in (False, True) for ro_b in (False, True)]
_TENSOR = [types.void(_block(ro_a), _block(ro_b), _block(ro_w), _block())
           for ro_a in (False, True) for ro_b in (False, True) for ro_w in (False, True)]


@njit(types.float32(types.float64, types.float64))
def _fma32(base, p):
    """``base + p`` (float64 values, ``p`` a float32 product) rounded once to float32."""
    s = base + p
    r = np.float32(s)
    t = np.float64(r)
    other = s + (s - t)  # (the other float32 neighbour where s is their midpoint)
    kept = s - base
    err = (base - (s - kept)) + (p - kept)  # (TwoSum: s + err is the exact sum)
    tie = (s != t) & (np.float64(np.float32(other)) == other) & (abs(other) < np.inf)
    # (no branches: the loop stays vectorized)
    return np.float32(other) if tie & ((err > 0) & (other > t) | (err < 0) & (other < t)) \
        else r


@njit(_NUMBER)
def lerp_number(a, b, out, w):
    """``lerp(a, b, w)`` of two blocks into ``out`` for one float32 weight ``w``."""
    small = abs(w) < 0.5
    coeff = np.float64(w) if small else np.float64(w - np.float32(1))
    for i in range(a.size):
        d = np.float64(b[i] - a[i])
        base = np.float64(a[i]) if small else np.float64(b[i])
        out[i] = _fma32(base, coeff * d)


@njit(_TENSOR)
def lerp_tensor(a, b, w, out):
    """``lerp(a, b, w)`` of three blocks into ``out``, a weight per element (NaN gives NaN)."""
    one = np.float32(1)
    for i in range(a.size):
        wi = w[i]
        d = np.float64(b[i] - a[i])
        if abs(wi) < 0.5:
            out[i] = _fma32(np.float64(a[i]), np.float64(wi) * d)
        else:
            out[i] = _fma32(np.float64(b[i]), np.float64(wi - one) * d)
