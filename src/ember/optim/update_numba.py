"""Optimizers' updates of one parameter as one numba pass each (imported only when
:func:`ember.backend.compiled.numba_enabled`; run by
:meth:`ember.optim.elementwise.ElementwiseOptimizer.step`): NumPy's Adam update makes about ten
passes over the parameter's size and allocates four temporaries, SGD's with momentum four and
one; ``maximize`` and weight decay (decoupled or L2) add a pass each.

Each element takes NumPy's steps in NumPy's order, in the parameter's dtype with the
hyperparameters rounded to it, so the result is NumPy's bit for bit. Every kernel starts with
the same three arguments after its arrays: ``decay`` (decoupled weight decay's factor
``1 - lr·wd``, 1 for none), ``l2`` (L2 weight decay's ``wd``, 0 for none) and ``negate``
(``maximize``).
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _signatures(states: int, *hyper: str) -> list:
    """(parameter, gradient (maybe read-only), *states, decay, l2, negate, *hyper) signatures;
    a hyperparameter "f" is of the parameter's dtype, "b" a bool."""
    signatures = []
    for f in FLOATS:
        flat = types.Array(f, 1, "C")
        scalars = [f if h == "f" else types.boolean for h in ("f", "f", "b", *hyper)]
        for gradient in (flat, types.Array(f, 1, "C", readonly=True)):
            signatures.append(types.void(flat, gradient, *(flat,) * states, *scalars))
    return signatures


@njit([types.UniTuple(f, 2)(f, f, f, f, types.boolean) for f in FLOATS])
def _decayed(p, g, decay, l2, negate):
    """The parameter after decoupled decay and the gradient after ``maximize`` and L2 decay:
    NumPy's ``p *= decay``, ``g = -g``, ``g = g + l2·p`` (the branches are the same for every
    element, so they leave the loop vectorized)."""
    if negate:
        g = -g
    if l2 != 0:
        g = g + l2 * p
    return p * decay, g


@njit(_signatures(2, *"ffffff"))
def adam_update(p, g, m, v, decay, l2, negate, keep_new, beta2, keep_square, bias2, eps,
                step_size):
    """One Adam step of ``p`` from gradient ``g``, updating the moments ``m`` and ``v``:
    ``m += keep_new·(g - m)``; ``v = v·beta2 + keep_square·g²``;
    ``p -= m / (sqrt(v) / bias2 + eps) · step_size``."""
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], decay, l2, negate)
        mi = m[i] + keep_new * (gi - m[i])
        vi = v[i] * beta2 + keep_square * gi * gi
        m[i], v[i] = mi, vi
        p[i] = pi - mi / (np.sqrt(vi) / bias2 + eps) * step_size


@njit(_signatures(1, *"fffb"))
def sgd_update(p, g, buf, decay, l2, negate, momentum, keep_new, lr, nesterov):
    """One SGD step with momentum of ``p`` from gradient ``g``, updating the buffer ``buf``:
    ``buf = buf·momentum + keep_new·g``; ``p -= lr·(g + momentum·buf if nesterov else buf)``."""
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], decay, l2, negate)
        b = buf[i] * momentum + keep_new * gi
        buf[i] = b
        p[i] = pi - lr * (gi + momentum * b if nesterov else b)
