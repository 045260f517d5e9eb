"""Float64 kernels of the gamma family, in plain NumPy (Ember does not depend on SciPy; the
Bessel functions are in :mod:`ember.ops.bessel_kernel`).

- ``lgamma``: on ``[0.5, 12.5)`` the Taylor series of ``lgamma(2 + z)`` (coefficients
  ``(-1)^k (zeta(k) - 1) / k``, ``|z| <= 1/2``) with ``z = x - round(x)`` exact and the
  recurrence's product in one ``log``, so the zeros at 1 and 2 keep their relative digits
  (Lanczos' formula lost all of them at ``2 + 1e-12``); Lanczos' approximation (g = 7, 9
  terms; about 1e-15 relative in Γ) above, the reflection
  ``lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)`` below 0.5.
- ``polygamma(n, x)`` (``n = 0`` is digamma): the recurrence ``psi(x) = psi(x + 1) - 1/x``
  up to ``x >= 12 + n``, then the asymptotic (Euler-Maclaurin) series in Bernoulli numbers;
  ``x < 0`` by the reflection ``psi⁽ⁿ⁾(x) = (-1)ⁿ psi⁽ⁿ⁾(1 - x) - pi d^n/dx^n cot(pi x)``.

With numba (:mod:`ember.backend.compiled`), lgamma, digamma and trigamma (``polygamma(1)``,
digamma's derivative) run as one-pass loops over float64 blocks instead
(:mod:`ember.ops.gamma_numba`): digamma's and trigamma's are these functions' twins (the same
steps, the same bits); lgamma's computes its own way (Stirling's series above 12.5, not
Lanczos'; the C library's lgamma at some points), to within a few ulps of these.

Special points follow PyTorch: ``lgamma`` is +inf at poles, ``digamma(±0) = ∓inf`` and NaN at
negative integers, ``polygamma(n >= 1)`` is ``(-1)^(n+1) inf`` at poles.
"""

from __future__ import annotations

import math

import numpy as np

from ember.backend import compiled
from ember.ops.erf_kernel import blockwise

_KERNELS = compiled.register("ember.ops.gamma_numba")
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# lgamma(2 + z) = (1 - euler_gamma) z + sum_{k >= 2} (-1)^k (zeta(k) - 1) z^k / k, k = 1..26
LGAMMA_AT_2 = (0.42278433509846713, 0.3224670334241132, -0.0673523010531981,
            0.020580808427784546, -0.007385551028673986, 0.0028905103307415234,
            -0.001192753911703261, 0.0005096695247430425, -0.00022315475845357939,
            9.945751278180853e-05, -4.492623673813314e-05, 2.050721277567069e-05,
            -9.439488275268397e-06, 4.374866789907488e-06, -2.039215753801366e-06,
            9.55141213040742e-07, -4.492469198764566e-07, 2.1207184805554665e-07,
            -1.0043224823968099e-07, 4.7698101693639804e-08, -2.2711094608943164e-08,
            1.0838659214896955e-08, -5.183475041970047e-09, 2.4836745438024785e-09,
            -1.1921401405860912e-09, 5.731367241678862e-10)
# B_2k for k = 1..10
BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)


def _sin_pi_abs(x: np.ndarray) -> np.ndarray:
    """``|sin(pi x)|`` with the argument reduced exactly first (large |x| keeps its digits)."""
    r = x - np.round(x)
    return np.abs(np.sin(np.pi * r))


def _lgamma_near_2(x: np.ndarray) -> np.ndarray:
    """lgamma for ``0.5 <= x < 12.5``: the series at 2 of ``z = x - 2 - m`` (exact, by
    Sterbenz), ``m = round(x) - 2`` steps of ``lgamma(x) = lgamma(x - 1) + log(x - 1)``."""
    m = np.floor(x + 0.5) - 2.0  # -1 .. 10
    z = x - (2.0 + m)
    series = np.zeros_like(z)
    for c in LGAMMA_AT_2[::-1]:
        series += c
        series *= z
    steps = np.where(m < 0, x, 1.0)  # lgamma(x) = lgamma(x + 1) - log(x) below 1.5
    for j in range(1, int(m.max(initial=0.0)) + 1):
        steps *= np.where(m >= j, x - j, 1.0)
    return series + np.sign(m + 0.5) * np.log(steps)


def _lanczos(x: np.ndarray) -> np.ndarray:
    """lgamma for ``x >= 0.5`` by Lanczos' approximation."""
    z = x - 1.0
    a = np.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + i)
    t = z + 7.5
    with np.errstate(over="ignore", invalid="ignore"):
        out = _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(a)
    return np.where(np.isinf(x), np.inf, out)


def _lgamma_pos(x: np.ndarray) -> np.ndarray:
    """lgamma for ``x >= 0.5``."""
    near = x < 12.5
    out = np.empty_like(x)
    out[near] = _lgamma_near_2(x[near])
    out[~near] = _lanczos(x[~near])
    return out


def _by_numba(name: str, x: np.ndarray) -> np.ndarray | None:
    """numba's float64 kernel ``name`` (:mod:`ember.ops.gamma_numba`) of ``x``, block by
    block over the cores; None where it does not run."""
    module = compiled.load(_KERNELS) if compiled.numba_enabled() else None
    return None if module is None else blockwise(np, getattr(module, name), x)


def lgamma_array(x: np.ndarray, narrow: bool = False) -> np.ndarray:
    """``log|Γ(x)|`` in float64; ``narrow``: for results rounded to float32 or narrower
    (numba's pass alone beside lgamma's minimum, see :func:`ember.ops.gamma_numba.lgamma64`)."""
    x = np.asarray(x, dtype=np.float64)
    fast = _by_numba("lgamma64_narrow" if narrow else "lgamma64", x)
    if fast is not None:
        return fast
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = x < 0.5
        out = _lgamma_pos(np.where(small, 1.0 - x, x))
        # sin(pi x) of a subnormal x keeps few digits; there it is pi x (to 1e-300)
        log_sin = np.where(np.abs(x) < 1e-150, math.log(math.pi) + np.log(np.abs(x)),
                           np.log(_sin_pi_abs(x)))
        refl = math.log(math.pi) - log_sin - out
        out = np.where(small, refl, out)
        pole = (x <= 0) & (x == np.floor(x))
        out = np.where(pole | np.isinf(x), np.inf, out)
    return out


def _cot_derivative_poly(n: int) -> np.ndarray:
    """Coefficients (lowest first) of ``P_n`` with ``d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x))``."""
    p = np.array([0.0, 1.0])  # P_0(c) = c
    for _ in range(n):
        dp = np.polynomial.polynomial.polyder(p)
        # P_{k+1}(c) = -(1 + c²) P_k'(c)
        p = -np.polynomial.polynomial.polymul([1.0, 0.0, 1.0], dp)
    return p


def polygamma_series(n: int) -> tuple[float, ...]:
    """The asymptotic series' coefficients ``B_2k (2k+n-1)! / (2k)!`` of ``psi⁽ⁿ⁾``, ``n >= 1``."""
    return tuple(b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
                 for k, b in enumerate(BERNOULLI, start=1))


def _polygamma_pos(n: int, x: np.ndarray) -> np.ndarray:
    """psi⁽ⁿ⁾(x) for ``x > 0`` (finite)."""
    target = 12.0 + n
    acc = np.zeros_like(x)
    sign_fact = (-1.0) ** (n + 1) * math.factorial(n)
    while True:
        low = x < target
        if not low.any():
            break
        with np.errstate(divide="ignore", over="ignore"):
            if n == 0:
                acc = np.where(low, acc - 1.0 / x, acc)
            else:
                acc = np.where(low, acc + sign_fact / x ** (n + 1), acc)
        x = np.where(low, x + 1.0, x)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        inv = 1.0 / x
        inv2 = inv * inv
        if n == 0:
            series = np.log(x) - 0.5 * inv
            power = inv2
            for k, b in enumerate(BERNOULLI, start=1):
                series = series - b / (2 * k) * power
                power = power * inv2
        else:
            # psi⁽ⁿ⁾(x) ~ (-1)^(n+1) [ (n-1)!/x^n + n!/(2 x^(n+1))
            #                           + sum_k B_2k (2k+n-1)!/((2k)! x^(2k+n)) ]
            xn = x ** -float(n)
            series = math.factorial(n - 1) * xn + math.factorial(n) * 0.5 * xn * inv
            power = xn * inv2
            for coef in polygamma_series(n):
                series = series + coef * power
                power = power * inv2
            series = (-1.0) ** (n + 1) * series
    return series + acc


def _horner(x: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """``sum c_k x^k`` from the top coefficient down: infinite at an infinite ``x`` (NumPy's
    ``polyval`` starts from ``c[-1] + x * 0``, NaN there: cot of a subnormal is infinite)."""
    acc = np.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        acc = acc * x + c
    return acc


def polygamma_array(n: int, x: np.ndarray) -> np.ndarray:
    """The ``n``-th derivative of the digamma function (``n = 0``: digamma), float64."""
    x = np.asarray(x, dtype=np.float64)
    fast = _by_numba(("digamma64", "trigamma64")[n], x) if n < 2 else None
    if fast is not None:
        return fast
    out = np.empty_like(x)
    finite = np.isfinite(x)
    pole = finite & (x <= 0) & (x == np.floor(x))
    pos = finite & (x > 0)
    neg = finite & (x < 0) & ~pole
    if pos.any():
        out[pos] = _polygamma_pos(n, x[pos])
    if neg.any():
        xn = x[neg]
        reflected = _polygamma_pos(n, 1.0 - xn)
        r = xn - np.round(xn)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            # cos(pi r) as sin(pi (1/2 - |r|)): exactly 0 at half-integers (cos(pi / 2) is
            # 6e-17, which psi⁽²⁾, psi⁽⁴⁾ amplified to 1e-12, 1e-7 relative there)
            c = np.sin(np.pi * (0.5 - np.abs(r))) / np.sin(np.pi * r)
            cot_term = _horner(c, _cot_derivative_poly(n))
            out[neg] = (-1.0) ** n * reflected - np.pi ** (n + 1) * cot_term
    if n == 0:
        out[pole] = np.where(x[pole] == 0, np.where(np.signbit(x[pole]), np.inf, -np.inf),
                             np.nan)
        out[x == np.inf] = np.inf
        out[x == -np.inf] = np.nan
    else:
        out[pole] = (-1.0) ** (n + 1) * np.inf
        out[x == np.inf] = 0.0 if n % 2 else np.nan  # PyTorch's values
        out[x == -np.inf] = np.nan
    out[np.isnan(x)] = np.nan
    return out
