"""Evaluation-mode batch norm and its gradients as one-pass numba loops over (N, C, L)
C-ordered blocks (imported only when :func:`ember.backend.compiled.numba_enabled`; chosen by
:mod:`ember.ops.batch_norm_eval`).

Each step is the composite's (``x - mean``, ``· rstd``, ``· weight``, ``+ bias``; the
gradients ``(g · weight) · rstd`` and ``g · ((x - mean) · rstd)``), each rounded in the
arrays' dtype (no fused multiply-add), so the values are the composite's NumPy calls' bit for
bit in one pass instead of one per step.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS

_RO = (False, True)


def _planes(f: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(f, 3, "C", readonly=readonly)


def _vector(f: types.Type) -> types.Array:
    return types.Array(f, 1, "C")


_FORWARD = [types.void(_planes(f, ro), _planes(f), *[_vector(f)] * 4)
            for f in FLOATS for ro in _RO]
_INPUT_GRAD = [types.void(_planes(f, ro), _planes(f), _vector(f), _vector(f))
               for f in FLOATS for ro in _RO]
_PRODUCT = [types.void(_planes(f, ro_g), _planes(f, ro_x), _planes(f), _vector(f), _vector(f))
            for f in FLOATS for ro_g in _RO for ro_x in _RO]


@njit(_FORWARD)
def forward(x, out, mean, rstd, weight, bias):
    """``((x - mean) · rstd) · weight + bias`` per channel (the middle axis) into ``out``."""
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            m, s, w, b = mean[c], rstd[c], weight[c], bias[c]
            for i in range(x.shape[2]):
                out[n, c, i] = ((x[n, c, i] - m) * s) * w + b


@njit(_INPUT_GRAD)
def input_grad(g, out, weight, rstd):
    """``(g · weight) · rstd`` per channel into ``out``."""
    for n in range(g.shape[0]):
        for c in range(g.shape[1]):
            w, s = weight[c], rstd[c]
            for i in range(g.shape[2]):
                out[n, c, i] = (g[n, c, i] * w) * s


@njit(_PRODUCT)
def normalized_product(g, x, out, mean, rstd):
    """``g · ((x - mean) · rstd)`` per channel into ``out`` (summed for the weight's
    gradient)."""
    for n in range(g.shape[0]):
        for c in range(g.shape[1]):
            m, s = mean[c], rstd[c]
            for i in range(g.shape[2]):
                out[n, c, i] = g[n, c, i] * ((x[n, c, i] - m) * s)
