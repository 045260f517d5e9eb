"""``1 / z`` of a complex backend array with PyTorch's CPU bits.

PyTorch divides ``1 + 0j`` by ``z = c + di`` with c10's complex division (Smith's method): with
``|c| >= |d|``, ``r = d / c`` and ``1 / z = (1 - r i) / (c + d r)``, else ``r = c / d`` and
``1 / z = (r - i) / (d + c r)``; a zero ``z`` gives ``1 / |c| + (0 / |d|) i = inf + nan i``.
Its kernel is compiled with fused multiply-adds, so the denominator ``c + d r`` is rounded
once. NumPy's ``reciprocal`` uses another formula: an ulp apart in about a third of values.
numba's one-pass loops (:mod:`ember.ops.complex_reciprocal_numba`) run it where numba is on
(1000 complex64 values: ~35-100 µs in the NumPy passes below, ~4 µs there); the same bits.

Example:
    >>> complex_reciprocal(np, np.array([3 + 4j]))
    array([0.12-0.16j])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel

__all__ = ["complex_reciprocal"]

_KERNELS = compiled.register("ember.ops.complex_reciprocal_numba")
_SHARE = 1 << 20  # elements a piece takes at least


def _two_product(a: Any, b: Any) -> tuple[Any, Any]:
    """``p, e`` with ``p = fl(a b)`` and ``a b = p + e`` exactly, for float64 (Dekker's
    split)."""
    p = a * b
    split = 2.0 ** 27 + 1

    def halves(x: Any) -> tuple[Any, Any]:
        t = split * x
        hi = t - (t - x)
        return hi, x - hi

    ah, al = halves(a)
    bh, bl = halves(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``a b + c`` rounded once, for ``a b`` of ``c``'s sign and no larger. float32 goes
    through float64, where the product is exact and the sum is rounded to odd (an inexact sum
    is cut towards zero and its last bit set), so the cast to float32 rounds
    once (a float64 sum on a float32 midpoint would round twice: review58me);
    float64 through an error-free product and sum, ``a`` and ``c`` scaled by ``2**-600``
    (exact) where ``|c| > 2**900`` so that Dekker's split cannot overflow (a product scaled
    below the normals is then far under ``c``'s half-ulp); the plain ``a b + c`` at infinities.
    ``xp`` serves the selects only: the float32 path's bit views are NumPy's."""
    if a.dtype == np.float32:
        p, c64 = a.astype(np.float64) * b, c.astype(np.float64)
        s = p + c64
        t = p - (s - c64)  # exact error, as |p| <= |c| (Fast2Sum)
        bits, inexact = s.view(np.int64), (np.abs(t) > 0) & (np.abs(t) < np.inf)
        odd = (bits + ((bits ^ t.view(np.int64)) >> 63)) | 1  # towards zero, then odd
        return xp.where(inexact, odd, bits).view(np.float64).astype(np.float32)
    k = xp.where(xp.abs(c) > 2.0 ** 900, 2.0 ** -600, 1.0)
    a, c = a * k, c * k
    p, e = _two_product(a, b)
    s = p + c
    bp = s - p
    t = (p - (s - bp)) + (c - bp)
    fused = s + (t + e)
    return xp.where(xp.isfinite(fused), fused, p + c) / k


def _in_loop(xp: Any, z: Any) -> Any:
    """``1 / z`` by numba's loop (a C-ordered result), or None where numba is off."""
    if xp is not np or not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)  # (None where they fail to load: numba is off then)
    if kernels is None:
        return None
    out = np.empty(z.shape, z.dtype)
    kernel = kernels.reciprocal64 if z.dtype == np.complex64 else kernels.reciprocal128
    parallel.over_rows(kernel, (np.ascontiguousarray(z).reshape(-1), out.reshape(-1)), _SHARE)
    return out


def complex_reciprocal(xp: Any, z: Any) -> Any:
    """``1 / z`` elementwise for a complex64/complex128 array, bit for bit as PyTorch's CPU
    kernel (see the module docstring)."""
    fast = _in_loop(xp, z)
    return fast if fast is not None else _in_passes(xp, z)


def _in_passes(xp: Any, z: Any) -> Any:
    """:func:`complex_reciprocal` by NumPy's (or ``xp``'s) whole-array passes."""
    c, d = z.real, z.imag
    one, zero = c.dtype.type(1), c.dtype.type(0)
    with np.errstate(all="ignore"):
        ac, ad = xp.abs(c), xp.abs(d)
        wide = ac >= ad
        big, small = xp.where(wide, c, d), xp.where(wide, d, c)
        rat = small / big
        scl = one / _fma(xp, small, rat, big)
        zr = zero * rat
        re = xp.where(wide, one + zr, rat + zero) * scl
        im = xp.where(wide, zero - rat, zr - one) * scl
        both_zero = (ac == 0) & (ad == 0)
        re = xp.where(both_zero, one / ac, re)
        im = xp.where(both_zero, zero / ad, im)
    out = xp.empty(z.shape, z.dtype)
    out.real, out.imag = re, im
    return out
