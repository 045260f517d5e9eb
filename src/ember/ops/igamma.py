"""The regularized incomplete gamma functions: ``igamma(a, x) = P(a, x)`` (lower) and
``igammac(a, x) = Q(a, x) = 1 - P(a, x)`` (upper), also ``ember.special.gammainc`` /
``gammaincc`` in PyTorch.

Computed on the host in float64: the power series of ``P`` where ``x < a + 1`` and the
continued fraction of ``Q`` (modified Lentz) elsewhere, each converging in ``O(sqrt(a))``
terms, so the one that is not near 1 keeps its relative precision; ``Q`` for ``x <= 1.1``
and small ``a`` (where ``P`` is near 1) by its own series, as SciPy's ``igamc_series``.
For ``a > 1e5`` within 30% of ``x = a``, where those need far more terms and lose digits in
``x^a e^-x / Γ(a)``, Temme's uniform asymptotic expansion (DLMF 8.12) as PyTorch does.
The gradient in ``x`` is ``±x^(a-1) e^-x / Γ(a)``; as in PyTorch there is none in ``a``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentTypeError, DerivativeNotImplemented, DTypeError, type_name
from ember.ops.arithmetic import Binary
from ember.ops.broadcast import sum_to
from ember.ops.convert import promote
from ember.ops.erfc_kernel import erfc_array
from ember.ops.float_host import host_arrays
from ember.ops.forwarding import hand_over_tensor_like, hands_over
from ember.ops.gamma import lgamma
from ember.ops.gamma_kernel import lgamma_array
from ember.ops.inplace import bind_inplace
from ember.ops.primitive import apply, primitive
from ember.ops.unary import exp, log
from ember.ops.zeta import zeta_array
from ember.tensor import Tensor, method

__all__ = ["igamma", "igammac"]

_TERMS = 4000  # enough for a up to ~1e5 near x = a; the loops stop when all have converged
_EPS = 1e-16
_TINY = 1e-300
_EULER_GAMMA = 0.5772156649015329
# lgamma(1 + a) = -γ a + Σ_k (-1)^k ζ(k) / k a^k, k = 2..25: 1e-17 for |a| < 0.2
_LGAMMA1P_TAYLOR = tuple((-1) ** k * zeta_array(np.float64(k), np.float64(1.0)) / k
                         for k in range(2, 26))


def _lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``P(a, x) e^x x^-a Γ(a + 1)`` as ``sum x^n / ((a+1) … (a+n))`` (no ``1 / a``, which
    overflows for a subnormal ``a``)."""
    term = np.ones_like(a)
    total = term.copy()
    for n in range(1, _TERMS):
        term = term * x / (a + n)
        total += term
        if not np.any(np.abs(term) > _EPS * np.abs(total)):
            break
    return total


def _upper_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``Q(a, x) e^x x^-a Γ(a)`` by its continued fraction, evaluated with modified Lentz."""
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    for i in range(1, _TERMS):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        step = d * c
        h = h * step
        if not np.any(np.abs(step - 1.0) > _EPS):
            break
    return h


def _lgamma1p(a: np.ndarray) -> np.ndarray:
    """``lgamma(1 + a)``, to full relative precision near ``a = 0`` (its Taylor series)."""
    t = np.where(np.abs(a) < 0.2, a, 0.0)
    acc = np.zeros_like(t)
    for c in reversed(_LGAMMA1P_TAYLOR):
        acc = acc * t + c
    return np.where(np.abs(a) < 0.2, acc * t * t - _EULER_GAMMA * t, lgamma_array(1.0 + a))


def _upper_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``Q(a, x)`` for ``x <= 1.1`` as ``1 - x^a / Γ(a + 1) - x^a / Γ(a) Σ (-x)^n / (n! (a + n))``
    with the first part from ``expm1``: ``1 - P`` keeps no digits of a small ``Q`` (small ``a``)."""
    fac = np.ones_like(x)
    total = np.zeros_like(x)
    for n in range(1, _TERMS):
        fac = fac * -x / n
        term = fac / (a + n)
        total += term
        if not np.any(np.abs(term) > _EPS * np.abs(total)):
            break
    log_x = np.log(x)
    return -np.expm1(a * log_x - _lgamma1p(a)) - np.exp(a * log_x - lgamma_array(a)) * total


def _temme(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(P, Q)`` by Temme's expansion to ``a^-1`` (DLMF 8.12.3-9): ``Q = erfc(η sqrt(a/2)) / 2
    + R``, ``P = erfc(-η sqrt(a/2)) / 2 - R``, with ``η^2 / 2 = λ - 1 - log λ``, ``λ = x / a``;
    below ``|η| = 1e-3`` the coefficients by their Taylor series (the closed forms cancel)."""
    d = (x - a) / a  # λ - 1, exact where x is near a
    u = d / (2 + d)  # log1p(d) = 2 atanh(u), so d - log1p(d) = d u - 2 (u^3/3 + u^5/5 + ...)
    tail = np.zeros_like(u)
    for k in range(31, 1, -2):
        tail = tail * u * u + 1 / k
    eta = np.sign(d) * np.sqrt(2 * (d * u - 2 * u ** 3 * tail))
    small = np.abs(eta) < 1e-3
    e, dd = np.where(small, 1.0, eta), np.where(small, 1.0, d)
    c0 = np.where(small, -1 / 3 + eta * (1 / 12 + eta * (-2 / 135 + eta / 864)), 1 / dd - 1 / e)
    c1 = np.where(small, -1 / 540 - eta / 288,
                  1 / e ** 3 - 1 / dd ** 3 - 1 / dd ** 2 - 1 / (12 * dd))
    r = np.exp(-0.5 * a * eta * eta) / np.sqrt(2 * np.pi * a) * (c0 + c1 / a)
    z = eta * np.sqrt(a / 2)
    return 0.5 * erfc_array(np, -z) - r, 0.5 * erfc_array(np, z) + r


def _regularized(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """``P(a, x)`` (or ``Q`` when ``upper``) with PyTorch's values at the edges."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    inner = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    with np.errstate(all="ignore"):
        ai, xi = a[inner], x[inner]
        scale = np.exp(ai * np.log(xi) - xi - lgamma_array(ai))
        temme = (ai > 1e5) & (np.abs(xi - ai) < 0.3 * ai)
        series = (xi < ai + 1) & ~temme
        fraction = ~series & ~temme
        p, q = np.empty(ai.shape), np.empty(ai.shape)
        sa, sx = ai[series], xi[series]
        p[series] = np.exp(sa * np.log(sx) - sx - _lgamma1p(sa)) * _lower_series(sa, sx)
        q[series] = 1.0 - p[series]
        q[fraction] = scale[fraction] * _upper_fraction(ai[fraction], xi[fraction])
        p[fraction] = 1.0 - q[fraction]
        p[temme], q[temme] = _temme(ai[temme], xi[temme])
        mine = q if upper else p
        if upper:
            # SciPy's choice of where Q's own series beats 1 - P
            near = (xi <= 1.1) & (ai <= np.where(xi <= 0.5, -0.4 / np.log(xi), 1.1 * xi))
            mine[near] = _upper_series(ai[near], xi[near])
        out[inner] = mine
    one, zero = (0.0, 1.0) if upper else (1.0, 0.0)
    out[(a == 0) & (x > 0)] = one  # P(0, x) = 1
    out[(x == 0) & (a > 0)] = zero
    out[(np.isinf(x) & (x > 0)) & np.isfinite(a) & (a >= 0)] = one
    out[(np.isinf(a) & (a > 0)) & np.isfinite(x) & (x >= 0)] = zero
    return out


class _Incomplete(Binary):
    upper = False
    jvp_takes_none = True

    def forward(self, xp, a, x):
        return xp.asarray(_regularized(*host_arrays(xp, a, x), self.upper).astype(a.dtype))

    def _dx(self, a: Tensor, x: Tensor) -> Tensor:
        slope = exp((a - 1) * log(x) - x - lgamma(a))
        return -slope if self.upper else slope

    def _refuse(self, a: Tensor) -> DerivativeNotImplemented:
        return DerivativeNotImplemented(
            f"{self.name}: the derivative with respect to input (the shape a, "
            f"{tuple(a.shape)}) is not implemented, as in PyTorch. Hint: detach it; the "
            "derivative with respect to other (x) is implemented")

    def vjp(self, ctx, g):
        a, x = ctx.inputs
        if ctx.wants_grad(0):
            raise self._refuse(a)
        return None, sum_to(g * self._dx(a, x), x.shape)

    def jvp(self, ctx, da, dx):
        a, x = ctx.inputs
        if da is not None:
            raise self._refuse(a)
        return dx * self._dx(a, x)


@primitive
class IGamma(_Incomplete):
    name = "igamma"


@primitive
class IGammaC(_Incomplete):
    name = "igammac"
    upper = True


def _operands(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        hand_over_tensor_like(input, "input")  # (a nested tensor: hands_over hands it over)
        hand_over_tensor_like(other, "other")
        raise ArgumentTypeError(f"{op}: expected two tensors, got {type_name(input)} and "
                                f"{type_name(other)}")
    a, x = promote(input, other)
    if not a.dtype.is_floating_point:
        raise DTypeError(f"{op}: needs floating tensors, got {input.dtype.name} and "
                         f"{other.dtype.name}. Hint: convert with .float() first")
    return a, x


@method()
@hands_over
def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function ``P(input, other)``, with shape
    ``input`` (a) and point ``other`` (x): ``γ(a, x) / Γ(a)``.

    Example:
        >>> ember.igamma(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 1.0]))
        tensor([0.6321, 0.2642])
    """
    return apply(IGamma, *_operands("igamma", input, other))


@method()
@hands_over
def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P``.

    Example:
        >>> ember.igammac(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 1.0]))
        tensor([0.3679, 0.7358])
    """
    return apply(IGammaC, *_operands("igammac", input, other))


bind_inplace(igamma_=igamma, igammac_=igammac)
