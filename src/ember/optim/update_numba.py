"""Optimizers' updates of one parameter as one numba pass each (imported only when
:func:`ember.backend.compiled.numba_enabled`; run by
:meth:`ember.optim.elementwise.ElementwiseOptimizer.step`): NumPy's Adam update makes about ten
passes over the parameter's size and allocates four temporaries, SGD's with momentum four and
one (RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam alike); ``maximize`` and weight decay
(decoupled or L2) add a pass each.

Each element takes NumPy's steps in NumPy's order, in the parameter's dtype with the
hyperparameters rounded to it, so the result is NumPy's bit for bit. The hyperparameters come
as one array ``h`` of that dtype (numba's call costs ~0.3 µs an argument, more than a small
parameter's update), starting with the same three for every kernel: ``decay`` (decoupled
weight decay's factor ``1 - lr·wd``, 1 for none), ``l2`` (L2 weight decay's ``wd``, 0 for
none) and ``negate`` (``maximize``: 1, else 0); a flag is 1 or 0. A state array a flag turns
off (Adam's ``max_exp_avg_sq`` without amsgrad) is given as another state, and not touched.
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


@njit([types.UniTuple(f, 2)(f, f, f, types.Array(f, 1, "C")) for f in FLOATS])
def _moments(m, v, g, h):
    """Adam's moments after gradient ``g`` (also NAdam's and RAdam's), with ``h[3:6] =
    keep_new, beta2, keep_square``: ``m + keep_new·(g - m)`` and ``v·beta2 + keep_square·g²``."""
    return m + h[3] * (g - m), v * h[4] + h[5] * g * g


@njit([types.boolean(f, f) for f in FLOATS])
def _keeps(a, b):
    """Whether NumPy's ``maximum(a, b)`` is ``a``: ``a >= b``, or ``a`` is NaN (NaN wins)."""
    return a >= b or a != a


@njit(_signatures(3))
def adam_update(p, g, m, v, v_max, h):
    """One Adam step of ``p`` from gradient ``g``, updating the moments ``m``, ``v`` (and
    ``v_max`` with amsgrad), with ``h[3:] = keep_new, beta2, keep_square, bias2, eps,
    step_size, amsgrad``: ``m += keep_new·(g - m)``; ``v = v·beta2 + keep_square·g²``;
    amsgrad: ``v_max = maximum(v_max, v)``, read for ``v`` below;
    ``p -= m / (sqrt(v) / bias2 + eps) · step_size``."""
    bias2, eps, step_size = h[6], h[7], h[8]
    amsgrad = h[9] != 0
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        mi, vi = _moments(m[i], v[i], gi, h)
        m[i], v[i] = mi, vi
        if amsgrad:
            if not _keeps(vi, v_max[i]):
                vi = v_max[i]
            v_max[i] = vi
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


@njit(_signatures(0))
def sgd_plain_update(p, g, h):
    """One SGD step without momentum, with ``h[3] = lr``: ``p -= lr·g``."""
    lr = h[3]
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        p[i] = pi - lr * gi


@njit(_signatures(1))
def adagrad_update(p, g, total, h):
    """One Adagrad step, updating the sum of squares ``total``, with ``h[3:] = clr, eps``:
    ``total += g²``; ``p -= clr·(g / (sqrt(total) + eps))``."""
    clr, eps = h[3], h[4]
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        si = total[i] + gi * gi
        total[i] = si
        p[i] = pi - clr * (gi / (np.sqrt(si) + eps))


@njit(_signatures(3))
def rmsprop_update(p, g, v, avg, buf, h):
    """One RMSprop step, updating the square average ``v``, the gradient average ``avg``
    (centered) and the momentum buffer ``buf`` (momentum), with ``h[3:] = alpha,
    keep_square, eps, lr, momentum, centered, has_momentum``: ``v = v·alpha + keep_square·g²``;
    centered: ``avg += keep_square·(g - avg)``, ``d = sqrt(v - avg²) + eps``, else
    ``d = sqrt(v) + eps``; momentum: ``buf = buf·momentum + g / d``, ``p -= lr·buf``, else
    ``p -= lr·(g / d)``."""
    alpha, keep, eps, lr, momentum = h[3], h[4], h[5], h[6], h[7]
    centered, has_momentum = h[8] != 0, h[9] != 0
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        vi = v[i] * alpha + keep * gi * gi
        v[i] = vi
        if centered:
            ai = avg[i] + keep * (gi - avg[i])
            avg[i] = ai
            d = np.sqrt(vi - ai * ai) + eps
        else:
            d = np.sqrt(vi) + eps
        if has_momentum:
            bi = buf[i] * momentum + gi / d
            buf[i] = bi
            p[i] = pi - lr * bi
        else:
            p[i] = pi - lr * (gi / d)


@njit(_signatures(2))
def adadelta_update(p, g, v, u, h):
    """One Adadelta step, updating the square averages of gradients ``v`` and of updates
    ``u``, with ``h[3:] = rho, keep, eps, lr``: ``v = v·rho + keep·g²``;
    ``delta = sqrt(u + eps) / sqrt(v + eps)·g``; ``u = u·rho + keep·delta²``;
    ``p -= lr·delta``."""
    rho, keep, eps, lr = h[3], h[4], h[5], h[6]
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        vi = v[i] * rho + keep * gi * gi
        v[i] = vi
        delta = np.sqrt(u[i] + eps) / np.sqrt(vi + eps) * gi
        u[i] = u[i] * rho + keep * delta * delta
        p[i] = pi - lr * delta


@njit(_signatures(2))
def adamax_update(p, g, m, u, h):
    """One Adamax step, updating ``m`` and the infinity norm ``u``, with ``h[3:] = keep_new,
    beta2, eps, clr``: ``m += keep_new·(g - m)``; ``u = maximum(u·beta2, |g| + eps)``;
    ``p -= clr·(m / u)``."""
    keep_new, beta2, eps, clr = h[3], h[4], h[5], h[6]
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        mi = m[i] + keep_new * (gi - m[i])
        m[i] = mi
        ui = u[i] * beta2
        bound = np.abs(gi) + eps
        if not _keeps(ui, bound):
            ui = bound
        u[i] = ui
        p[i] = pi - clr * (mi / ui)


@njit(_signatures(2))
def nadam_update(p, g, m, v, h):
    """One NAdam step, updating the moments ``m`` and ``v``, with ``h[3:] = keep_new, beta2,
    keep_square, bias2, eps, grad_size, moment_size``: ``m += keep_new·(g - m)``;
    ``v = v·beta2 + keep_square·g²``; ``d = sqrt(v / bias2) + eps``;
    ``p -= grad_size·(g / d)``, then ``p -= moment_size·(m / d)``."""
    bias2, eps = h[6], h[7]
    grad_size, moment_size = h[8], h[9]
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        mi, vi = _moments(m[i], v[i], gi, h)
        m[i], v[i] = mi, vi
        d = np.sqrt(vi / bias2) + eps
        pi = pi - grad_size * (gi / d)
        p[i] = pi - moment_size * (mi / d)


@njit(_signatures(2))
def radam_update(p, g, m, v, h):
    """One RAdam step, updating the moments ``m`` and ``v``, with ``h[3:] = keep_new, beta2,
    keep_square, eps, size, rectified``: ``m += keep_new·(g - m)``;
    ``v = v·beta2 + keep_square·g²``; ``p -= size·(m / (sqrt(v) + eps))`` if rectified,
    else ``p -= size·m``."""
    eps, size = h[6], h[7]
    rectified = h[8] != 0
    for i in range(p.size):
        pi, gi = _decayed(p[i], g[i], h)
        mi, vi = _moments(m[i], v[i], gi, h)
        m[i], v[i] = mi, vi
        if rectified:
            p[i] = pi - size * (mi / (np.sqrt(vi) + eps))
        else:
            p[i] = pi - size * mi
