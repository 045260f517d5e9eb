"""The orthogonal polynomials' three-term recurrence as one numba loop (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.orthogonal_polynomials`
for up to a few thousand elements). Its NumPy twin takes ~12 µs a degree, 2 minutes for
``laguerre_polynomial_l(x, 10**7)``, where this loop takes ~20 ns a degree for a few elements,
as PyTorch's. Each step is the twin's expression in its order, so the bits are the same.
"""

from __future__ import annotations

import numpy as np

from ember.backend.compiled import njit

# the families, numbered as in orthogonal_polynomials.FAMILY_CODES
_T, _U, _V, _W, _HERMITE_H, _HERMITE_HE, _LAGUERRE, _LEGENDRE = range(8)


@njit("float64(int64, float64)")
def _first(family, y):
    """``P_1(y)``."""
    if family == _U or family == _HERMITE_H:
        return 2 * y
    if family == _V:
        return 2 * y - 1
    if family == _W:
        return 2 * y + 1
    if family == _LAGUERRE:
        return 1 - y
    return y


@njit("float64(int64, int64, float64, float64, float64)")
def _step(family, k, y, p, q):
    """``P_k(y)`` from ``p = P_(k-2)(y)`` and ``q = P_(k-1)(y)``."""
    if family == _HERMITE_H:
        return 2 * y * q - 2 * (k - 1) * p
    if family == _HERMITE_HE:
        return y * q - (k - 1) * p
    if family == _LAGUERRE:
        return ((2 * k - 1 - y) * q - (k - 1) * p) / k
    if family == _LEGENDRE:
        return ((2 * k - 1) * y * q - (k - 1) * p) / k
    return 2 * y * q - p


@njit("void(int64, float64[::1], int64[::1], float64[::1])")
def recurrence(family, y, n, out):
    """``out[i] = P_n[i](y[i])`` for degrees ``n >= 2`` sorted ascending: one degree a pass
    over the elements still below their own degree (a suffix), as the twin steps."""
    size = y.size
    p = np.ones(size)
    q = np.empty(size)
    for i in range(size):
        q[i] = _first(family, y[i])
    start, k = 0, 1  # q is P_k, p is P_(k-1)
    while start < size:
        while start < size and n[start] <= k:
            out[start] = q[start]
            start += 1
        k += 1
        for i in range(start, size):
            p[i], q[i] = q[i], _step(family, k, y[i], p[i], q[i])
