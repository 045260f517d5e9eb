"""float32 ``fmod`` and ``remainder`` as one-pass numba loops (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.modulus_kernel`).

fmod is exact, so any exact method gives NumPy's bits: the float32 operands are widened to
float64, ``n = floor(|x| / |y|)`` (the rounded quotient, one off at most), ``|x| - n·|y|``
is exact while ``n < 2^29`` (24 + 29 bits), and one step of ``+|y|`` corrects the quotient's
rounding (``n`` is never below the true floor ``N``: ``N < 2^29`` is a float64, and rounding
is monotone, so ``fl(|x|/|y|) >= N``; hence ``|x| - n·|y| < |y|`` and only the negative side
needs a step); the sign is ``x``'s. Larger quotients, zero or infinite divisors, infinities and
NaN take the C library's ``fmod`` (in float64: exact as well). remainder is NumPy's
``npy_divmod`` from it: ``+ y`` (rounded in float32) where the signs of ``y`` and the fmod
differ, a zero keeping ``x``'s sign (as PyTorch's; NumPy's takes ``y``'s). glibc's ``fmodf``,
which NumPy calls, takes ~13 ns an element; this ~0.7 (10^6 float32, one thread).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ember.backend.compiled import njit

_EXACT = np.float64(2.0**29)  # quotients below: n·|y| and |x| - n·|y| exact in float64
_F32_MAX = np.float64(np.finfo(np.float32).max)
_ZERO = np.float64(0)


@njit("boolean(float32, float32)")
def _exact(x, y):
    """Whether :func:`_fmod_wide` is exact for ``x`` and ``y``: finite, a nonzero finite
    divisor, a quotient below 2^29 (False at NaN)."""
    ax, ay = abs(np.float64(x)), abs(np.float64(y))
    return ax < _EXACT * ay and ay <= _F32_MAX


@njit("float32(float32, float32)")
def _fmod_wide(x, y):
    """``fmod(x, y)`` where :func:`_exact` holds, in float64 (no branch: the loops vectorize)."""
    ax, ay = abs(np.float64(x)), abs(np.float64(y))
    r = ax - np.floor(ax / ay) * ay
    r = r + ay if r < _ZERO else r  # (never r >= ay: see the module's docstring)
    return np.float32(math.copysign(r, np.float64(x)))


@njit("float32(float32, float32)")
def _python_mod(mod, y):
    """PyTorch's remainder from ``mod = fmod(x, y)``: NumPy's ``npy_divmod``'s, but a zero
    keeps ``x``'s sign (NumPy's takes ``y``'s)."""
    if y == 0:
        return mod
    return mod + y if mod != 0 and (y < 0) != (mod < 0) else mod  # (a zero keeps x's sign)


def _block(readonly: bool) -> types.Array:
    return types.Array(types.float32, 1, "C", readonly=readonly)


_SIGNATURES = [types.void(_block(ra), _block(rb), _block(False), types.boolean)
               for ra in (False, True) for rb in (False, True)]


@njit(_SIGNATURES)
def modulus_block(a, b, out, python):
    """``fmod`` (or, ``python`` True, ``remainder``) of a block ``a`` and ``b`` (as long, or
    one element) into ``out``: a vectorized pass for the exact cases, then the C library's
    ``fmodf`` for the others (infinities, NaN, zero divisors, quotients of 2^29 or more),
    found by a pass of their own (an ``fmodf`` in the loop's branch is speculated for every
    element: 6 ns each, where the pass costs 0.6)."""
    one = b.size == 1
    y = b[0]
    if one:
        for i in range(a.size):
            out[i] = _fmod_wide(a[i], y)
    else:
        for i in range(a.size):
            out[i] = _fmod_wide(a[i], b[i])
    others, count = np.empty(a.size, np.int64), 0
    for i in range(a.size):
        if not _exact(a[i], y if one else b[i]):
            others[count] = i
            count += 1
    for j in range(count):
        i = others[j]
        out[i] = np.fmod(a[i], y if one else b[i])
    if python:
        for i in range(a.size):
            out[i] = _python_mod(out[i], y if one else b[i])
