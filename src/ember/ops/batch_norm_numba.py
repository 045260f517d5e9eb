"""Training-mode batch norm of channels-last rows in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.batch_norm_kernel`):
one pass for the per-channel sums, one for the normalised output, where NumPy's forward makes
six passes and two temporaries; the backward's two sums in one pass over the gradient and
the input.

The rows are (positions, C), channels innermost, so every loop runs along the channels and
vectorizes. The sums are of ``x - shift`` (a shift near the mean: the first row) in float64,
so ``Σd² - (Σd)²/n`` does not cancel.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _rows(f: types.Type, readonly: bool = False) -> types.Array:
    return types.Array(f, 2, "C", readonly=readonly)


_VECTOR = types.Array(types.float64, 1, "C")
_SUMS = [types.void(_rows(f, ro), types.Array(types.float64, 1, "C", readonly=True), _VECTOR,
                    _VECTOR) for f in FLOATS for ro in (False, True)]
_GRADIENT_SUMS = [types.void(_rows(f, ro_g), _rows(f, ro_x),
                              types.Array(types.float64, 1, "C", readonly=True), _VECTOR, _VECTOR)
                   for f in FLOATS for ro_g in (False, True) for ro_x in (False, True)]
_NORMALIZE = [types.void(_rows(f, ro), *(types.Array(f, 1, "C", readonly=True),) * 3, _rows(f))
              for f in FLOATS for ro in (False, True)]


@njit(_SUMS)
def channel_sums(rows, shift, first, second):
    """Adds Σ(x - shift) and Σ(x - shift)² of each channel (column) of ``rows`` to ``first``
    and ``second``."""
    for r in range(rows.shape[0]):
        row = rows[r]
        for c in range(rows.shape[1]):
            d = row[c] - shift[c]
            first[c] += d
            second[c] += d * d


@njit(_GRADIENT_SUMS)
def gradient_sums(g, rows, mean, first, second):
    """Adds Σg and Σg·(x - mean) of each channel (column) of ``g`` and ``rows`` to ``first``
    and ``second``."""
    for r in range(rows.shape[0]):
        row, grad = rows[r], g[r]
        for c in range(rows.shape[1]):
            v = grad[c]
            first[c] += v
            second[c] += v * (row[c] - mean[c])


@njit(_NORMALIZE)
def normalize(rows, mean, scale, bias, out):
    """``(x - mean)·scale + bias`` of each channel (column) of ``rows`` into ``out``."""
    for r in range(rows.shape[0]):
        row, written = rows[r], out[r]
        for c in range(rows.shape[1]):
            written[c] = (row[c] - mean[c]) * scale[c] + bias[c]
