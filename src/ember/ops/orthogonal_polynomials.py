"""Classical orthogonal polynomials ``P_n(x)`` of ``torch.special``: Chebyshev (``T``, ``U``,
``V``, ``W`` and their shifted forms on ``[0, 1]``), Hermite (physicists' ``H``,
probabilists' ``He``), Laguerre ``L`` and Legendre ``P``.

``n`` is a tensor or a number, broadcast against ``x``; as in PyTorch it is truncated toward
zero to an integer, and a negative (or non-finite) ``n`` gives 0. Values come from the
three-term recurrence in float64, except where PyTorch uses closed forms: at the endpoints
``y = ±1`` of the Chebyshev polynomials (``y = x``, or ``2x - 1`` when shifted) and of
Legendre's, and inside ``(-1, 1)`` above PyTorch's degree thresholds (``_TRIG_ABOVE``) the
Chebyshev trigonometric forms (``T_n = cos(n θ)``, ``U_n = sin((n+1) θ) / sin θ``,
``V_n = cos((n+½) θ) / cos(θ/2)``, ``W_n = sin((n+½) θ) / sin(θ/2)``, ``y = cos θ``), which
also keep a large ``n`` cheap there. As in PyTorch, the Hermite polynomials are NaN above
degree 128 for float32 inputs and 512 for float64 (1024 for the half types), and the
recurrence gives NaN at ``±inf`` from degree 3 on (``inf - inf``). A NaN ``x`` gives NaN
(PyTorch's CPU loop returns an unset value there for some degrees).

PyTorch defines no derivative for these functions: their outputs never require grad.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.backend import compiled
from ember.errors import ArgumentTypeError
from ember.ops.arithmetic import Binary
from ember.ops.broadcast import broadcast_spec
from ember.ops.float_host import float_operands, host_arrays
from ember.ops.primitive import apply, primitive
from ember.tensor import Tensor

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]


def _chebyshev_step(k, y, p, q):
    return 2 * y * q - p


# family: (degree-1 polynomial, the recurrence P_k from P_{k-2} = p and P_{k-1} = q)
_FAMILIES = {
    "t": (lambda y: y, _chebyshev_step),
    "u": (lambda y: 2 * y, _chebyshev_step),
    "v": (lambda y: 2 * y - 1, _chebyshev_step),
    "w": (lambda y: 2 * y + 1, _chebyshev_step),
    "hermite_h": (lambda y: 2 * y, lambda k, y, p, q: 2 * y * q - 2 * (k - 1) * p),
    "hermite_he": (lambda y: y, lambda k, y, p, q: y * q - (k - 1) * p),
    "laguerre": (lambda y: 1 - y, lambda k, y, p, q: ((2 * k - 1 - y) * q - (k - 1) * p) / k),
    "legendre": (lambda y: y, lambda k, y, p, q: ((2 * k - 1) * y * q - (k - 1) * p) / k),
}
FAMILY_CODES = {family: code for code, family in enumerate(_FAMILIES)}  # numba's numbering
_CHEBYSHEV = ("t", "u", "v", "w")
# the trigonometric forms are used above these degrees (PyTorch's choice, kind by kind)
_TRIG_ABOVE = {"t": 6, "u": 8, "v": 8, "w": 8,
               "shifted_t": 6, "shifted_u": 6, "shifted_v": 6, "shifted_w": 4}
_KERNELS = compiled.register("ember.ops.orthogonal_numba")
_HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}  # others: 1024


def _chebyshev_trig(kind: str, y: np.ndarray, n: np.ndarray) -> np.ndarray:
    theta = np.arccos(y)
    if kind == "t":
        return np.cos(n * theta)
    if kind == "u":
        return np.sin((n + 1) * theta) / np.sin(theta)
    if kind == "v":
        return np.cos((n + 0.5) * theta) / np.cos(theta / 2)
    return np.sin((n + 0.5) * theta) / np.sin(theta / 2)


def _endpoint(kind: str, y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The value at ``y = ±1``: Chebyshev's ``(±1)^n`` times 1, ``n + 1`` or ``2n + 1``, and
    Legendre's ``(±1)^n``."""
    sign = np.where((y < 0) & (n % 2 == 1), -1.0, 1.0)
    scale = {"u": n + 1.0, "v": np.where(y > 0, 1.0, 2.0 * n + 1),
             "w": np.where(y > 0, 2.0 * n + 1, 1.0)}.get(kind, 1.0)
    return sign * scale


def _degree(n: np.ndarray) -> np.ndarray:
    """PyTorch's ``int64_t(n)``: truncation toward zero; NaN, ±inf and out-of-range are
    negative (the conversion gives INT64_MIN)."""
    n = np.asarray(n, dtype=np.float64)
    valid = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
    return np.where(valid, np.trunc(np.where(valid, n, -1.0)), -1.0).astype(np.int64)


def polynomial_array(kind: str, x: np.ndarray, n: np.ndarray,
                     dtype: Any = np.float64) -> np.ndarray:
    """``P_n(x)`` of the family ``kind`` (a key of ``_FAMILIES``, ``shifted_`` allowed), for
    inputs of ``dtype`` (which sets the Hermite degree limit)."""
    shifted = kind.startswith("shifted_")
    family = kind.removeprefix("shifted_")
    first = _FAMILIES[family][0]
    x, n = np.broadcast_arrays(np.asarray(x, np.float64), _degree(n))
    y = 2 * x - 1 if shifted else x
    out = np.ones(x.shape)
    with np.errstate(all="ignore"):
        out = np.where(n == 1, first(y), out)
        done = n <= 1
        if family in _CHEBYSHEV or family == "legendre":
            end = ~done & (np.abs(y) == 1)
            out = np.where(end, _endpoint(family, y, n), out)
            done |= end
        if family in _CHEBYSHEV:
            trig = ~done & (n > _TRIG_ABOVE[kind]) & (np.abs(y) < 1)
            out[trig] = _chebyshev_trig(family, y[trig], n[trig])
            done |= trig
        if family.startswith("hermite"):
            beyond = ~done & (n > _HERMITE_LIMIT.get(np.dtype(dtype), 1024))
            out = np.where(beyond, np.nan, out)
            done |= beyond
        rest = ~done
        if rest.any():
            out[rest] = _recurrence(family, y[rest], n[rest])
    return np.where(n < 0, 0.0, out)


_KERNEL_UP_TO = 4096  # elements: numba's loop below, NumPy's steps above (as fast there)
_NAN_CHECK_EVERY = 64  # steps between drops of the elements whose recurrence has become NaN


def _recurrence(family: str, y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``P_n(y)`` for degrees ``n >= 2`` by the three-term recurrence: numba's loop
    (:mod:`ember.ops.orthogonal_numba`) for up to ``_KERNEL_UP_TO`` elements, else its NumPy
    twin here, where elements leave as they reach their own degree (sorted by it, the live ones
    are a suffix) or turn NaN (which the recurrence keeps), so the steps are as many as the
    largest degree, not it times the count. A NumPy step costs ~12 µs, a few elements' worth
    of numba's (~4 ns an element, not vectorized): beyond the gate NumPy's is as fast."""
    order = np.argsort(n, kind="stable")
    few = y.size <= _KERNEL_UP_TO
    module = compiled.load(_KERNELS) if few and compiled.numba_enabled() else None
    if module is not None:
        out, sorted_out = np.empty_like(y), np.empty_like(y)
        module.recurrence(FAMILY_CODES[family], y[order], n[order], sorted_out)
        out[order] = sorted_out
        return out
    first, step = _FAMILIES[family]
    y, n, where = y[order], n[order], order
    out = np.empty_like(y)
    p, q = np.ones_like(y), first(y)
    k = 1  # q is P_k, p is P_(k-1)
    while y.size:
        done = np.searchsorted(n, k, side="right")  # degree k reached
        out[where[:done]] = q[:done]
        y, n, where, p, q = y[done:], n[done:], where[done:], p[done:], q[done:]
        if k % _NAN_CHECK_EVERY == 0:
            live = ~np.isnan(q)
            if not live.all():
                out[where[~live]] = np.nan
                y, n, where, p, q = y[live], n[live], where[live], p[live], q[live]
        k += 1
        p, q = q, step(k, y, p, q)
    return out


@primitive
class OrthogonalPolynomial(Binary):
    """``P_n(x)`` of one family (``kind``); not differentiable, as in PyTorch."""

    name = "orthogonal_polynomial"
    differentiable = False

    def infer(self, x, n, *, kind):
        return broadcast_spec(x, n, op=_op_name(kind))

    def flops(self, x, n, *, kind):
        return math.prod(self.infer(x, n, kind=kind).shape)

    def forward(self, xp, x, n, *, kind):
        host = host_arrays(xp, x, n)
        out = polynomial_array(kind, *host, dtype=host[0].dtype)
        return xp.asarray(out.astype(x.dtype, copy=False))


def _op_name(kind: str) -> str:
    """The public name of the family ``kind``, e.g. ``shifted_chebyshev_polynomial_t``."""
    family = kind.removeprefix("shifted_")
    name = {"hermite_h": "hermite_polynomial_h", "hermite_he": "hermite_polynomial_he",
            "laguerre": "laguerre_polynomial_l", "legendre": "legendre_polynomial_p"}.get(
        family, f"chebyshev_polynomial_{family}")
    return name if kind == family else f"shifted_{name}"


def _polynomial(kind: str, x: Any, n: Any) -> Tensor:
    if not isinstance(x, Tensor) and not isinstance(n, Tensor):
        raise ArgumentTypeError(f"{_op_name(kind)}: expected x or n to be a tensor, got "
                                f"{type(x).__name__} and {type(n).__name__}")
    return apply(OrthogonalPolynomial, *float_operands(_op_name(kind), x, n), kind=kind)


def chebyshev_polynomial_t(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the first kind ``T_n(x)``.

    Example:
        >>> ember.special.chebyshev_polynomial_t(ember.tensor([0.5, 2.0]), 3)
        tensor([-1., 26.])
    """
    return _polynomial("t", x, n)


def chebyshev_polynomial_u(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the second kind ``U_n(x)``.

    Example:
        >>> ember.special.chebyshev_polynomial_u(ember.tensor([0.5, 2.0]), 3)
        tensor([-1., 56.])
    """
    return _polynomial("u", x, n)


def chebyshev_polynomial_v(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the third kind ``V_n(x)``.

    Example:
        >>> ember.special.chebyshev_polynomial_v(ember.tensor([0.5, 2.0]), 3)
        tensor([-1., 41.])
    """
    return _polynomial("v", x, n)


def chebyshev_polynomial_w(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the fourth kind ``W_n(x)``.

    Example:
        >>> ember.special.chebyshev_polynomial_w(ember.tensor([0.5, 2.0]), 3)
        tensor([-1., 71.])
    """
    return _polynomial("w", x, n)


def shifted_chebyshev_polynomial_t(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the first kind ``T_n(2 x - 1)``.

    Example:
        >>> ember.special.shifted_chebyshev_polynomial_t(ember.tensor([0.75, 1.5]), 3)
        tensor([-1., 26.])
    """
    return _polynomial("shifted_t", x, n)


def shifted_chebyshev_polynomial_u(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the second kind ``U_n(2 x - 1)``.

    Example:
        >>> ember.special.shifted_chebyshev_polynomial_u(ember.tensor([0.75, 1.5]), 3)
        tensor([-1., 56.])
    """
    return _polynomial("shifted_u", x, n)


def shifted_chebyshev_polynomial_v(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the third kind ``V_n(2 x - 1)``.

    Example:
        >>> ember.special.shifted_chebyshev_polynomial_v(ember.tensor([0.75, 1.5]), 3)
        tensor([-1., 41.])
    """
    return _polynomial("shifted_v", x, n)


def shifted_chebyshev_polynomial_w(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the fourth kind ``W_n(2 x - 1)``.

    Example:
        >>> ember.special.shifted_chebyshev_polynomial_w(ember.tensor([0.75, 1.5]), 3)
        tensor([-1., 71.])
    """
    return _polynomial("shifted_w", x, n)


def hermite_polynomial_h(x: Any, n: Any) -> Tensor:
    """The physicists' Hermite polynomial ``H_n(x)``.

    Example:
        >>> ember.special.hermite_polynomial_h(ember.tensor([0.5, 2.0]), 3)
        tensor([-5., 40.])
    """
    return _polynomial("hermite_h", x, n)


def hermite_polynomial_he(x: Any, n: Any) -> Tensor:
    """The probabilists' Hermite polynomial ``He_n(x)``.

    Example:
        >>> ember.special.hermite_polynomial_he(ember.tensor([0.5, 2.0]), 3)
        tensor([-1.3750,  2.0000])
    """
    return _polynomial("hermite_he", x, n)


def laguerre_polynomial_l(x: Any, n: Any) -> Tensor:
    """The Laguerre polynomial ``L_n(x)``.

    Example:
        >>> ember.special.laguerre_polynomial_l(ember.tensor([0.5, 2.0]), 3)
        tensor([-0.1458, -0.3333])
    """
    return _polynomial("laguerre", x, n)


def legendre_polynomial_p(x: Any, n: Any) -> Tensor:
    """The Legendre polynomial ``P_n(x)``.

    Example:
        >>> ember.special.legendre_polynomial_p(ember.tensor([0.5, 2.0]), 3)
        tensor([-0.4375, 17.0000])
    """
    return _polynomial("legendre", x, n)
