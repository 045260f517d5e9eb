"""``where(condition, a, b)`` of float blocks as one-pass numba loops (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :func:`ember.ops.select.select_array`).

A select copies bits, so the values are NumPy's ``where``'s; the loop compiles to a blend
with no branch per element, where ``np.where`` mispredicts a random condition (512K float32:
~3 ms against ~0.1 ms). A number for ``a`` or ``b`` has a variant of its own.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS

_RO = (False, True)


def _block(t: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(t, 1, "C", readonly=readonly)


_FULL = [types.void(_block(types.boolean, c), _block(f, a), _block(f, b), _block(f))
         for f in FLOATS for c in _RO for a in _RO for b in _RO]
_NUMBER = [types.void(_block(types.boolean, c), _block(f, b), _block(f), f)
           for f in FLOATS for c in _RO for b in _RO]


@njit(_FULL)
def select(condition, a, b, out):
    """``a`` where ``condition``, else ``b``, into ``out``."""
    for i in range(out.size):
        out[i] = a[i] if condition[i] else b[i]


@njit(_NUMBER)
def select_number_first(condition, b, out, a):
    """``a`` (a number) where ``condition``, else ``b``, into ``out``."""
    for i in range(out.size):
        out[i] = a if condition[i] else b[i]


@njit(_NUMBER)
def select_number_second(condition, a, out, b):
    """``a`` where ``condition``, else ``b`` (a number), into ``out``."""
    for i in range(out.size):
        out[i] = a[i] if condition[i] else b
