"""``a / z`` and ``1 / z`` of complex backend arrays with PyTorch's CPU bits.

PyTorch divides ``x + yi`` by ``z = c + di`` with c10's complex division (Smith's method): with
``|c| >= |d|``, ``r = d / c`` and ``a / z = ((x + y r) + (y - x r) i) / (c + d r)``, else
``r = c / d`` and ``a / z = ((x r + y) + (y r - x) i) / (d + c r)``; a zero ``z`` gives
``x / |c| + (y / |d|) i``. Its kernels are compiled with fused multiply-adds: the denominator
and both numerators are rounded once — except, for complex64, the last element of an inner
loop of odd length (a 0-d or one-element quotient, the 7th of 7), whose numerators are
rounded twice. NumPy's division and ``reciprocal`` use other formulas: an ulp apart in about
a third of values. numba's one-pass loops (:mod:`ember.ops.complex_reciprocal_numba`) run it
where numba is on (1000 complex64 values: ~4 µs there, ~35-100 µs in the NumPy passes below);
the same bits.

Example:
    >>> complex_reciprocal(np, np.array([3 + 4j]))
    array([0.12-0.16j])
    >>> complex_divide(np, np.array([1 + 2j]), np.array([3 + 4j]))
    array([0.44+0.08j])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.backend import compiled, parallel

__all__ = ["complex_reciprocal", "complex_divide"]

_KERNELS = compiled.register("ember.ops.complex_reciprocal_numba")
_SHARE = 1 << 20  # elements a piece takes at least


def _two_product(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """``p, e`` with ``p = fl(a b)`` and ``a b = p + e`` exactly, for float64 (Dekker's
    split)."""
    p = a * b
    split = 2.0 ** 27 + 1

    def halves(x: Any) -> tuple[Any, Any]:  # (x over 2**995 split at 2**-28 scale: no overflow)
        scale = xp.where(xp.abs(x) > 2.0 ** 995, 2.0 ** -28, 1.0)
        t = split * (x * scale)
        hi = (t - (t - x * scale)) / scale
        return hi, x - hi

    ah, al = halves(a)
    bh, bl = halves(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(p: Any, c: Any) -> tuple[Any, Any]:
    """``s, e`` with ``s = fl(p + c)`` and ``p + c = s + e`` exactly."""
    s = p + c
    bp = s - p
    return s, (p - (s - bp)) + (c - bp)


def _fma(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``a b + c`` rounded once. float32 through float64, where the product is exact: where
    the float64 sum is a float32 tie, its rounding error picks the side; float64 through an
    error-free product and sum (where the split overflows, the plain ``a b + c``; a product
    under 2**-960 scaled by 2**110 first, so a subnormal result may be rounded twice)."""
    if a.dtype == np.float32:
        s, e = _two_sum(a.astype(np.float64) * b, c)
        near = s.astype(np.float32)
        h = s - near
        other = near + 2.0 * h  # the other float32 neighbour where s is a tie
        off = (e != 0) & (h != 0) & (other.astype(np.float32) == other) & ((e > 0) == (h > 0))
        return xp.where(off, other.astype(np.float32), near)
    plain = a * b + c
    k = xp.where(xp.abs(a * b) < 2.0 ** -960, 2.0 ** 110, 1.0)  # (a tiny product's error:
    small_a = xp.abs(a) < xp.abs(b)                               # scaled into the normals)
    p, e = _two_product(xp, xp.where(small_a, a * k, a), xp.where(small_a, b, b * k))
    s, t = _two_sum(p, c * k)
    u, v = _two_sum(t, e)  # s + u + v is a b + c exactly
    near = xp.where(u == 0, s, s + u)  # (s keeps its zero's sign)
    h = u - (near - s)
    other = near + 2.0 * h  # the other neighbour where s + u is a tie, which v breaks
    off = (v != 0) & (h != 0) & (other - near == 2.0 * h) & ((v > 0) == (h > 0))
    fused = xp.where(off, other, near) / k
    alone = (c == 0) & (a != 0) & (b != 0)  # (the product, signed where it underflows)
    return xp.where(alone, a * b, xp.where(xp.isfinite(fused), fused, plain))


def _in_loop(xp: Any, a: Any, z: Any, fused: bool) -> Any:
    """``a / z`` (broadcast; a C-ordered result) by numba's loop, or None where numba is
    off."""
    if xp is not np or not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)  # (None where they fail to load: numba is off then)
    if kernels is None:
        return None
    shape = a.shape if a.shape == z.shape else np.broadcast_shapes(a.shape, z.shape)
    out = np.empty(shape, z.dtype)
    a, z = (np.ascontiguousarray(x if x.shape == shape else np.broadcast_to(x, shape)
                                 ).reshape(-1) for x in (a, z))
    kernel = kernels.divide64 if z.dtype == np.complex64 else kernels.divide128
    parallel.over_rows(kernel, (a, z, out.reshape(-1)), _SHARE, fused)
    return out


def _divide(xp: Any, a: Any, z: Any, fused: bool = True) -> Any:
    """``a / z`` by the loop where numba is on, else the passes."""
    fast = _in_loop(xp, a, z, fused)
    return fast if fast is not None else _in_passes(xp, a, z, fused)


def complex_reciprocal(xp: Any, z: Any) -> Any:
    """``1 / z`` elementwise for a complex64/complex128 array, bit for bit as PyTorch's CPU
    kernel (see the module docstring)."""
    return _divide(xp, xp.ones((), z.dtype), z)


def complex_divide(xp: Any, a: Any, z: Any) -> Any:
    """``a / z`` (broadcast) for complex arrays of one dtype, bit for bit as PyTorch's CPU
    kernel where it runs one thread (see the module docstring)."""
    out = _divide(xp, a, z)
    if z.dtype != np.complex64 or not out.size:
        return out
    shape = out.shape
    inner = _inner_dims(shape, a, z)
    if not math.prod(shape[k] for k in inner) % 2:
        return out
    last = tuple(shape[k] - 1 if k in inner else slice(None) for k in range(len(shape)))
    out[last] = _divide(xp, xp.broadcast_to(a, shape)[last], xp.broadcast_to(z, shape)[last],
                        fused=False)  # (the last element of each inner loop)
    return out


def _inner_dims(shape: tuple[int, ...], *operands: Any) -> list[int]:
    """The dimensions of PyTorch's inner loop (TensorIterator's) over ``operands`` broadcast
    to ``shape``, a new output: dimensions of size one dropped, ordered fastest first by the
    strides of the first operand that moves in both, and merged from the fastest while every
    operand's strides run on."""
    strides = [x.strides if x.shape == shape else np.broadcast_to(x, shape).strides
               for x in operands]
    dims = [k for k in reversed(range(len(shape))) if shape[k] != 1]

    def order(j: int, k: int) -> int:  # 1: k is the faster
        for s in strides:
            if s[j] and s[k] and (s[j] != s[k] or shape[j] > shape[k]):
                return -1 if s[j] < s[k] else 1
        return 0

    for i in range(1, len(dims)):  # (an insertion sort, as TensorIterator's)
        m = i
        for j in reversed(range(i)):
            step = order(dims[j], dims[m])
            if step < 0:
                break
            if step:
                dims[j], dims[m], m = dims[m], dims[j], j
    for i in range(1, len(dims)):
        if any(s[dims[i]] != s[dims[i - 1]] * shape[dims[i - 1]] for s in strides):
            return dims[:i]
    return dims


def _in_passes(xp: Any, a: Any, z: Any, fused: bool = True) -> Any:
    """``a / z`` by NumPy's (or ``xp``'s) whole-array passes."""
    x, y, c, d = a.real, a.imag, z.real, z.imag
    mul_add = _fma if fused else (lambda xp, p, r, q: p * r + q)
    with np.errstate(all="ignore"):
        ac, ad = xp.abs(c), xp.abs(d)
        wide = ac >= ad
        big, small = xp.where(wide, c, d), xp.where(wide, d, c)
        rat = small / big
        scl = c.dtype.type(1) / _fma(xp, small, rat, big)
        re = mul_add(xp, xp.where(wide, y, x), rat, xp.where(wide, x, y)) * scl
        im = mul_add(xp, xp.where(wide, -x, y), rat, xp.where(wide, y, -x)) * scl
        both_zero = (ac == 0) & (ad == 0)
        re = xp.where(both_zero, x / ac, re)
        im = xp.where(both_zero, y / ad, im)
    out = xp.empty(re.shape, z.dtype)
    out.real, out.imag = re, im
    return out
