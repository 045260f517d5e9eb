"""``a / z`` of complex64 and complex128 blocks as one-pass numba loops (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.complex_reciprocal`,
which also takes ``1 / z`` from them with a numerator of one).

The steps of that module's NumPy passes, element by element: c10's scaled division with the
denominator ``big + small·rat`` and, where ``fused``, the numerators ``p·rat + q`` rounded once
(complex64 in float64, where the product is exact, a float32 tie of the float64 sum resolved
by its rounding error; complex128 by Dekker's error-free product and sum, the plain sum where
that overflows). numba compiles without contraction, so no other multiply-add changes a
rounding. Selects rather than branches, and complex arrays rather than ``(n, 2)`` float views
(which LLVM left scalar): the loop vectorizes. (An operand read at a step of 0 or 1, for
broadcasting, made it 10-15 times slower: the operands have the block's size.)
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit


def _kernel_types(c: types.Type) -> list:
    return [types.void(types.Array(c, 1, "C", readonly=ra), types.Array(c, 1, "C", readonly=rz),
                       types.Array(c, 1, "C"), types.boolean)
            for ra in (False, True) for rz in (False, True)]


_FLOATS = (types.float32, types.float64)
_HUGE, _DOWN = 2.0 ** 995, 2.0 ** -28  # (constants: ** in a kernel runs per element)
_TINY, _UP = 2.0 ** -960, 2.0 ** 110


@njit([types.Tuple((f, f, f, types.boolean))(f, f) for f in _FLOATS])
def _scaled(c, d):
    """``big, small, rat, wide``: the part of larger magnitude, the other, their ratio, and
    whether ``c`` is the larger."""
    wide = abs(c) >= abs(d)
    big = c if wide else d
    small = d if wide else c
    return big, small, small / big, wide


@njit([types.UniTuple(f, 4)(f, f, types.boolean) for f in _FLOATS])
def _numerators(x, y, wide):
    """``p, q, s, t`` with the quotient's parts ``(p·rat + q, s·rat + t) / den``."""
    return (y if wide else x), (x if wide else y), (-x if wide else y), (y if wide else -x)


@njit([types.UniTuple(f, 2)(f, f, f, f, f, f, f) for f in _FLOATS])
def _parts(x, y, c, d, re, im, scl):
    """The parts ``re·scl, im·scl`` of ``(x + y i) / (c + d i)``; where ``c`` and ``d`` are
    both zero, ``x / |c| + (y / |d|) i``."""
    both_zero = (c == 0) & (d == 0)
    return (x / abs(c) if both_zero else re * scl), (y / abs(d) if both_zero else im * scl)


@njit([types.float32(types.float32, types.float32, types.float32)])
def _fma32(p, r, q):
    """``p·r + q`` rounded once: the float64 sum ``s`` of the exact product, and where ``s``
    is a float32 tie, its rounding error ``e`` picks the side."""
    prod = np.float64(p) * np.float64(r)
    s = prod + np.float64(q)
    bp = s - prod
    e = (prod - (s - bp)) + (np.float64(q) - bp)
    near = np.float32(s)
    h = s - np.float64(near)
    other = np.float64(near) + 2.0 * h  # the other float32 neighbour where s is a tie
    off = (e != 0) & (h != 0) & (np.float64(np.float32(other)) == other) & ((e > 0) == (h > 0))
    return np.float32(other) if off else near


@njit([types.float64(types.float64)])
def _high(x):
    """The high half of Dekker's split of ``x`` (``x`` over 2**995 split at 2**-28 scale, so
    that ``(2**27 + 1) x`` does not overflow)."""
    scale = _DOWN if abs(x) > _HUGE else 1.0
    t = 134217729.0 * (x * scale)  # 2**27 + 1
    return (t - (t - x * scale)) / scale


@njit([types.float64(types.float64, types.float64, types.float64)])
def _fma64(p, r, q):
    """``p·r + q`` rounded once (Dekker's split and TwoSum; the plain sum where the
    product's parts overflow; where ``q`` is zero, the product alone, signed zero if it
    underflows). A product under 2**-960, whose error the subnormals cannot hold, is scaled
    by 2**110 first (a subnormal result may then be rounded twice)."""
    alone, plain = p * r, p * r + q
    k = _UP if abs(alone) < _TINY else 1.0
    use_alone = (q == 0) & (p != 0) & (r != 0)
    small_p = abs(p) < abs(r)
    p, r, q = (p * k if small_p else p), (r if small_p else r * k), q * k
    prod = p * r
    ph, rh = _high(p), _high(r)
    pl, rl = p - ph, r - rh
    e = ((ph * rh - prod) + ph * rl + pl * rh) + pl * rl
    s = prod + q
    bp = s - prod
    t = (prod - (s - bp)) + (q - bp)
    u = t + e  # s + u + v is p·r + q exactly
    bu = u - t
    v = (t - (u - bu)) + (e - bu)
    near = s + u if u != 0 else s  # (s keeps its zero's sign)
    h = u - (near - s)
    other = near + 2.0 * h  # the other neighbour where s + u is a tie, which v breaks
    off = (v != 0) & (h != 0) & (other - near == 2.0 * h) & ((v > 0) == (h > 0))
    fused = (other if off else near) / k
    return alone if use_alone else (fused if abs(fused) < np.inf else plain)


@njit(_kernel_types(types.complex64))
def divide64(a, z, out, fused):
    """``a / z`` of complex64 blocks into ``out``, the numerators rounded once where
    ``fused``."""
    one = np.float32(1)
    for i in range(out.size):
        x, y, c, d = a[i].real, a[i].imag, z[i].real, z[i].imag
        big, small, rat, wide = _scaled(c, d)
        p, q, s, t = _numerators(x, y, wide)
        re = _fma32(p, rat, q) if fused else p * rat + q
        im = _fma32(s, rat, t) if fused else s * rat + t
        out[i] = complex(*_parts(x, y, c, d, re, im, one / _fma32(small, rat, big)))


@njit(_kernel_types(types.complex128))
def divide128(a, z, out, fused):
    """``a / z`` of complex128 blocks into ``out``, as :func:`divide64` with :func:`_fma64`."""
    for i in range(out.size):
        x, y, c, d = a[i].real, a[i].imag, z[i].real, z[i].imag
        big, small, rat, wide = _scaled(c, d)
        p, q, s, t = _numerators(x, y, wide)
        re = _fma64(p, rat, q) if fused else p * rat + q
        im = _fma64(s, rat, t) if fused else s * rat + t
        out[i] = complex(*_parts(x, y, c, d, re, im, 1.0 / _fma64(small, rat, big)))
