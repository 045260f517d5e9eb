"""relu and its gradient as one-pass numba loops over flat blocks (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.relu_kernel`).

NumPy's ``maximum(x, 0)`` runs ~4× slower than an add (its NaN-propagating loop), and the
gradient's mask, finiteness check and product are three passes; these are one each, the same
values (a NaN stays NaN, -0.0 becomes 0 as NumPy's ``maximum`` gives).
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _block(f: types.Type, readonly: bool) -> types.Array:
    return types.Array(f, 1, "C", readonly=readonly)


_RELU = [types.void(_block(f, ro), _block(f, False)) for f in FLOATS for ro in (False, True)]
_RELU_GRAD = [types.void(_block(f, ro_v), _block(f, ro_y), _block(f, False))
              for f in FLOATS for ro_v in (False, True) for ro_y in (False, True)]


@njit(_RELU)
def relu(a, out):
    """``max(a, 0)`` of a block into ``out`` (may be ``a``), NaN kept."""
    zero = out.dtype.type(0)
    for i in range(a.size):
        x = a[i]
        out[i] = x if x > zero or x != x else zero


@njit(_RELU_GRAD)
def relu_grad(v, y, out):
    """``v``, or 0 where ``y`` ≤ 0 (a NaN of ``v`` there too), into ``out``."""
    zero = out.dtype.type(0)
    for i in range(v.size):
        out[i] = zero if y[i] <= zero else v[i]
