"""Optimizers' updates of one parameter as one numba pass each (imported only when
:func:`ember.backend.compiled.numba_enabled`; run by
:meth:`ember.optim.elementwise.ElementwiseOptimizer.step`): NumPy's Adam update makes about ten
passes over the parameter's size and allocates four temporaries, SGD's with momentum four and
one; ``maximize`` and weight decay (decoupled or L2) add a pass each.

Each element takes NumPy's steps in NumPy's order, in the parameter's dtype with the
hyperparameters rounded to it, so the result is NumPy's bit for bit. The hyperparameters come
as one array ``h`` of that dtype (numba's call costs ~0.3 µs an argument, more than a small
parameter's update), starting with the same three for every kernel: ``decay`` (decoupled
weight decay's factor ``1 - lr·wd``, 1 for none), ``l2`` (L2 weight decay's ``wd``, 0 for
none) and ``negate`` (``maximize``: 1, else 0); a flag is 1 or 0.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _signatures(states: int) -> list:
    """(parameter, gradient (maybe read-only), *states, hyperparameters) signatures."""
    signatures = []
    for f in FLOATS:
        flat = types.Array(f, 1, "C")
        for gradient in (flat, types.Array(f, 1, "C", readonly=True)):
            signatures.append(types.void(flat, gradient, *(flat,) * (states + 1)))
    return signatures


@njit([types.UniTuple(f, 2)(f, f, types.Array(f, 1, "C")) for f in FLOATS])
def _decayed(p, g, h):
    """The parameter after decoupled decay and the gradient after ``maximize`` and L2 decay:
    NumPy's ``p *= decay``, ``g = -g``, ``g = g + l2·p`` (the branches are the same for every
    element, so they leave the loop vectorized)."""
    if h[2] != 0:
        g = -g
    if h[1] != 0:
        g = g + h[1] * p
    return p * h[0], g


@njit(_signatures(2))
def adam_update(p, g, m, v, h):
    """One Adam step of ``p`` from gradient ``g``, updating the moments ``m`` and ``v``, with
    ``h[3:] = keep_new, beta2, keep_square, bias2, eps, step_size``:
    ``m += keep_new·(g - m)``; ``v = v·beta2 + keep_square·g²``;
    ``p -= m / (sqrt(v) / bias2 + eps) · step_size``."""
    keep_new, beta2, keep_square, bias2, eps, step_size = h[3], h[4], h[5], h[6], h[7], h[8]
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        mi = m[i] + keep_new * (gi - m[i])
        vi = v[i] * beta2 + keep_square * gi * gi
        m[i], v[i] = mi, vi
        p[i] = pi - mi / (np.sqrt(vi) / bias2 + eps) * step_size


@njit(_signatures(1))
def sgd_update(p, g, buf, h):
    """One SGD step with momentum of ``p`` from gradient ``g``, updating the buffer ``buf``,
    with ``h[3:] = momentum, keep_new, lr, nesterov``: ``buf = buf·momentum + keep_new·g``;
    ``p -= lr·(g + momentum·buf if nesterov else buf)``."""
    momentum, keep_new, lr, nesterov = h[3], h[4], h[5], h[6] != 0
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        b = buf[i] * momentum + keep_new * gi
        buf[i] = b
        p[i] = pi - lr * (gi + momentum * b if nesterov else b)
