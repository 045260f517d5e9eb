"""Adam's update of one parameter as one numba pass (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.optim.adam`): NumPy's
update makes about ten passes over the parameter's size and allocates four temporaries.

Each element takes NumPy's steps in NumPy's order, in the parameter's dtype with the
hyperparameters rounded to it, so the result is NumPy's bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _signatures() -> list:
    signatures = []
    for f in FLOATS:
        flat = types.Array(f, 1, "C")
        for gradient in (flat, types.Array(f, 1, "C", readonly=True)):
            signatures.append(types.void(flat, gradient, flat, flat, *(f,) * 6))
    return signatures


@njit(_signatures())
def adam_update(p, g, m, v, keep_new, beta2, keep_square, bias2, eps, step_size):
    """One Adam step of ``p`` from gradient ``g``, updating the moments ``m`` and ``v``:
    ``m += keep_new·(g - m)``; ``v = v·beta2 + keep_square·g²``;
    ``p -= m / (sqrt(v) / bias2 + eps) · step_size``."""
    for i in range(p.size):
        gi = g[i]
        mi = m[i] + keep_new * (gi - m[i])
        vi = v[i] * beta2 + keep_square * gi * gi
        m[i], v[i] = mi, vi
        p[i] = p[i] - mi / (np.sqrt(vi) / bias2 + eps) * step_size
