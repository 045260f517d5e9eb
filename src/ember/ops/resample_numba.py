"""The adjoint of ``resample`` and the uint8 resampling in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.interpolate`). The
adjoint adds each output position's gradient times its taps' weights into their sources, in
one pass, where NumPy multiplies the whole gradient per tap and sums its runs with
``add.reduceat`` (~10x slower along the last axis, whose runs are a pixel or two long). The
uint8 pass sums each output's taps in int32 in one pass, where NumPy gathers, widens and
multiplies the whole image per tap."""

from __future__ import annotations

import numpy as np
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


def _uint8_signatures() -> list:
    return [types.void(types.Array(types.uint8, 3, "C", readonly=ro),
                       types.Array(types.uint8, 3, "C"), types.Array(types.int64, 1, "C"),
                       types.Array(types.int32, 2, "C"), types.int64)
            for ro in (False, True)]


@njit(_uint8_signatures())
def resample_uint8(x, out, first, weights, precision):
    """``out[a, o, b] = clip((Σ_t weights[o, t] · x[a, min(first[o] + t, size - 1), b] +
    half) >> precision, 0, 255)`` in int32 (PyTorch's fixed-point uint8 resampling)."""
    size, inner = x.shape[1], x.shape[2]
    half = np.int32(1 << (precision - 1))
    acc = np.empty(inner, np.int32)
    for a in range(x.shape[0]):
        for o in range(out.shape[1]):
            acc[:] = half
            for t in range(weights.shape[1]):
                w = weights[o, t]
                if w != 0:
                    s = min(first[o] + t, size - 1)
                    for b in range(inner):
                        acc[b] += w * np.int32(x[a, s, b])
            for b in range(inner):
                v = acc[b] >> precision
                out[a, o, b] = 0 if v < 0 else (255 if v > 255 else v)
