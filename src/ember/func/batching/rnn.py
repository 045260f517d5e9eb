"""Batching rules of the whole-sequence recurrent scans (:mod:`ember.ops.rnn_scan`).

A scan's inputs are time-major sequences ``(T, B, …)``, states ``(B, H)`` and the recurrent
weight and bias. When the weight and bias are shared (vmap over data: per-sample outputs or
gradients), the vmapped axis joins the scan's batch ``B``: one scan over ``(T, V*B, …)``,
whose rows are each computed as a scan of its own sample computes them: outputs bit-equal to
a loop over the samples (gradients too, but in the last bits where each sample's batch is one
row: the backward's ``d h W_hh`` is then a matrix-vector product per sample, rounded apart).
A weight gradient is a sum over the batch, so the backward's per-sample ``dW``/``db`` are then
one product and one sum per sample of the folded scan's ``d``. A per-sample weight (an
ensemble) runs one scan per sample.
"""

from __future__ import annotations

from typing import Any

from ember.func.batching import batched, merge_batch, move, prim, reshape, rule, split_batch
from ember.ops.creation import zeros
from ember.ops.join import concat, stack
from ember.ops.primitive import TensorSpec, apply

# per scan: the kinds of its inputs (t: time-major sequence, y: the saved hidden states, s: a
# state, w: the weight, then the optional bias) and of its outputs (t, s, or g: a weight or
# bias gradient)
_LAYOUTS = {
    "lstm_scan": ("tssw", "ttt"),
    "lstm_scan_backward": ("ttttytssw", "tssgg"),
    "gru_scan": ("tsw", "tt"),
    "gru_scan_backward": ("ttytsw", "tsgg"),
}


def _fold(x: Any, kind: str, b: int, is_b: bool) -> Any:
    """A batched operand with its vmapped axis merged into the scan's batch axis."""
    x = batched(x, b, is_b)
    if kind == "s":
        return merge_batch(x)
    shape = tuple(x.shape)  # (V, T, B, …) -> (T, V*B, …)
    return reshape(move(x, 0, 1), (shape[1], b * shape[2]) + shape[3:])


def _unfold(y: Any, kind: str, b: int, n: int) -> Any:
    """The inverse of :func:`_fold` for a scan's batch of ``n`` rows a sample."""
    if kind == "s":
        return split_batch(y, b, n)
    shape = tuple(y.shape)  # (T, V*B, …) -> (V, T, B, …)
    return move(reshape(y, (shape[0], b, n) + shape[2:]), 1, 0)


def _per_sample_weight_grads(d: Any, prev: Any) -> tuple[Any, Any]:
    """``dW = Σ dᵀ h_prev`` and ``db = Σ d`` of each sample, from ``(V, T, B, …)`` operands,
    each as the backward kernel computes it (one product over all its steps and rows)."""
    if not d.shape[0]:
        g = d.shape[-1]
        return (zeros((0, g, prev.shape[-1]), dtype=d.dtype, device=d.device),
                zeros((0, g), dtype=d.dtype, device=d.device))
    dws, dbs = [], []
    for i in range(d.shape[0]):
        di = d[i].reshape(-1, d.shape[-1])
        dws.append(di.t() @ prev[i].reshape(-1, prev.shape[-1]))
        dbs.append(di.sum(0))
    return stack(dws), stack(dbs)


def _previous(h0: Any, y: Any, reverse: bool) -> Any:
    """Each sample's starting state of each step, ``(V, T, B, H)``, from ``h0`` ``(V, B, H)``
    and ``y`` ``(V, T, B, H)`` (the kernels' ``_previous``)."""
    h0 = h0[:, None]
    return concat([y[:, 1:], h0] if reverse else [h0, y[:, :-1]], 1)


def _folded(name: str, b: int, xs: tuple, bs: tuple, params: dict) -> tuple:
    ins, outs = _LAYOUTS[name]
    kinds = ins + "w" * (len(xs) - len(ins))
    folded = [x if k == "w" else _fold(x, "t" if k == "y" else k, b, is_b)
              for x, k, is_b in zip(xs, kinds, bs)]
    got = apply(prim(name), *folded, **params)
    n = xs[0].shape[2 if bs[0] else 1]  # (each sample's batch: V*B does not say when V is 0)
    result = [_unfold(y, k, b, n) for y, k in zip(got, outs) if k != "g"]
    if "g" in outs:  # the folded kernel summed dW over every sample: each sample's own
        d = result[0] if name == "lstm_scan_backward" else _gru_dhp(result[0], xs, bs, b)
        h0, y = batched(xs[ins.index("s")], b, bs[ins.index("s")]), \
            batched(xs[ins.index("y")], b, bs[ins.index("y")])
        result += _per_sample_weight_grads(d, _previous(h0, y, params["reverse"]))
    return tuple(result)


def _gru_dhp(dx: Any, xs: tuple, bs: tuple, b: int) -> Any:
    """The GRU backward's ``d (h W_hhᵀ + b_hh)`` from its ``d px``: the same in the r and z
    gates, times ``r`` in the candidate's (the kernel's products, rounded alike)."""
    k = dx.shape[-1] // 3
    r = batched(xs[1], b, bs[1])[..., :k]
    return concat([dx[..., :2 * k], dx[..., 2 * k:] * r], -1)


def _empty(name: str, xs: tuple, params: dict) -> tuple:
    """The outputs of a scan over 0 samples (of per-sample weights)."""
    specs = prim(name).infer(*(TensorSpec(tuple(x.shape)[1:], x.dtype) for x in xs), **params)
    return tuple(zeros((0,) + tuple(s.shape), dtype=s.dtype, device=xs[0].device)
                 for s in specs)


def _scan_rule(name: str) -> Any:
    def run(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        if not any(bs[len(_LAYOUTS[name][0]) - 1:]):  # shared weight and bias
            return _folded(name, b, xs, bs, params)
        xs = tuple(batched(t, b, is_b) for t, is_b in zip(xs, bs))
        if not b:
            return _empty(name, xs, params)
        outs = [apply(prim(name), *(t[i] for t in xs), **params) for i in range(b)]
        return tuple(stack([o[j] for o in outs]) for j in range(len(outs[0])))
    return run


for _name in _LAYOUTS:
    rule(_name)(_scan_rule(_name))
