"""Batch norm's input gradient ``g·k + (x - mean)·c1 - c2`` (per-channel ``mean``, ``k``,
``c1``, ``c2``) as one-pass numba loops (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.batch_norm_grad`).
Each step is rounded in the arrays' dtype in the order of NumPy's five calls, so the values
are theirs bit for bit."""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _signatures(ndim: int) -> list:
    def block(f: types.Type, readonly: bool = False) -> types.Array:
        return types.Array(f, ndim, "C", readonly=readonly)
    vector = [types.Array(f, 1, "C") for f in FLOATS]
    return [types.void(block(f, ro_g), block(f, ro_x), block(f), v, v, v, v)
            for f, v in zip(FLOATS, vector) for ro_g in (False, True) for ro_x in (False, True)]


@njit(_signatures(2))
def channels_inner(g, x, out, mean, k, c1, c2):
    """(rows, C) blocks: element j of a row is channel j (channels-last, or (N, C))."""
    for r in range(g.shape[0]):
        for j in range(g.shape[1]):
            out[r, j] = (g[r, j] * k[j] + (x[r, j] - mean[j]) * c1[j]) - c2[j]


@njit(_signatures(3))
def channel_planes(g, x, out, mean, k, c1, c2):
    """(N, C, ∏spatial) blocks in C order: plane (n, c) is channel c."""
    for n in range(g.shape[0]):
        for c in range(g.shape[1]):
            kc, m, a, b = k[c], mean[c], c1[c], c2[c]
            for j in range(g.shape[2]):
                out[n, c, j] = (g[n, c, j] * kc + (x[n, c, j] - m) * a) - b
