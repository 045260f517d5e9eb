"""elu's gradient as one-pass numba loops over flat blocks (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.elu_grad`). Each step
is the composite's, rounded in the arrays' dtype (no fused multiply-add), so the values are
its NumPy calls' bit for bit: one pass where they took five or six; except float32's exp
from the input, :func:`ember.ops.erf_numba.exp_nonpositive` in the pass (within 1.03 ulps,
NumPy's float32 exp 2.52: the two differ in the last bits).
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.erf_numba import exp_nonpositive
from ember.ops.im2col_numba import FLOATS

# the digest of erf_numba.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "6e22ae114aae4d87"


def _block(f: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(f, 1, "C", readonly=readonly)


_SIGNATURES = [types.void(_block(f, ro_v), _block(f, ro_y), _block(f), f, f, f)
               for f in FLOATS for ro_v in (False, True) for ro_y in (False, True)]


@njit(_SIGNATURES)
def elu_grad(v, y, out, alpha_scale, input_scale, scale):
    """``v · ((y + alpha_scale) · input_scale)`` where ``y <= 0``, else ``v · scale``."""
    zero = out.dtype.type(0)
    for i in range(v.size):
        t = y[i]
        out[i] = v[i] * ((t + alpha_scale) * input_scale) if t <= zero else v[i] * scale


_F32 = types.float32
_FROM_INPUT = [types.void(_block(_F32, ro_v), _block(_F32, ro_x), _block(_F32), _F32, _F32, _F32)
               for ro_v in (False, True) for ro_x in (False, True)]


@njit(_FROM_INPUT)
def elu_grad_from_input(v, x, out, slope, input_scale, scale):
    """Float32 ``v · (exp(min(x · input_scale, 0)) · slope)`` where ``x <= 0``, else
    ``v · scale`` (``input_scale`` ≥ 0: the exp is of a number ≤ 0, never an overflow)."""
    zero = out.dtype.type(0)
    for i in range(v.size):
        t = x[i]
        e = exp_nonpositive(min(t * input_scale, zero))
        out[i] = v[i] * (e * slope) if t <= zero else v[i] * scale


_FROM_EXP = [types.void(_block(f, ro_v), _block(f, ro_x), _block(f), _block(f), f, f)
             for f in FLOATS for ro_v in (False, True) for ro_x in (False, True)]


@njit(_FROM_EXP)
def elu_grad_from_exp(v, x, e, out, slope, scale):
    """``v · (e · slope)`` where ``x <= 0`` (``e`` is NumPy's ``exp(x · input_scale)``), else
    ``v · scale``."""
    zero = out.dtype.type(0)
    for i in range(v.size):
        out[i] = v[i] * (e[i] * slope) if x[i] <= zero else v[i] * scale
