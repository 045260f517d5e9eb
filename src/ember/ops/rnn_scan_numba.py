"""The pointwise part of one step of the LSTM's and the GRU's scan backward
(:mod:`ember.ops.rnn_scan`) as one numba pass each (imported only when
:func:`ember.backend.compiled.numba_enabled`). NumPy's calls took ten or more passes a step
and over all steps (each gate's derivative times what multiplies it), a third of the
backward; each value here is rounded as those calls round it, step for step in the arrays'
dtype (no fused multiply-add), so the gradients are theirs bit for bit.

Arrays are C-contiguous: ``(T, B, ·)`` over all steps, of which step ``t`` is read or
written, and ``(B, ·)`` carried from step to step.
"""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _arrays(f: types.Type, dims: int, n: int, readonly: bool) -> list[types.Array]:
    return [types.Array(f, dims, "C", readonly=readonly)] * n


_LSTM = [types.void(*_arrays(f, 3, 5, True), *_arrays(f, 2, 1, True), *_arrays(f, 2, 1, False),
                    *_arrays(f, 3, 1, False), types.intp, types.boolean) for f in FLOATS]


@njit(_LSTM)
def lstm_backward_step(gy, gcs, act, tc, cprev, dh, dc, da, t, first):
    """Step ``t``: from the gradients ``gy[t]`` + ``dh`` (of ``h``; ``dh`` unread at the
    ``first`` step back) and ``gcs[t]`` + ``dc`` (of ``c``), the gate activations
    ``act[t]`` (i, f, g, o), ``tc[t] = tanh(c)`` and the previous cell state ``cprev[t]``:
    the gates' gradient ``da[t]`` and the previous cell state's ``dc`` (overwritten)."""
    k = gy.shape[2]
    one = gy.dtype.type(1)
    for b in range(gy.shape[1]):
        for j in range(k):
            i, f = act[t, b, j], act[t, b, k + j]
            g, o = act[t, b, 2 * k + j], act[t, b, 3 * k + j]
            c = tc[t, b, j]
            gh = gy[t, b, j] if first else gy[t, b, j] + dh[b, j]
            s = gh * (o * (one - c * c)) + gcs[t, b, j]
            if not first:
                s = s + dc[b, j]
            da[t, b, j] = ((i * (one - i)) * g) * s
            da[t, b, k + j] = ((f * (one - f)) * cprev[t, b, j]) * s
            da[t, b, 2 * k + j] = ((one - g * g) * i) * s
            da[t, b, 3 * k + j] = ((o * (one - o)) * c) * gh
            dc[b, j] = s * f


_GRU = [types.void(*_arrays(f, 3, 3, True), *_arrays(f, 2, 1, True), *_arrays(f, 2, 1, False),
                   *_arrays(f, 3, 2, False), types.intp, types.boolean) for f in FLOATS]


@njit(_GRU)
def gru_backward_step(gy, work, prev, mm, gz, dx, dhp, t, first):
    """Step ``t``: from the gradient of ``h``, ``gy[t]`` + (``gz`` + ``mm``) (``gz`` and
    ``mm`` unread at the ``first`` step back), the workspace ``work[t]`` (r, z, n and
    ``h W_hnᵀ + b_hn``) and the previous state ``prev[t]``: the input's and the projected
    state's gradients ``dx[t]``, ``dhp[t]``, and in ``gz`` the part ``g·z`` of the previous
    state's (the rest is ``dhp[t] W_hh``, the next ``mm``)."""
    k = gy.shape[2]
    one = gy.dtype.type(1)
    for b in range(gy.shape[1]):
        for j in range(k):
            r, z = work[t, b, j], work[t, b, k + j]
            n, hn = work[t, b, 2 * k + j], work[t, b, 3 * k + j]
            g = gy[t, b, j] if first else gy[t, b, j] + (gz[b, j] + mm[b, j])
            du = g * ((one - z) * (one - n * n))
            er = du * (hn * (r * (one - r)))
            ez = g * ((prev[t, b, j] - n) * (z * (one - z)))
            dx[t, b, j], dx[t, b, k + j], dx[t, b, 2 * k + j] = er, ez, du
            dhp[t, b, j], dhp[t, b, k + j], dhp[t, b, 2 * k + j] = er, ez, du * r
            gz[b, j] = g * z

