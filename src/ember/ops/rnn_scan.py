"""A whole LSTM or GRU layer direction as one primitive each way, as cuDNN's and ONNX's LSTM
nodes run it: the time loop (``h W_hhᵀ + b_hh`` and the gates of each step) in one kernel,
and its backward (the steps in reverse, then the weight gradient as one matrix product over
all steps) in one more. Step by step, each time step cost ~5 tape nodes forward (transpose,
matmul, bias add, slice, gates) and as many backward; an LSTM of 8 steps at batch 32 ×
hidden 64 spent most of its time in that bookkeeping.

``lstm_scan(px, h0, c0, w_hh, b_hh) -> (y, cs)``: ``px`` the projected input
``x W_ihᵀ + b_ih`` of every step ``(T, B, 4H)``, ``h0``/``c0`` ``(B, H)``; ``y`` and ``cs``
the hidden and cell states of every step ``(T, B, H)``. ``gru_scan(px, h0, w_hh, b_hh) ->
y``. ``reverse=True`` runs from the last step back (the reverse direction); ``y[t]`` is
still step ``t``'s state. The kernels round as the step primitives of
:mod:`ember.ops.rnn_gates` after ``linear`` do, operation for operation, so outputs are
bit-equal to the step-by-step scan. The gradients are not bit-equal to it (last bits): the
weight and bias gradients are one product and one sum over all steps, and the factors that
do not depend on the recurrence (each gate's derivative times what multiplies it) are
computed for all steps at once before the reverse loop; where numba runs, each step's
pointwise part of the backward is one pass instead (:mod:`ember.ops.rnn_scan_numba`, the same
bits).

Each forward primitive also returns a workspace (the gate activations; GRU: ``r, z, n`` and
``h W_hnᵀ + b_hn``) that its backward reads instead of recomputing products; no gradient
flows through it. The backward primitives' own rules come from composites in Ember ops (the
step primitives, looped), so higher derivatives follow.

Example:
    >>> y, cs = lstm_scan(ember.zeros(5, 2, 8), ember.zeros(2, 2), ember.ones(2, 2),
    ...                   ember.zeros(8, 2), None)
    >>> y.shape
    ember.Size([5, 2, 2])
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ember.backend import compiled, gemm
from ember.errors import DTypeError, ShapeError
from ember.ops.join import stack
from ember.ops.linear import linear
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.rnn_gates import (
    _composite_jvp,
    _composite_vjp,
    _fused,
    _gru_backward_composite,
    _lstm_backward_composite,
    _or_zeros,
    gru_gates,
    lstm_gates,
)
from ember.tensor import Tensor

__all__: list[str] = []


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _sigmoid_into(xp, a, out) -> None:
    """``1 / (1 + exp(-a))`` written into ``out`` (as ``sigmoid_array`` rounds)."""
    xp.negative(a, out=out)
    xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def _rows(xp, b: tuple, batch: int):
    """The bias repeated on each of ``batch`` rows (adding it is then no broadcast: 5x
    faster on (32, 256)), or None."""
    return xp.ascontiguousarray(xp.broadcast_to(b[0], (batch,) + b[0].shape)) if b else None


def _projected(xp, h, wt, bias):
    """``h W_hhᵀ + b_hh`` as ``linear`` computes it (``bias`` from :func:`_rows`)."""
    hp = gemm.matmul(xp, h, wt)
    if bias is not None:
        hp += bias
    return hp


def _previous(xp, h0, y, reverse: bool):
    """The state each step starts from, ``(T, B, H)``, C-contiguous (as the numba steps take
    it; the saved states of a batched backward may be broadcast views)."""
    return xp.ascontiguousarray(xp.concatenate([y[1:], h0[None]] if reverse
                                               else [h0[None], y[:-1]]))


_KERNELS = compiled.register("ember.ops.rnn_scan_numba")


def _kernels(xp, *arrays):
    """The numba kernels of the backward steps, C-contiguous copies of ``arrays`` (those
    already so as they are); None where NumPy's calls run (another backend, numba off)."""
    kernels = compiled.load(_KERNELS) if xp is np and compiled.numba_enabled() else None
    return None if kernels is None else (kernels, *(np.ascontiguousarray(a) for a in arrays))


def _weight_grads(xp, d, prev):
    """``dW = Σ_t dᵀ h_prev`` as one product over all steps, and ``db = Σ d``."""
    rows = d.shape[0] * d.shape[1]
    flat = d.reshape(rows, d.shape[-1])
    return gemm.matmul(xp, flat.T, prev.reshape(rows, prev.shape[-1])), flat.sum(0)


def _check(op: str, gates: int, px: TensorSpec, h0: TensorSpec, w: TensorSpec,
           b: tuple, *states: TensorSpec) -> None:
    hidden = w.shape[-1] if len(w.shape) == 2 else -1
    batch = px.shape[1] if len(px.shape) == 3 else -1
    fine = len(px.shape) == 3 and tuple(w.shape) == (gates * hidden, hidden) and \
        px.shape[2] == gates * hidden and \
        all(tuple(s.shape) == (batch, hidden) for s in (h0, *states)) and \
        all(tuple(s.shape) == (gates * hidden,) for s in b)
    if not fine:
        shapes = ", ".join(str(tuple(s.shape)) for s in (px, h0, *states, w, *b))
        raise ShapeError(f"{op}: expected (T, B, {gates}H) projected inputs, (B, H) states, a "
                         f"({gates}H, H) weight and a ({gates}H,) bias, got {shapes}")
    if any(s.dtype is not px.dtype for s in (h0, w, *b, *states)) or \
            px.dtype.name not in ("float32", "float64"):
        raise DTypeError(f"{op}: expected float32 or float64 operands of one dtype, got "
                         + ", ".join(s.dtype.name for s in (px, h0, *states, w, *b)))


# -- the composites: the kernels' rounding, and the backward rules' source ---------------------
def _lstm_steps(px: Tensor, h0: Tensor, c0: Tensor, w: Tensor, b: tuple, reverse: bool):
    """Each step of the LSTM in Ember ops: ``(t, h_prev, c_prev, hp, h, c)``."""
    h, c = h0, c0
    for t in _order(px.shape[0], reverse):
        hp = linear(h, w, b[0] if b else None)
        h2, c2 = lstm_gates(px[t], hp, c)
        yield t, h, c, hp, h2, c2
        h, c = h2, c2


def _in_time_order(values: dict) -> Tensor:
    return stack([values[t] for t in range(len(values))])


def lstm_scan_composite(px: Tensor, h0: Tensor, c0: Tensor, w: Tensor, *b: Tensor,
                        reverse: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """:class:`LSTMScan` step by step in Ember ops: ``(y, cs, workspace)``."""
    ys, cs, acts = {}, {}, {}
    for t, _, _, hp, h, c in _lstm_steps(px, h0, c0, w, b, reverse):
        i, f, g, o = (px[t] + hp).chunk(4, -1)
        ys[t], cs[t] = h, c
        acts[t] = stack([i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()], -2).flatten(-2)
    return _in_time_order(ys), _in_time_order(cs), _in_time_order(acts)


def _lstm_scan_backward_composite(gy, gcs, acts, cs, y, px, h0, c0, w, *b,
                                  reverse: bool = False) -> tuple:
    """:class:`LSTMScanBackward` in Ember ops (the workspace and saved states unread)."""
    steps = list(_lstm_steps(px, h0, c0, w, b, reverse))
    das, prevs, dh, dc = {}, {}, None, None
    for t, h, c, hp, _, _ in reversed(steps):
        gh = gy[t] if dh is None else gy[t] + dh
        gc = gcs[t] if dc is None else gcs[t] + dc
        das[t], dc = _lstm_backward_composite(gh, gc, px[t], hp, c)
        dh, prevs[t] = das[t] @ w, h
    d, prev = _in_time_order(das), _in_time_order(prevs)
    rows = d.shape[0] * d.shape[1]
    dw = d.reshape(rows, d.shape[-1]).t() @ prev.reshape(rows, prev.shape[-1])
    return d, dh, dc, dw, d.sum((0, 1))


def _gru_steps(px: Tensor, h0: Tensor, w: Tensor, b: tuple, reverse: bool):
    """Each step of the GRU in Ember ops: ``(t, h_prev, hp, h)``."""
    h = h0
    for t in _order(px.shape[0], reverse):
        hp = linear(h, w, b[0] if b else None)
        h2 = gru_gates(px[t], hp, h)
        yield t, h, hp, h2
        h = h2


def gru_scan_composite(px: Tensor, h0: Tensor, w: Tensor, *b: Tensor,
                       reverse: bool = False) -> tuple[Tensor, Tensor]:
    """:class:`GRUScan` step by step in Ember ops: ``(y, workspace)``."""
    ys, work = {}, {}
    for t, _, hp, h in _gru_steps(px, h0, w, b, reverse):
        xr, xz, xn = px[t].chunk(3, -1)
        hr, hz, hn = hp.chunk(3, -1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        ys[t] = h
        work[t] = stack([r, z, (xn + r * hn).tanh(), hn], -2).flatten(-2)
    return _in_time_order(ys), _in_time_order(work)


def _gru_scan_backward_composite(gy, work, y, px, h0, w, *b, reverse: bool = False) -> tuple:
    """:class:`GRUScanBackward` in Ember ops (the workspace and saved states unread)."""
    steps = list(_gru_steps(px, h0, w, b, reverse))
    dxs, dhps, prevs, dh = {}, {}, {}, None
    for t, h, hp, _ in reversed(steps):
        g = gy[t] if dh is None else gy[t] + dh
        dxs[t], dhps[t], dh = _gru_backward_composite(g, px[t], hp, h)
        dh, prevs[t] = dh + dhps[t] @ w, h
    dhp, prev = _in_time_order(dhps), _in_time_order(prevs)
    rows = dhp.shape[0] * dhp.shape[1]
    dw = dhp.reshape(rows, dhp.shape[-1]).t() @ prev.reshape(rows, prev.shape[-1])
    return _in_time_order(dxs), dh, dw, dhp.sum((0, 1))


def _backward_rules(composite):
    """vjp and jvp rules of a backward primitive from its composite."""
    def vjp(self, ctx, *cotangents):
        return _composite_vjp(partial(composite, **ctx.params), ctx, cotangents)

    def jvp(self, ctx, *tangents):
        return _composite_jvp(partial(composite, **ctx.params), ctx, tangents)
    return vjp, jvp


# -- LSTM -----------------------------------------------------------------------------------
@primitive
class LSTMScan(Primitive):
    """``(y, cs, workspace)`` of an LSTM layer direction from ``px, h0, c0, w_hh[, b_hh]``."""

    name = "lstm_scan"
    nout = 3
    allocates = True
    save_outputs = True

    def forward(self, xp, px, h0, c0, w, *b, reverse):
        k = h0.shape[-1]
        y = xp.empty(px.shape[:2] + (k,), px.dtype)
        cs, acts = xp.empty_like(y), xp.empty_like(px)
        h, c, wt, bias = h0, c0, xp.ascontiguousarray(w.T), _rows(xp, b, px.shape[1])
        for t in _order(px.shape[0], reverse):
            a = _projected(xp, h, wt, bias)
            a += px[t]
            act = acts[t]
            _sigmoid_into(xp, a, act)  # (all four gates: on whole rows it is twice as fast)
            xp.tanh(a[..., 2 * k:3 * k], out=act[..., 2 * k:3 * k])
            c = xp.multiply(act[..., k:2 * k], c, out=cs[t])
            c += act[..., :k] * act[..., 2 * k:3 * k]
            h = xp.multiply(act[..., 3 * k:], xp.tanh(c), out=y[t])
        return y, cs, acts

    def infer(self, px, h0, c0, w, *b, reverse):
        _check(self.name, 4, px, h0, w, b, c0)
        state = TensorSpec(tuple(px.shape[:2]) + (h0.shape[-1],), px.dtype)
        return state, state, TensorSpec(px.shape, px.dtype)

    def vjp(self, ctx, gy, gcs, _):
        y, cs, acts = (ctx.output(i) for i in range(3))
        grads = apply(LSTMScanBackward, _or_zeros(gy, y), _or_zeros(gcs, cs), acts, cs, y,
                      *ctx.inputs, **ctx.params)
        return tuple(g if t.requires_grad else None for g, t in zip(grads, ctx.inputs))

    def jvp(self, ctx, *tangents):
        return _composite_jvp(partial(lstm_scan_composite, **ctx.params), ctx, tangents)

    def flops(self, px, h0, c0, w, *b, reverse):
        return 2 * math.prod(px.shape) * h0.shape[-1] + 2 * math.prod(px.shape)


@primitive
class LSTMScanBackward(Primitive):
    """:class:`LSTMScan`'s gradients ``(d px, d h0, d c0, d w_hh, d b_hh)`` from
    ``(g y, g cs)``, reading the workspace and the saved states."""

    name = "lstm_scan_backward"
    nout = 5
    allocates = True
    vjp, jvp = _backward_rules(_lstm_scan_backward_composite)

    def forward(self, xp, gy, gcs, act, cs, y, px, h0, c0, w, *b, reverse):
        k, (steps, batch) = h0.shape[-1], px.shape[:2]
        numba = _kernels(xp, gy, gcs, act, cs, px)
        if numba is not None:
            return _lstm_backward_numba(xp, *numba, y, h0, c0, w, reverse)
        # what does not depend on the recurrence, for all steps at once: each gate's
        # derivative times what multiplies it (d gates = [s, s, s, g h] * m)
        tc = xp.tanh(cs)
        m = act * (1 - act)
        g = act[..., 2 * k:3 * k]
        m[..., 2 * k:3 * k] = 1 - g * g
        m[..., :k] *= g
        m[..., k:2 * k] *= _previous(xp, c0, cs, reverse)
        m[..., 2 * k:3 * k] *= act[..., :k]
        m[..., 3 * k:] *= tc
        so = act[..., 3 * k:] * (1 - tc * tc)  # d c from d h
        m4 = m.reshape(steps, batch, 4, k)
        da = xp.empty_like(px)
        da4 = da.reshape(steps, batch, 4, k)
        dh = dc = None
        for t in reversed(_order(steps, reverse)):
            gh = gy[t] if dh is None else gy[t] + dh
            s = gh * so[t]
            s += gcs[t]
            if dc is not None:
                s += dc
            xp.multiply(m4[t, :, :3], s[:, None], out=da4[t, :, :3])
            xp.multiply(m4[t, :, 3], gh, out=da4[t, :, 3])
            dc = s * act[t, :, k:2 * k]
            dh = gemm.matmul(xp, da[t], w)
        dw, db = _weight_grads(xp, da, _previous(xp, h0, y, reverse))
        return da, dh, dc, dw, db

    def infer(self, gy, gcs, act, cs, y, px, h0, c0, w, *b, reverse):
        _check(self.name, 4, px, h0, w, b, c0)
        return (TensorSpec(px.shape, px.dtype), h0, c0, w,
                TensorSpec((w.shape[0],), w.dtype))

    def flops(self, gy, gcs, act, cs, y, px, h0, c0, w, *b, reverse):
        return 4 * math.prod(px.shape) * h0.shape[-1] + 16 * math.prod(y.shape)


# -- GRU ------------------------------------------------------------------------------------
@primitive
class GRUScan(Primitive):
    """``(y, workspace)`` of a GRU layer direction from ``px, h0, w_hh[, b_hh]``."""

    name = "gru_scan"
    nout = 2
    allocates = True
    save_outputs = True

    def forward(self, xp, px, h0, w, *b, reverse):
        k = h0.shape[-1]
        y = xp.empty(px.shape[:2] + (k,), px.dtype)
        work = xp.empty(px.shape[:2] + (4 * k,), px.dtype)
        h, wt, bias = h0, xp.ascontiguousarray(w.T), _rows(xp, b, px.shape[1])
        for t in _order(px.shape[0], reverse):
            hp, x, ws = _projected(xp, h, wt, bias), px[t], work[t]
            rz = xp.add(x[..., :2 * k], hp[..., :2 * k])
            _sigmoid_into(xp, rz, rz)
            ws[..., :2 * k] = rz
            r, z, n = ws[..., :k], ws[..., k:2 * k], ws[..., 2 * k:3 * k]
            ws[..., 3 * k:] = hp[..., 2 * k:]
            xp.multiply(r, hp[..., 2 * k:], out=n)
            n += x[..., 2 * k:]
            xp.tanh(n, out=n)
            h2 = xp.multiply(n, 1 - z, out=y[t])
            h2 += z * h
            h = h2
        return y, work

    def infer(self, px, h0, w, *b, reverse):
        _check(self.name, 3, px, h0, w, b)
        return (TensorSpec(tuple(px.shape[:2]) + (h0.shape[-1],), px.dtype),
                TensorSpec(tuple(px.shape[:2]) + (4 * h0.shape[-1],), px.dtype))

    def vjp(self, ctx, gy, _):
        y, work = ctx.output(0), ctx.output(1)
        grads = apply(GRUScanBackward, _or_zeros(gy, y), work, y, *ctx.inputs, **ctx.params)
        return tuple(g if t.requires_grad else None for g, t in zip(grads, ctx.inputs))

    def jvp(self, ctx, *tangents):
        return _composite_jvp(partial(gru_scan_composite, **ctx.params), ctx, tangents)

    def flops(self, px, h0, w, *b, reverse):
        return 2 * math.prod(px.shape) * h0.shape[-1] + 8 * math.prod(px.shape) // 3


@primitive
class GRUScanBackward(Primitive):
    """:class:`GRUScan`'s gradients ``(d px, d h0, d w_hh, d b_hh)`` from ``g y``, reading
    the workspace and the saved states."""

    name = "gru_scan_backward"
    nout = 4
    allocates = True
    vjp, jvp = _backward_rules(_gru_scan_backward_composite)

    def forward(self, xp, gy, work, y, px, h0, w, *b, reverse):
        k, steps = h0.shape[-1], px.shape[0]
        numba = _kernels(xp, gy, work, px)
        if numba is not None:
            return _gru_backward_numba(xp, *numba, y, h0, w, reverse)
        r, z, n, hn = (work[..., j * k:(j + 1) * k] for j in range(4))
        # what does not depend on the recurrence, for all steps at once
        dn = (1 - z) * (1 - n * n)
        dr = hn * (r * (1 - r))
        dz = (_previous(xp, h0, y, reverse) - n) * (z * (1 - z))
        dx, dhp = xp.empty_like(px), xp.empty_like(px)
        dh = None
        for t in reversed(_order(steps, reverse)):
            g = gy[t] if dh is None else gy[t] + dh
            e = dhp[t]
            du = xp.multiply(g, dn[t], out=dx[t, :, 2 * k:])
            xp.multiply(du, dr[t], out=e[:, :k])
            xp.multiply(g, dz[t], out=e[:, k:2 * k])
            xp.multiply(du, r[t], out=e[:, 2 * k:])
            dh = g * z[t]
            dh += gemm.matmul(xp, e, w)
        dx[..., :2 * k] = dhp[..., :2 * k]
        dw, db = _weight_grads(xp, dhp, _previous(xp, h0, y, reverse))
        return dx, dh, dw, db

    def infer(self, gy, work, y, px, h0, w, *b, reverse):
        _check(self.name, 3, px, h0, w, b)
        return TensorSpec(px.shape, px.dtype), h0, w, TensorSpec((w.shape[0],), w.dtype)

    def flops(self, gy, work, y, px, h0, w, *b, reverse):
        return 4 * math.prod(px.shape) * h0.shape[-1] + 16 * math.prod(y.shape)


def _lstm_backward_numba(xp, kernels, gy, gcs, act, cs, px, y, h0, c0, w, reverse):
    """:class:`LSTMScanBackward` with each step's pointwise part one numba pass."""
    step, tc, cprev = kernels.lstm_backward_step, xp.tanh(cs), _previous(xp, c0, cs, reverse)
    da, dc = xp.empty_like(px), xp.empty(h0.shape, h0.dtype)
    dh = dc
    for n, t in enumerate(reversed(_order(px.shape[0], reverse))):
        step(gy, gcs, act, tc, cprev, dh, dc, da, t, n == 0)
        dh = gemm.matmul(xp, da[t], w)
    dw, db = _weight_grads(xp, da, _previous(xp, h0, y, reverse))
    return da, dh, dc, dw, db


def _gru_backward_numba(xp, kernels, gy, work, px, y, h0, w, reverse):
    """:class:`GRUScanBackward` with each step's pointwise part one numba pass."""
    step, prev = kernels.gru_backward_step, _previous(xp, h0, y, reverse)
    dx, dhp, gz = xp.empty_like(px), xp.empty_like(px), xp.empty(h0.shape, h0.dtype)
    mm = gz
    for n, t in enumerate(reversed(_order(px.shape[0], reverse))):
        step(gy, work, prev, mm, gz, dx, dhp, t, n == 0)
        mm = gemm.matmul(xp, dhp[t], w)
    dw, db = _weight_grads(xp, dhp, prev)
    return dx, gz + mm, dw, db


def _one_dtype(op: str, *operands: Tensor) -> None:
    """The kernels' dtypes (eager runs no infer rule): float32 or float64, all alike."""
    if not _fused(*operands):
        raise DTypeError(f"{op}: expected float32 or float64 operands of one dtype, got "
                         + ", ".join(t.dtype.name for t in operands))


def lstm_scan(px: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, b_hh: Tensor | None,
              reverse: bool = False) -> tuple[Tensor, Tensor]:
    """The hidden and cell states ``(y, cs)`` (``(T, B, H)`` each) of an LSTM layer
    direction from its projected inputs ``px`` ``(T, B, 4H)`` (gates i, f, g, o) and
    initial states ``h0``, ``c0`` ``(B, H)``; float32 or float64 operands of one dtype."""
    b = () if b_hh is None else (b_hh,)
    _one_dtype("lstm_scan", px, h0, c0, w_hh, *b)
    y, cs, _ = apply(LSTMScan, px, h0, c0, w_hh, *b, reverse=reverse)
    return y, cs


def gru_scan(px: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor | None,
             reverse: bool = False) -> Tensor:
    """The hidden states ``y`` ``(T, B, H)`` of a GRU layer direction from its projected
    inputs ``px`` ``(T, B, 3H)`` (gates r, z, n) and initial state ``h0`` ``(B, H)``."""
    b = () if b_hh is None else (b_hh,)
    _one_dtype("gru_scan", px, h0, w_hh, *b)
    return apply(GRUScan, px, h0, w_hh, *b, reverse=reverse)[0]
