"""Winograd's F(2×2, 3×3) transforms in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; driven by :mod:`ember.ops.winograd`).

A 3×3 convolution's 2×2 block of outputs is ``Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`` for the 4×4 block
``d`` of input under it: 16 products per channel pair instead of 36. With

    Bᵀ = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    G  = [[1, 0, 0], [½, ½, ½], [½, -½, ½], [0, 0, 1]]
    Aᵀ = [[1, 1, 1, 0], [0, 1, -1, -1]]

the input and output transforms are additions only, and so is the weight gradient's transform
of the output gradient, ``A dY Aᵀ`` (the output transform's adjoint); the weight's, a small
GEMM, is in :mod:`ember.ops.winograd`. So float32 results stay as close to the exact
convolution as im2col's are.

A tile ``t`` of a batch of ``tiles_h × tiles_w`` tiles per image covers output rows
``2i, 2i+1`` and columns ``2j, 2j+1`` (``t = (n·tiles_h + i)·tiles_w + j``); its input block
starts ``pad_top`` rows and ``pad_left`` columns earlier, zeros outside the image.

Transformed tiles lie position-major, as the GEMMs read them: row ``p`` of a (16, ≥count·C)
buffer holds position ``p`` of tile ``q`` at ``q·C … q·C + C - 1``.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS

TILING = types.UniTuple(types.int64, 4)  # (tiles_h, tiles_w, pad_top, pad_left)
_C2, _C3, _C4 = ({f: types.Array(f, n, "C") for f in FLOATS} for n in (2, 3, 4))
_IN = [types.void(types.Array(f, 4, "C", readonly=ro), _C2[f], types.int64, types.int64,
                  TILING, _C3[f]) for f in FLOATS for ro in (False, True)]
_OUT = [types.void(_C2[f], types.int64, _C4[f], types.int64, TILING) for f in FLOATS]
_BIAS = [types.void(_C4[f], types.Array(f, 1, "C"), types.int64, types.int64, TILING)
         for f in FLOATS]
_GRADS = [types.void(types.Array(f, 4, "C", readonly=ro), _C2[f], types.int64, types.int64,
                     TILING) for f in FLOATS for ro in (False, True)]


@njit([types.UniTuple(types.int64, 3)(types.int64, TILING)])
def _block(t, tiling):
    """(sample, row, column) of tile ``t``'s 2×2 output block (before padding)."""
    per_sample, tiles_w = tiling[0] * tiling[1], tiling[1]
    ij = t % per_sample
    return t // per_sample, 2 * (ij // tiles_w), 2 * (ij % tiles_w)


@njit(_IN)
def tiles_in(x, v, first, count, tiling, rows):
    """``Bᵀ d B`` of tiles ``first … first+count-1`` of ``x`` (N, H, W, C) into ``v`` (16,
    ≥count·C); ``rows`` (4, 4, C) is scratch for the column pass."""
    pad_top, pad_left = tiling[2], tiling[3]
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    zero = v.dtype.type(0)
    for q in range(count):
        t = first + q
        n, top, left = _block(t, tiling)
        top, left = top - pad_top, left - pad_left
        inside_rows = 0 <= top and top + 3 < height
        for b in range(4):  # Bᵀ d, one input column at a time
            s = left + b
            if inside_rows and 0 <= s < width:
                for c in range(channels):
                    d0, d1 = x[n, top, s, c], x[n, top + 1, s, c]
                    d2, d3 = x[n, top + 2, s, c], x[n, top + 3, s, c]
                    rows[0, b, c], rows[1, b, c] = d0 - d2, d1 + d2
                    rows[2, b, c], rows[3, b, c] = d2 - d1, d1 - d3
            else:  # a tile over the padding
                column = 0 <= s < width
                ok0, ok1 = column and 0 <= top < height, column and 0 <= top + 1 < height
                ok2, ok3 = column and 0 <= top + 2 < height, column and 0 <= top + 3 < height
                for c in range(channels):
                    d0 = x[n, top, s, c] if ok0 else zero
                    d1 = x[n, top + 1, s, c] if ok1 else zero
                    d2 = x[n, top + 2, s, c] if ok2 else zero
                    d3 = x[n, top + 3, s, c] if ok3 else zero
                    rows[0, b, c], rows[1, b, c] = d0 - d2, d1 + d2
                    rows[2, b, c], rows[3, b, c] = d2 - d1, d1 - d3
        at = q * channels
        for a in range(4):  # (Bᵀ d) B
            for c in range(channels):
                e0, e1, e2, e3 = rows[a, 0, c], rows[a, 1, c], rows[a, 2, c], rows[a, 3, c]
                v[4 * a, at + c], v[4 * a + 1, at + c] = e0 - e2, e1 + e2
                v[4 * a + 2, at + c], v[4 * a + 3, at + c] = e2 - e1, e1 - e3


@njit(_OUT)
def tiles_out(m, count, y, first, tiling):
    """``Aᵀ m A`` of the products in ``m`` (16, ≥count·K) of tiles ``first … first+count-1``
    into their 2×2 blocks of ``y`` (N, Ho, Wo, K); a block past the last row or column is
    cut."""
    out_h, out_w, channels = y.shape[1], y.shape[2], y.shape[3]
    for q in range(count):
        t = first + q
        n, r, s = _block(t, tiling)
        whole, at = r + 1 < out_h and s + 1 < out_w, q * channels
        for k in range(channels):  # Aᵀ m, then (Aᵀ m) A
            upper0 = m[0, at + k] + m[4, at + k] + m[8, at + k]
            upper1 = m[1, at + k] + m[5, at + k] + m[9, at + k]
            upper2 = m[2, at + k] + m[6, at + k] + m[10, at + k]
            upper3 = m[3, at + k] + m[7, at + k] + m[11, at + k]
            lower0 = m[4, at + k] - m[8, at + k] - m[12, at + k]
            lower1 = m[5, at + k] - m[9, at + k] - m[13, at + k]
            lower2 = m[6, at + k] - m[10, at + k] - m[14, at + k]
            lower3 = m[7, at + k] - m[11, at + k] - m[15, at + k]
            top_left, top_right = upper0 + upper1 + upper2, upper1 - upper2 - upper3
            bottom_left, bottom_right = lower0 + lower1 + lower2, lower1 - lower2 - lower3
            if whole:
                y[n, r, s, k], y[n, r, s + 1, k] = top_left, top_right
                y[n, r + 1, s, k], y[n, r + 1, s + 1, k] = bottom_left, bottom_right
            else:
                y[n, r, s, k] = top_left
                if s + 1 < out_w:
                    y[n, r, s + 1, k] = top_right
                if r + 1 < out_h:
                    y[n, r + 1, s, k] = bottom_left
                    if s + 1 < out_w:
                        y[n, r + 1, s + 1, k] = bottom_right


@njit(_BIAS)
def add_bias(y, bias, first, count, tiling):
    """Adds ``bias`` (K,) to the 2×2 blocks of ``y`` (N, Ho, Wo, K) of tiles ``first …
    first+count-1``, cut at the last row or column: right after :func:`tiles_out` wrote them,
    still in cache (a sum after the transform's, as a separate add's). A test for a bias in
    :func:`tiles_out`'s loop made its common case, no bias, ~4x slower (no longer vectorized)."""
    out_h, out_w, channels = y.shape[1], y.shape[2], y.shape[3]
    for q in range(count):
        t = first + q
        n, r, s = _block(t, tiling)
        for i in range(r, min(r + 2, out_h)):
            for j in range(s, min(s + 2, out_w)):
                for k in range(channels):
                    y[n, i, j, k] += bias[k]


@njit(_GRADS)
def grads_in(g, dm, first, count, tiling):
    """``A dY Aᵀ`` of the 2×2 output-gradient blocks ``dY`` of tiles ``first … first+count-1``
    of ``g`` (N, Ho, Wo, K), zeros past the last row or column, into ``dm`` (16, ≥count·K)."""
    out_h, out_w, channels = g.shape[1], g.shape[2], g.shape[3]
    zero = dm.dtype.type(0)
    for q in range(count):
        t = first + q
        n, r, s = _block(t, tiling)
        right, below = s + 1 < out_w, r + 1 < out_h
        at = q * channels
        for k in range(channels):
            y00 = g[n, r, s, k]
            y01 = g[n, r, s + 1, k] if right else zero
            y10 = g[n, r + 1, s, k] if below else zero
            y11 = g[n, r + 1, s + 1, k] if right and below else zero
            rows = ((y00, y01), (y00 + y10, y01 + y11), (y00 - y10, y01 - y11), (-y10, -y11))
            for a in range(4):  # (A dY) Aᵀ: a row of A dY at a time
                e0, e1 = rows[a]
                dm[4 * a, at + k], dm[4 * a + 1, at + k] = e0, e0 + e1
                dm[4 * a + 2, at + k], dm[4 * a + 3, at + k] = e0 - e1, -e1
