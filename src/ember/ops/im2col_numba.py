"""im2col's copy in numba (imported only when :func:`ember.backend.compiled.numba_enabled`):
each window's elements copied once into its row of columns, zeros written where a window
reaches into the padding (the padded input is never made), and the window geometry shared with
max pooling's loops (:mod:`ember.ops.max_pool_numba`).

``geometry`` is (kh, kw, sh, sw, dh, dw, ph, pw): kernel, stride, dilation and low padding.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit

GEOMETRY = types.UniTuple(types.int64, 8)
FLOATS = (types.float32, types.float64)
# the input channels-last (contiguous channels, loops that vectorize) or any other layout
# (F order named too: numba finds an F-ordered array both "A" signatures, and refuses)
_COLUMNS_SIGNATURES = [types.void(types.Array(f, 4, layout, readonly=ro),
                                  types.Array(f, 4, "C"), GEOMETRY)
                       for f in FLOATS for layout in "CFA" for ro in (False, True)]


@njit("UniTuple(int64, 3)(int64, int64, int64, UniTuple(int64, 8), int64, int64)")
def element(i, j, kernel_element, geometry, height, width):
    """(row, column, inside): where window (i, j)'s kernel element ``kernel_element``
    (row-major) lies in a height × width input, and whether it lies inside (not in the
    padding)."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    r = i * sh - ph + (kernel_element // kw) * dh
    s = j * sw - pw + (kernel_element % kw) * dw
    return r, s, 0 <= r < height and 0 <= s < width


@njit(_COLUMNS_SIGNATURES)
def columns(x, cols, geometry):
    """The windows of ``x`` (B, H, W, C, any strides) into ``cols`` (B, Ho, Wo, kh·kw·C):
    window (i, j)'s row holds its elements in (kernel row, kernel column, channel) order."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    zero = cols.dtype.type(0)
    if channels == 1:  # (a first layer's image: by kernel element along the row, ~3× faster)
        for b in range(cols.shape[0]):
            for i in range(cols.shape[1]):
                for ki in range(kh):
                    r = i * sh - ph + ki * dh
                    inside = 0 <= r < height
                    for kj in range(kw):
                        for j in range(cols.shape[2]):
                            s = j * sw - pw + kj * dw
                            cols[b, i, j, ki * kw + kj] = x[b, r, s, 0] \
                                if inside and 0 <= s < width else zero
        return
    for b in range(cols.shape[0]):
        for i in range(cols.shape[1]):
            for ki in range(kh):
                r = i * sh - ph + ki * dh
                for j in range(cols.shape[2]):
                    for kj in range(kw):
                        s = j * sw - pw + kj * dw
                        base = (ki * kw + kj) * channels
                        if 0 <= r < height and 0 <= s < width:
                            for c in range(channels):
                                cols[b, i, j, base + c] = x[b, r, s, c]
                        else:
                            for c in range(channels):
                                cols[b, i, j, base + c] = zero


@njit([types.void(types.Array(f, 4, "C", readonly=ro), types.Array(f, 4, "C"), GEOMETRY)
       for f in FLOATS for ro in (False, True)])
def fold_columns(cols, x, geometry):
    """col2im, :func:`columns` reversed: each window's row of ``cols`` (B, Ho, Wo, kh·kw·C)
    added into ``x`` (B, H, W, C, zeros), its padding elements skipped."""
    kh, kw, sh, sw, dh, dw, ph, pw = geometry
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    for b in range(cols.shape[0]):
        for i in range(cols.shape[1]):
            for ki in range(kh):
                r = i * sh - ph + ki * dh
                if not 0 <= r < height:
                    continue
                for j in range(cols.shape[2]):
                    for kj in range(kw):
                        s = j * sw - pw + kj * dw
                        if 0 <= s < width:
                            base = (ki * kw + kj) * channels
                            for c in range(channels):
                                x[b, r, s, c] += cols[b, i, j, base + c]
