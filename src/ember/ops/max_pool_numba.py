"""2-D max pooling's two loops in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`): a window's maximum and which element holds it,
and the scatter of gradients back to those elements.

Arrays are channels-last, (B, H, W, C), C-contiguous, so the innermost loop runs over the
channels and vectorizes. ``geometry`` is (kh, kw, sh, sw, dh, dw, ph, pw): kernel, stride,
dilation and low padding. A window's elements in the padding are not read (its first
element inside the input starts it, so a window of -inf names that one, as PyTorch's does).
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS, GEOMETRY, element

# the digest of im2col_numba.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "d29d351d30a24e38"


def _array(dtype: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(dtype, 4, "C", readonly=readonly)


_MAX_SIGNATURES = [types.void(_array(f, ro), _array(f), _array(types.int8), GEOMETRY)
                   for f in FLOATS for ro in (False, True)]
_VALUES_SIGNATURES = [types.void(_array(f, ro), _array(f), GEOMETRY)
                      for f in FLOATS for ro in (False, True)]
_WINDOW = (types.int64, types.int64, types.int64, GEOMETRY)  # (b, i, j, geometry)
_SCATTER_SIGNATURES = [types.void(_array(f, ro), _array(types.int8, True), _array(f), GEOMETRY)
                       for f in FLOATS for ro in (False, True)]


@njit([types.void(_array(f, ro), _array(f), *_WINDOW) for f in FLOATS for ro in (False, True)])
def _window_max(x, best, b, i, j, geometry):
    """Window (i, j)'s maximum of ``x`` into ``best[b, i, j]``: -inf where no element lies
    inside the input, NaN where one is NaN. numba's ``maximum`` over the channels
    vectorizes: 3.4× faster than a loop of selects, which numba leaves scalar, on
    (1, 28, 28, 32); a branch per channel also mispredicts on random data."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    out = best[b, i, j]
    out[:] = -np.inf
    for p in range(kh):
        r = i * sh - ph + p * dh
        if 0 <= r < x.shape[1]:
            for q in range(kw):
                s = j * sw - pw + q * dw
                if 0 <= s < x.shape[2]:
                    np.maximum(out, x[b, r, s], out)


@njit([types.void(types.Array(types.int8, 1, "C"), types.Array(f, 1, "C"),
                  types.Array(f, 1, "C", readonly=ro), types.int8)
       for f in FLOATS for ro in (False, True)], own_flags=True)
def _take_equal(won, best, row, e):
    """``won[c] = e`` where ``row[c]`` equals ``best[c]``, or is NaN with no winner yet (-1).
    A blend, not a select, in a function of its own: so numba vectorizes it (2.3× faster)."""
    for c in range(best.shape[0]):
        v, w = row[c], won[c]
        hit = np.int8((v == best[c]) | ((v != v) & (w < 0)))
        won[c] = w + hit * (e - w)


@njit([types.void(_array(f, ro), _array(f), _array(types.int8), *_WINDOW)
       for f in FLOATS for ro in (False, True)])
def _window_winner(x, best, window, b, i, j, geometry):
    """Which element of window (i, j) holds ``best[b, i, j]``, into ``window[b, i, j]``: the
    elements inside the input from the last to the first, each equal one taking it (so the
    first on ties), or the first NaN met (the last NaN); 0 for a window all padding."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    top, won = best[b, i, j], window[b, i, j]
    won[:] = -1
    for p in range(kh - 1, -1, -1):
        r = i * sh - ph + p * dh
        if 0 <= r < x.shape[1]:
            for q in range(kw - 1, -1, -1):
                s = j * sw - pw + q * dw
                if 0 <= s < x.shape[2]:
                    _take_equal(won, top, x[b, r, s], np.int8(p * kw + q))
    np.maximum(won, 0, won)


@njit(_VALUES_SIGNATURES)
def max_values(x, best, geometry):
    """Each window's maximum of ``x`` (B, H, W, C) into ``best`` (B, Ho, Wo, C), NaN if the
    window holds one (inference: no winners to find)."""
    for b in range(x.shape[0]):
        for i in range(best.shape[1]):
            for j in range(best.shape[2]):
                _window_max(x, best, b, i, j, geometry)


@njit(_MAX_SIGNATURES)
def max_window(x, best, window, geometry):
    """Each window's maximum of ``x`` (B, H, W, C) into ``best`` (B, Ho, Wo, C) and the
    winning element (row-major over the kernel; the first on ties, the last NaN if any)
    into ``window``: the maximum first, then the element that equals it (two passes over a
    window in cache, each of which vectorizes: 3.8× faster than one branching pass on
    (128, 28, 28, 32), 12.9 → 3.4 ms on one core)."""
    for b in range(x.shape[0]):
        for i in range(best.shape[1]):
            for j in range(best.shape[2]):
                _window_max(x, best, b, i, j, geometry)
                _window_winner(x, best, window, b, i, j, geometry)


@njit(_SCATTER_SIGNATURES)
def window_scatter(g, window, out, geometry):
    """``out`` (B, H, W, C): each value of ``g`` (B, Ho, Wo, C) added at its window's element
    ``window`` names, zeros elsewhere. Branch-free over the channels (a select per kernel
    element), so the loop vectorizes and a non-finite value reaches only its own element."""
    size = geometry[0] * geometry[1]
    zero = out.dtype.type(0)
    for b in range(out.shape[0]):
        out[b] = 0
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                for e in range(size):
                    r, s, inside = element(i, j, e, geometry, out.shape[1], out.shape[2])
                    if inside:
                        for c in range(g.shape[3]):
                            hit = window[b, i, j, c] == e
                            out[b, r, s, c] += g[b, i, j, c] if hit else zero
