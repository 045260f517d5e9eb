"""leaky_relu's, hardtanh's and the shrinks' gradients, and the shrinks themselves, as one-pass
numba loops over flat blocks (imported only when :func:`ember.backend.compiled.numba_enabled`;
chosen by :mod:`ember.ops.slope_grads` and :mod:`ember.ops.shrink`): the composite's compare,
product, select (or clip and difference) in one pass, the same values (each product, select
and difference rounded as NumPy's).
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _block(f: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(f, 1, "C", readonly=readonly)


_SIGNATURES = [types.void(_block(f, ro_v), _block(f, ro_x), _block(f), f, f)
               for f in FLOATS for ro_v in (False, True) for ro_x in (False, True)]


@njit(_SIGNATURES)
def leaky_relu_grad(v, x, out, slope, unused):
    """``v`` where ``x > 0``, else ``v · slope`` (NaN included)."""
    for i in range(v.size):
        out[i] = v[i] if x[i] > 0 else v[i] * slope


@njit(_SIGNATURES)
def hardtanh_grad(v, x, out, low, high):
    """``v`` where ``low < x < high``, else 0 (NaN included)."""
    zero = out.dtype.type(0)
    for i in range(v.size):  # (v read first and both tests taken, so that the choice is a
        vi, xi = v[i], x[i]  # select, not a branch: v is often out, whose loop cannot
        out[i] = vi if (low < xi) & (xi < high) else zero  # vectorize; 1M: 2.9 -> 0.6 ms)


@njit(_SIGNATURES)
def shrink_grad(v, x, out, lambd, unused):
    """``v`` where ``|x| > lambd`` (NaN included), else 0: both shrinks' backward, and
    hardshrink itself at ``v = x``."""
    zero = out.dtype.type(0)
    for i in range(v.size):
        vi, xi = v[i], x[i]
        out[i] = zero if abs(xi) <= lambd else vi


@njit(_SIGNATURES)
def softshrink(v, x, out, lambd, unused):
    """softshrink ``x - clip(x, -lambd, lambd)`` of ``x`` (``v`` unread; NaN kept)."""
    for i in range(x.size):
        xi = x[i]
        c = -lambd if xi < -lambd else xi
        c = lambd if c > lambd else c
        out[i] = xi - c
