"""A depthwise 2-D convolution's three loops in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`): the output, the input gradient and the weight
gradient, each one pass over channels-last arrays (:mod:`ember.ops.depthwise_conv`).

Arrays are (B, H, W, C), C-contiguous, and the weight (kh, kw, C), so the innermost loop runs
over the channels and vectorizes; sums gather into a local row written out once (2× faster
than adding into the output's own row, which the compiler cannot keep apart from the input).
The same loops on (B, C, H, W) planes, along rows of 16-32 windows, measured 3-7× slower; a
(B, C, H, W) input instead goes to ``output_planes``, which makes each sample channels-last
in a buffer first.
``geometry`` is (kh, kw, sh, sw, dh, dw, ph, pw): kernel, stride, dilation and low padding;
taps in the padding are skipped.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS, GEOMETRY


def _array(dtype: types.Type, ndim: int = 4, readonly: bool = False) -> types.Array:
    return types.Array(dtype, ndim, "C", readonly=readonly)


# (the weight is always a fresh (kh, kw, C) copy: writable)
_SIGNATURES = [types.void(_array(f, 4, ro), _array(f), _array(f, 3), GEOMETRY)
               for f in FLOATS for ro in (False, True)]
_BIASED = [types.void(_array(f, 4, ro), _array(f), _array(f, 3), types.Array(f, 1, "C"),
                      GEOMETRY) for f in FLOATS for ro in (False, True)]


_SAMPLE = [types.void(_array(f, 3, ro), _array(f, 3), _array(f, 3), types.Array(f, 1, "C"),
                      GEOMETRY) for f in FLOATS for ro in (False, True)]


@njit(_SAMPLE)
def _sample_output(x, out, w, bias, geometry):
    """``output`` of one (H, W, C) sample. A 3x3 window wholly inside the input (all but the
    border's) sums its nine taps in registers, in the same order, straight into the output
    (the general loop's running sum in memory: 12.7 against 6.9 ms of CPU at (32, 96, 56,
    56) float32)."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    channels = out.shape[2]
    biased = bias.shape[0] > 0
    zero = out.dtype.type(0)
    acc = np.empty(channels, out.dtype)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            r, s = i * sh - ph, j * sw - pw
            if kh == 3 and kw == 3 and r >= 0 and s >= 0 and r + 2 * dh < x.shape[0] \
                    and s + 2 * dw < x.shape[1]:
                a, b, c = x[r], x[r + dh], x[r + 2 * dh]
                s1, s2 = s + dw, s + 2 * dw
                o = out[i, j]
                for k in range(channels):
                    t = zero + a[s, k] * w[0, 0, k] + a[s1, k] * w[0, 1, k] + \
                        a[s2, k] * w[0, 2, k] + b[s, k] * w[1, 0, k] + b[s1, k] * w[1, 1, k] + \
                        b[s2, k] * w[1, 2, k] + c[s, k] * w[2, 0, k] + c[s1, k] * w[2, 1, k] + \
                        c[s2, k] * w[2, 2, k]
                    o[k] = t + bias[k] if biased else t
                continue
            acc[:] = 0
            for p in range(kh):
                row = r + p * dh
                if 0 <= row < x.shape[0]:
                    for q in range(kw):
                        col = s + q * dw
                        if 0 <= col < x.shape[1]:
                            for k in range(channels):
                                acc[k] += x[row, col, k] * w[p, q, k]
            if biased:
                for k in range(channels):
                    out[i, j, k] = acc[k] + bias[k]
            else:
                for k in range(channels):
                    out[i, j, k] = acc[k]


@njit(_BIASED)
def output(x, out, w, bias, geometry):
    """``out[b, i, j, c]`` = the sum over taps (p, q), in row-major order, of ``w[p, q, c]``
    times the input element the tap reads, plus ``bias[c]`` unless ``bias`` is empty (added
    to the finished sum, as a separate add would)."""
    for b in range(out.shape[0]):
        _sample_output(x[b], out[b], w, bias, geometry)


@njit([types.void(types.Array(f, 4, layout, readonly=ro), _array(f), _array(f, 3),
                  types.Array(f, 1, "C"), GEOMETRY)
       for f in FLOATS for layout in "CA" for ro in (False, True)])
def output_planes(x, out, w, bias, geometry):
    """``output`` of a (B, C, H, W) ``x`` of any strides: each sample copied channels-last
    into a buffer the loop then reads from the cache (a whole channels-last copy first went
    to memory and back: 16 of the 29 ms at (32, 96, 56, 56) float32)."""
    buf = np.empty((x.shape[2], x.shape[3], x.shape[1]), x.dtype)
    for b in range(x.shape[0]):
        for h in range(x.shape[2]):
            for col in range(x.shape[3]):
                for c in range(x.shape[1]):
                    buf[h, col, c] = x[b, c, h, col]
        _sample_output(buf, out[b], w, bias, geometry)


@njit(_SIGNATURES)
def input_grad(g, gx, w, geometry):
    """``gx[b, r, s, c]`` = the sum over taps (p, q), in row-major order, of ``w[p, q, c]``
    times the output gradient of the window whose tap read input element (r, s)."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    channels = gx.shape[3]
    acc = np.empty(channels, gx.dtype)
    for b in range(gx.shape[0]):
        for r in range(gx.shape[1]):
            for s in range(gx.shape[2]):
                acc[:] = 0
                for p in range(kh):
                    top = r + ph - p * dh
                    i = top // sh
                    if top >= 0 and i * sh == top and i < g.shape[1]:
                        for q in range(kw):
                            left = s + pw - q * dw
                            j = left // sw
                            if left >= 0 and j * sw == left and j < g.shape[2]:
                                for c in range(channels):
                                    acc[c] += g[b, i, j, c] * w[p, q, c]
                for c in range(channels):
                    gx[b, r, s, c] = acc[c]


@njit([types.void(_array(f, 4, ro), _array(f, 4, ro2), _array(types.float64, 3), GEOMETRY)
       for f in FLOATS for ro in (False, True) for ro2 in (False, True)])
def weight_grad(x, g, gw, geometry):
    """``gw[p, q, c]`` (float64, zeros on entry) += the output gradients times the input
    elements tap (p, q) read, over the block's samples and windows in order."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    channels = g.shape[3]
    for b in range(g.shape[0]):
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                for p in range(kh):
                    r = i * sh - ph + p * dh
                    if 0 <= r < x.shape[1]:
                        for q in range(kw):
                            s = j * sw - pw + q * dw
                            if 0 <= s < x.shape[2]:
                                for c in range(channels):
                                    gw[p, q, c] += g[b, i, j, c] * x[b, r, s, c]


@njit([types.void(types.Array(f, 4, layout, readonly=ro), _array(f))
       for f in FLOATS for layout in "CFA" for ro in (False, True)])
def to_channels_last(x, out):
    """``out[b, h, w, c] = x[b, c, h, w]`` for ``x`` of any strides (NumPy's transposing
    copy takes ~3× as long: 2 ns an element of (32, 32, 32, 32) float32; the channels
    innermost, the writes in order: 11.4 against 15.4 ms at (32, 96, 56, 56))."""
    for b in range(x.shape[0]):
        for h in range(x.shape[2]):
            for w in range(x.shape[3]):
                for c in range(x.shape[1]):
                    out[b, h, w, c] = x[b, c, h, w]
