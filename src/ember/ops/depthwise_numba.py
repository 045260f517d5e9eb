"""A depthwise 2-D convolution's three loops in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`): the output, the input gradient and the weight
gradient, each one pass over channels-last arrays (:mod:`ember.ops.depthwise_conv`).

Arrays are (B, H, W, C), C-contiguous, and the weight (kh, kw, C), so the innermost loop runs
over the channels and vectorizes; sums gather into a local row written out once (2× faster
than adding into the output's own row, which the compiler cannot keep apart from the input).
The same loops on (B, C, H, W) planes, along rows of 16-32 windows, measured 3-7× slower.
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


@njit(_BIASED)
def output(x, out, w, bias, geometry):
    """``out[b, i, j, c]`` = the sum over taps (p, q), in row-major order, of ``w[p, q, c]``
    times the input element the tap reads, plus ``bias[c]`` unless ``bias`` is empty (added
    to the finished sum, as a separate add would)."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    channels = out.shape[3]
    biased = bias.shape[0] > 0
    acc = np.empty(channels, out.dtype)
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                acc[:] = 0
                for p in range(kh):
                    r = i * sh - ph + p * dh
                    if 0 <= r < x.shape[1]:
                        for q in range(kw):
                            s = j * sw - pw + q * dw
                            if 0 <= s < x.shape[2]:
                                for c in range(channels):
                                    acc[c] += x[b, r, s, c] * w[p, q, c]
                if biased:
                    for c in range(channels):
                        out[b, i, j, c] = acc[c] + bias[c]
                else:
                    for c in range(channels):
                        out[b, i, j, c] = acc[c]


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
    copy takes ~3× as long: 2 ns an element of (32, 32, 32, 32) float32)."""
    for b in range(x.shape[0]):
        for h in range(x.shape[2]):
            for c in range(x.shape[1]):
                for w in range(x.shape[3]):
                    out[b, h, w, c] = x[b, c, h, w]
