"""The Hurwitz zeta function ``zeta(x, q) = sum_{k>=0} (k + q)^-x`` (``torch.special.zeta``).

Computed on the host in float64 by Euler-Maclaurin summation: at least 10 terms directly,
until ``w = q + N >= 10``, then the tail ``w^(1-x)/(x-1) + w^-x/2 + sum_j B_2j/(2j)!
x(x+1)…(x+2j-2) w^(-x-2j+1)`` (about 1e-16 relative). The domain is PyTorch's: ``inf`` at
``x = 1`` and at the poles ``q = 0, -1, -2, …``; NaN for ``x < 1``, and for ``q < 0`` unless
``x`` is an integer (``(k + q)^-x`` is real only then). There the ``n = -floor(q)`` terms
below 0 are ``(-1)^x (zeta(x, f) - zeta(x, f + n))`` with ``f = -(q + n - 1)``, so a very negative
``q`` costs no more than another (PyTorch sums them one by one). As in PyTorch, the gradient in
``q`` is ``-x zeta(x + 1, q)`` and there is none in ``x``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.errors import ArgumentTypeError, DerivativeNotImplemented, type_name
from ember.ops.arithmetic import Binary
from ember.ops.broadcast import sum_to
from ember.ops.float_host import float_operands, host_arrays
from ember.ops.gamma_kernel import BERNOULLI
from ember.ops.primitive import apply, primitive
from ember.tensor import Tensor

__all__ = ["zeta"]

_SHIFT = 10.0  # sum directly until q + N >= 10 (and N >= 10)


def _tail(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_{k>=0} (w + k)^-x`` for ``w >= 10`` by the Euler-Maclaurin formula."""
    power = w ** -x
    out = w * power / (x - 1) + 0.5 * power
    rising = x.copy()  # x (x+1) … (x+2j-2)
    power = power / w
    for j, b in enumerate(BERNOULLI, start=1):
        out = out + b / math.factorial(2 * j) * rising * power
        rising = rising * (x + 2 * j - 1) * (x + 2 * j)
        power = power / (w * w)
    return out


def _direct_sum(x: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sum_{k<N} (q + k)^-x`` and ``w = q + N``, with ``N`` the least count ``>= 10`` that
    makes ``w >= 10``. Sorted by ``N``, the elements still summing are a suffix, so the cost
    is the sum of the counts (PyTorch's per-element loop), not the largest one times the
    size."""
    counts = np.maximum(_SHIFT, np.ceil(_SHIFT - q)).astype(np.int64)
    order = np.argsort(counts, kind="stable")
    x, q, counts = x[order], q[order], counts[order]
    total = np.zeros_like(q)
    for k in range(int(counts[-1]) if counts.size else 0):
        start = np.searchsorted(counts, k, side="right")  # those with N <= k are done
        total[start:] += (q[start:] + k) ** -x[start:]
    unsorted = np.empty_like(order)
    unsorted[order] = np.arange(order.size)
    return total[unsorted], (q + counts)[unsorted]


def zeta_array(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``zeta(x, q)`` of two float64 arrays (broadcast), with PyTorch's edge values."""
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    out = np.full(x.shape, np.nan)
    integer_x = x == np.floor(x)
    pole = (q <= 0) & (q == np.floor(q))
    inner = np.isfinite(x) & np.isfinite(q) & (x > 1) & ~pole & ((q > 0) | integer_x)
    with np.errstate(all="ignore"):
        xi, qi = x[inner], q[inner]
        neg = qi < 0
        r = qi - np.floor(qi)  # q + n in (0, 1), n = -floor(q) terms below 0 where q < 0
        values = _positive(xi, np.where(neg, r, qi))
        if neg.any():  # those n terms are (-(f + m))^-x, m < n, f = 1 - r: two zetas (O(1))
            xn, n = xi[neg], -np.floor(qi[neg])
            f = -(qi[neg] + (n - 1))  # exact (1 - r loses q's low bits where r = q + 1 rounds)
            at_r, at_f, at_fn = values[neg], _positive(xn, f), _positive(xn, f + n)
            # odd x: the terms at r + m and -(f + m) cancel first (exactly where r = f = 1/2)
            values[neg] = np.where(xn % 2 == 1, (at_r - at_f) + at_fn, (at_r + at_f) - at_fn)
        out[inner] = values
    out[pole & ~(x < 1)] = np.inf  # PyTorch's order: x = 1, then x < 1, then the poles
    out[x == 1] = np.inf
    at_inf = x == np.inf
    out[at_inf & (q < 1) & ~pole] = np.inf  # a term (q + k)^-inf with |q + k| < 1
    out[at_inf & (q == 1)] = 1.0
    return out


def _positive(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``zeta(x, q)`` for finite ``x > 1`` and ``q > 0``."""
    total, a = _direct_sum(x, q)
    tail = _tail(x, a)
    negligible = a ** -x <= 1e-18 * np.abs(total)  # also where the tail overflows
    return total + np.where(negligible, 0.0, tail)


@primitive
class Zeta(Binary):
    """``zeta(x, q)``; differentiable in ``q`` only, as in PyTorch."""

    name = "zeta"
    jvp_takes_none = True

    def forward(self, xp, x, q):
        return xp.asarray(zeta_array(*host_arrays(xp, x, q)).astype(x.dtype, copy=False))

    def _dq(self, x: Tensor, q: Tensor) -> Tensor:
        return -x * apply(Zeta, x + 1, q)

    def _refuse(self, x: Tensor) -> DerivativeNotImplemented:
        return DerivativeNotImplemented(
            f"zeta: the derivative with respect to input (the exponent x, {tuple(x.shape)}) is "
            "not implemented, as in PyTorch. Hint: detach it; the derivative in other (q) is")

    def vjp(self, ctx, g):
        x, q = ctx.inputs
        if ctx.wants_grad(0):
            raise self._refuse(x)
        return None, sum_to(g * self._dq(x, q), q.shape)

    def jvp(self, ctx, dx, dq):
        x, q = ctx.inputs
        if dx is not None:
            raise self._refuse(x)
        return dq * self._dq(x, q)


def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function ``sum_{k>=0} (k + other)^-input``; either argument may be a
    number. Integer inputs give the default float dtype.

    Example:
        >>> ember.special.zeta(ember.tensor([2.0, 4.0]), 1.0)
        tensor([1.6449, 1.0823])
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise ArgumentTypeError(f"zeta: expected at least one tensor, got {type_name(input)} and "
                                f"{type_name(other)}")
    return apply(Zeta, *float_operands("zeta", input, other))
