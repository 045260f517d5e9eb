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


def _array(dtype: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(dtype, 4, "C", readonly=readonly)


_MAX_SIGNATURES = [types.void(_array(f, ro), _array(f), _array(types.int8), GEOMETRY)
                   for f in FLOATS for ro in (False, True)]
_SCATTER_SIGNATURES = [types.void(_array(f, ro), _array(types.int8, True), _array(f), GEOMETRY)
                       for f in FLOATS for ro in (False, True)]


@njit(_MAX_SIGNATURES)
def max_window(x, best, window, geometry):
    """Each window's maximum of ``x`` (B, H, W, C) into ``best`` (B, Ho, Wo, C) and the
    winning element (row-major over the kernel; the first on ties, the last NaN if any)
    into ``window``."""
    size = geometry[0] * geometry[1]
    for b in range(x.shape[0]):
        for i in range(best.shape[1]):
            for j in range(best.shape[2]):
                best[b, i, j] = -np.inf
                window[b, i, j] = 0
                first = True
                for e in range(size):
                    r, s, inside = element(i, j, e, geometry, x.shape[1], x.shape[2])
                    if not inside:
                        continue
                    if first:  # the first element inside the input starts the window
                        best[b, i, j] = x[b, r, s]
                        window[b, i, j] = e
                        first = False
                    for c in range(x.shape[3]):
                        v, m = x[b, r, s, c], best[b, i, j, c]
                        if v > m or v != v:  # the last NaN, as PyTorch
                            best[b, i, j, c] = v
                            window[b, i, j, c] = e


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
