"""The kernels of ``erfc`` and ``erfinv`` (:mod:`ember.ops.special`), which NumPy lacks:
float64 array functions of the backend's namespace ``xp``, accurate to a few ulps, the result
in the input's dtype."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.backend import compiled
from ember.ops.erf_kernel import _ERF_POLYS, _horner, blockwise, erf_array

_KERNELS = compiled.register("ember.ops.erfc_numba")

# erfc(x) on [0.5, 1) in u = 4x - 3: a Chebyshev fit made for Ember against a 50-digit
# reference (to 3e-16 relative), evaluated by Horner's rule in the power basis of u
_ERFC_HALF_FIT = (
    0.3036943709792132, -0.16101480966041123, 0.014777446325479799, -8.875962318571657e-05,
    -7.235521900472762e-05, 3.128714786767132e-06, 2.028108977549533e-07,
    -1.705693739041646e-08, -2.7765932357223497e-10, 5.755489031534547e-11,
    -3.103299900942008e-13, -1.4174269709048924e-13, 2.9523059640108568e-15,
    2.695112087874088e-16, -9.694767045584596e-18)
_ERFC_HALF = tuple(np.polynomial.chebyshev.cheb2poly(_ERFC_HALF_FIT)[::-1])
_SQRT_PI = math.sqrt(math.pi)


def _split(a: Any) -> tuple[Any, Any]:
    """``a`` as two halves of 26 bits, whose products are exact (Dekker)."""
    c = 134217729.0 * a  # 2**27 + 1
    high = c - (c - a)
    return high, a - high


def two_product(a: Any, b: Any) -> tuple[Any, Any]:
    """``a * b`` as the rounded product and its exact rounding error (Dekker's algorithm;
    float64 arrays with ``|a b|`` below about 1e300)."""
    hi = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return hi, ((ah * bh - hi) + ah * bl + al * bh) + al * bl


def _exp_square(xp: Any, s: Any, sign: float = -1.0) -> Any:
    """``exp(sign s²)`` with the rounding error of ``s²`` put back (Dekker's exact square), so
    it keeps full relative precision up to s = 27 (plain ``exp(-s*s)`` loses 7e-14 there)."""
    hi, err = two_product(s, s)
    return xp.exp(sign * hi) * (1 + sign * err)


def _erfcx_fraction(s: Any, depth: int) -> Any:
    """``exp(s²) erfc(s)`` by its continued fraction ``1/sqrt(pi) / (s + (1/2)/(s + 1/(s +
    ...)))``, ``depth`` levels: to 1 ulp for s >= 2 with 60, for s >= 4 with 20."""
    t = s
    for k in range(depth, 0, -1):
        t = s + (k / 2) / t
    return (1 / _SQRT_PI) / t  # (sqrt(pi) t overflows for s near the largest float)


def _erfc_fraction(xp: Any, s: Any, depth: int) -> Any:
    return _exp_square(xp, s) * _erfcx_fraction(s, depth)


def _by_numba(xp: Any, name: str, a: Any) -> Any:
    """numba's one-pass kernel ``name`` (:mod:`ember.ops.erfc_numba`) of a float32 or float64
    NumPy array, block by block over the cores; None where it does not run."""
    if xp is not np or a.dtype not in (np.float32, np.float64) or not compiled.numba_enabled():
        return None
    module = compiled.load(_KERNELS)
    return None if module is None else blockwise(xp, getattr(module, name + str(
        8 * a.dtype.itemsize)), a)


def _erfc64(xp: Any, x: Any) -> Any:
    """erfc of a float64 array to about 2 ulps relative (down to the subnormals)."""
    fast = _by_numba(xp, "erfc", x)
    if fast is not None:
        return fast
    out = xp.where(xp.isnan(x), x, 0.0)
    pieces = (
        (x < 0.5, lambda s: 1 - erf_array(xp, s)),  # erf(s) <= 0.52: no cancellation
        ((x >= 0.5) & (x < 1), lambda s: _horner(_ERFC_HALF, 4 * s - 3)),
        ((x >= 1) & (x < 2),
         lambda s: _exp_square(xp, s) * _horner(_ERF_POLYS[1], 2 * s - 3) / s),
        ((x >= 2) & (x < 4), lambda s: _erfc_fraction(xp, s, 60)),
        ((x >= 4) & (x < 28), lambda s: _erfc_fraction(xp, s, 20)),  # 0 in float64 beyond
    )
    for mask, piece in pieces:  # each piece only on its own elements
        if mask.any():
            out[mask] = piece(x[mask])
    return out


def erfc_array(xp: Any, a: Any) -> Any:
    """The complementary error function ``1 - erf(a)`` of a backend float array, in ``a``'s
    dtype, with full relative precision in the right tail (computed in float64)."""
    fast = _by_numba(xp, "erfc", a)
    if fast is not None:
        return fast
    return _erfc64(xp, a.astype(np.float64)).astype(a.dtype, copy=False)


def erfcx_array(xp: Any, a: Any) -> Any:
    """The scaled complementary error function ``exp(a²) erfc(a)`` in ``a``'s dtype: the
    continued fraction from 2 on, ``exp(a²) erfc(a)`` (exact square) below, and
    ``2 exp(a²) - erfcx(-a)`` for negative ``a`` (``inf`` below -26.6)."""
    x = a.astype(np.float64)
    s = xp.abs(x)
    out = xp.where(xp.isnan(x), x, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        for mask, piece in (((s >= 2) & (s < 4), lambda v: _erfcx_fraction(v, 60)),
                            (s >= 4, lambda v: _erfcx_fraction(v, 20)),
                            (s < 2, lambda v: _exp_square(xp, v, 1.0) * _erfc64(xp, v))):
            if mask.any():
                out[mask] = piece(s[mask])
        negative = x < 0
        if negative.any():
            v = s[negative]
            out[negative] = xp.where(v > 26.7, xp.inf, 2 * _exp_square(xp, v, 1.0)
                                     - out[negative])
    return out.astype(a.dtype, copy=False)


# Giles' first guess of erfinv(y) / y in w = -log(1 - y²) ("Approximating the erfinv
# function", GPU Computing Gems, 2011): 1e-7 relative for w < 16
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_guess(xp: Any, w: Any) -> Any:
    """erfinv(y) / y from ``w = -log((1 - y)(1 + y))`` (Giles), for w < 16."""
    out = xp.empty_like(w)
    low = w < 5
    out[low] = _horner(_ERFINV_CENTRAL, w[low] - 2.5)
    out[~low] = _horner(_ERFINV_TAIL, xp.sqrt(w[~low]) - 3)
    return out


def _erfinv_far(q: Any, xp: Any = np) -> Any:
    """erfinv(1 - q) for q < 1e-7 from erfc's asymptotic series (to 2e-5):
    x² = -log(q) - log(x sqrt(pi)) + log(1 - 1/(2x²) + 3/(4x⁴)). (``xp`` comes last, NumPy by
    default, so that :mod:`ember.ops.erfc_numba` compiles this function as it is.)"""
    big = -xp.log(q)
    x = xp.sqrt(big)
    for _ in range(3):
        t = 0.5 / (x * x)
        x = xp.sqrt(big - xp.log(x * _SQRT_PI) + xp.log1p(t * (3 * t - 1)))
    return x


def _halley_central(xp: Any, x: Any, a: Any) -> Any:
    """One Halley step on ``erf(x) = a`` (cubic convergence)."""
    d = (erf_array(xp, x) - a) * (_SQRT_PI / 2) * xp.exp(x * x)  # f / f'
    return x - d / (1 + x * d)


def _halley_tail(xp: Any, x: Any, log_q: Any) -> Any:
    """One Halley step on ``log(erfc(x)) = log(q)``: nearly linear in x, and erfc keeps the
    digits that ``erf(x) - y`` loses near ``y = 1``."""
    e = _erfc64(xp, x)
    r = xp.log(e) - log_q
    phi = (2 / _SQRT_PI) * _exp_square(xp, x) / e  # -d log(erfc) / dx
    # h = r, h' = -phi, h'' = 2 x phi - phi²: x - 2 h h' / (2 h'² - h h'')
    return x + 2 * r / (2 * phi - r * (2 * x - phi))


def _erfinv64(xp: Any, y: Any) -> Any:
    fast = _by_numba(xp, "erfinv", y)
    if fast is not None:
        return fast
    a = xp.abs(y)
    q = 1 - a  # exact for a >= 0.5
    out = xp.where(a == 1, xp.inf, xp.nan)  # NaN beyond ±1 and for NaN
    central = a < 0.5
    if central.any():
        s = a[central]
        w = -xp.log1p(-s * s)  # < 0.3 here: Giles' central polynomial
        out[central] = _halley_central(xp, s * _horner(_ERFINV_CENTRAL, w - 2.5), s)
    tail = (a >= 0.5) & (a < 1)
    if tail.any():
        s, qs = a[tail], q[tail]
        w = -xp.log(qs * (1 + s))
        near = w < 16
        x = xp.empty_like(s)
        x[near] = s[near] * _erfinv_guess(xp, w[near])
        far = ~near
        x[far] = _erfinv_far(qs[far], xp)
        log_q = xp.log(qs)
        x = _halley_tail(xp, x, log_q)
        if far.any():  # their guess is only good to 2e-5: one more step
            x[far] = _halley_tail(xp, x[far], log_q[far])
        out[tail] = x
    return xp.copysign(out, y)


def erfinv_array(xp: Any, a: Any) -> Any:
    """The inverse error function of a backend float array, in ``a``'s dtype (computed in
    float64 to about 2 ulps): ±inf at ±1, NaN beyond."""
    fast = _by_numba(xp, "erfinv", a)
    if fast is not None:
        return fast
    return _erfinv64(xp, a.astype(np.float64)).astype(a.dtype, copy=False)


# Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 477-484, 1988): ndtri by rationals
# of degree 7 (numerator, denominator; highest power first), to about 1e-16 relative: x = q
# N(r) / D(r) in r = 0.180625 - q² for |q| = |p - 1/2| <= 0.425, else ±N(u) / D(u) in u = s -
# 1.6 (s <= 5) or u = s - 5 for s = sqrt(-log(min(p, 1 - p))) (the sign of q)
NDTRI_CENTRAL = (
    (2509.0809287301226727, 33430.575583588128105, 67265.770927008700853,
     45921.953931549871457, 13731.693765509461125, 1971.5909503065514427,
     133.14166789178437745, 3.3871328727963666080),
    (5226.4952788528545610, 28729.085735721942674, 39307.895800092710610,
     21213.794301586595867, 5394.1960214247511077, 687.18700749205790830,
     42.313330701600911252, 1.0))
NDTRI_NEAR = (
    (7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1,
     1.27045825245236838258, 3.64784832476320460504, 5.76949722146069140550,
     4.63033784615654529590, 1.42343711074968357734),
    (1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2,
     1.48103976427480074590e-1, 6.89767334985100004550e-1, 1.67638483018380384940,
     2.05319162663775882187, 1.0))
NDTRI_FAR = (
    (2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3,
     2.65321895265761230930e-2, 2.96560571828504891230e-1, 1.78482653991729133580,
     5.46378491116411436990, 6.65790464350110377720),
    (2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5,
     7.86869131145613259100e-4, 1.48753612908506148525e-2, 1.36929880922735805310e-1,
     5.99832206555887937690e-1, 1.0))


def ndtri_array(xp: Any, p: Any) -> Any:
    """The standard normal quantile of ``p``, in ``p``'s dtype, computed in float64 (``-inf``
    at 0, ``inf`` at 1, NaN outside ``[0, 1]``) by Wichura's rationals (AS 241), in the
    lower half ``q = min(p, 1 - p)`` (exact for ``p >= 1/2``): within 6 ulps of the exact
    quantile down to ``q = 5e-324``, with no Newton step."""
    fast = _by_numba(xp, "ndtri", p)
    if fast is not None:
        return fast
    x = p.astype(np.float64)
    q = x - 0.5
    out = xp.where(x == 0, -xp.inf, xp.where(x == 1, xp.inf, xp.nan))  # NaN outside, NaN
    central = xp.abs(q) <= 0.425
    if central.any():
        qc = q[central]
        r = 0.180625 - qc * qc
        out[central] = qc * _horner(NDTRI_CENTRAL[0], r) / _horner(NDTRI_CENTRAL[1], r)
    tail = ~central & (x > 0) & (x < 1)
    if tail.any():
        xt = x[tail]
        s = xp.sqrt(-xp.log(xp.minimum(xt, 1 - xt)))
        v = xp.empty_like(s)
        for mask, (num, den), shift in ((s <= 5, NDTRI_NEAR, 1.6), (s > 5, NDTRI_FAR, 5.0)):
            u = s[mask] - shift
            v[mask] = _horner(num, u) / _horner(den, u)
        out[tail] = xp.copysign(v, q[tail])
    return out.astype(p.dtype, copy=False)
