"""hardsigmoid, hardswish and their gradients as one-pass numba loops over flat blocks
(imported only when :func:`ember.backend.compiled.numba_enabled`; chosen by
:mod:`ember.ops.hard_activations`).

Each step is NumPy's (``+ 3``, NaN-keeping max and min, ``*``, ``/ 6``), each rounded in the
arrays' dtype, so the values are the NumPy calls' (and PyTorch's) bit for bit; the NumPy calls
make a pass per step, and the gradients' masked copies (``copyto(where=)``) are branchy passes
of their own.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.hard_activations import SIXTH
from ember.ops.im2col_numba import FLOATS

# the digest of hard_activations.py, whose SIXTH the kernels below compile in: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "49c986a8f636d317"


def _block(f: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(f, 1, "C", readonly=readonly)


_SIXTH = float(SIXTH)  # (a compile-time constant)
_UNARY = [types.void(_block(f, ro), _block(f)) for f in FLOATS for ro in (False, True)]
_BINARY = [types.void(_block(f, ro_v), _block(f, ro_x), _block(f))
           for f in FLOATS for ro_v in (False, True) for ro_x in (False, True)]


@njit(_UNARY)
def hardsigmoid(a, out):
    """``min(max(a + 3, 0), 6) / 6`` of a block into ``out`` (NaN kept)."""
    zero, three, six = out.dtype.type(0), out.dtype.type(3), out.dtype.type(6)
    for i in range(a.size):
        t = a[i] + three
        t = t if t > zero or t != t else zero
        t = t if t < six or t != t else six
        out[i] = t / six


@njit(_UNARY)
def hardswish(a, out):
    """``a · min(max(a + 3, 0), 6) / 6`` of a block into ``out`` (NaN kept), PyTorch's
    order."""
    zero, three, six = out.dtype.type(0), out.dtype.type(3), out.dtype.type(6)
    for i in range(a.size):
        x = a[i]
        t = x + three
        t = t if t > zero or t != t else zero
        t = t if t < six or t != t else six
        out[i] = x * t / six


@njit(_BINARY)
def hardsigmoid_grad(v, x, out):
    """``v · SIXTH`` where ``-3 < x < 3``, else 0, into ``out``."""
    zero, three, sixth = out.dtype.type(0), out.dtype.type(3), out.dtype.type(_SIXTH)
    for i in range(v.size):
        out[i] = v[i] * sixth if -three < x[i] < three else zero


@njit(_BINARY)
def hardswish_grad(v, x, out):
    """``v · (x / 3 + 0.5)`` where ``-3 < x < 3``, 0 at and below -3, ``v`` at and above 3
    (NaN where ``x`` is NaN), into ``out``."""
    zero, half, three = out.dtype.type(0), out.dtype.type(0.5), out.dtype.type(3)
    for i in range(v.size):
        s = x[i]
        out[i] = zero if s <= -three else v[i] if s >= three else v[i] * (s / three + half)
