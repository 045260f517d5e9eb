"""The adjoint of ``resample`` in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.interpolate`): each
output position's gradient times its taps' weights added into their sources, in one pass,
where NumPy multiplies the whole gradient per tap and sums its runs with ``add.reduceat``
(~10x slower along the last axis, whose runs are a pixel or two long)."""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _signatures() -> list:
    return [types.void(types.Array(f, 3, "C", readonly=ro), types.Array(f, 3, "C"),
                       types.Array(types.int64, 2, "C"), types.Array(f, 2, "C"))
            for f in FLOATS for ro in (False, True)]


@njit(_signatures())
def resample_transpose(g, out, index, weight):
    """``out[a, index[t, o], b] += weight[t, o] * g[a, o, b]`` for every tap ``t``, output
    position ``o`` (in order) and leading/trailing positions ``a``, ``b``; ``out`` zeroed."""
    for a in range(g.shape[0]):
        for o in range(g.shape[1]):
            for t in range(index.shape[0]):
                s, w = index[t, o], weight[t, o]
                for b in range(g.shape[2]):
                    out[a, s, b] += w * g[a, o, b]
