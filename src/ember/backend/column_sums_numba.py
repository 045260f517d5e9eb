"""Column sums of a C-contiguous (rows, n) float32/float64 array in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :func:`ember.backend.gemm.sum_leading`
for a bias's gradient): each column added in float64 from the first row to the last, four
rows per load and store of the running sums, the loop running along the rows (it vectorizes
over the columns). A GEMV with a vector of ones is 10-35 % slower and adds in float32.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit

_SIGNATURES = [types.void(types.Array(f, 2, "C", readonly=ro), types.Array(f, 1, "C"))
               for f in (types.float32, types.float64) for ro in (False, True)]


@njit(_SIGNATURES)
def column_sums(rows, out):
    """``out[j] = Σ rows[:, j]``, added in float64 in row order."""
    total = np.zeros(rows.shape[1])
    m = rows.shape[0]
    whole = m - m % 4
    for r in range(0, whole, 4):
        a, b, c, d = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
        for j in range(total.size):
            total[j] = (((total[j] + a[j]) + b[j]) + c[j]) + d[j]
    for r in range(whole, m):
        a = rows[r]
        for j in range(total.size):
            total[j] += a[j]
    for j in range(total.size):
        out[j] = total[j]
