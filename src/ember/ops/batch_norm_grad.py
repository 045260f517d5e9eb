"""Batch norm's input gradient as one primitive: ``g·k + (x - mean)·c1 - c2`` of the output
gradient ``g`` and input ``x`` (N, C, …) with per-channel ``mean``, ``k`` (weight·rstd),
``c1`` and ``c2`` (the coefficients of the batch's sums, shaped (1, C, 1, …)). NumPy takes
five full passes over the batch for it; a float32/float64 batch whose gradient and input
share a dense layout takes numba's one (:mod:`ember.ops.batch_norm_grad_numba`), the same
values. Its rules are the expression's, in Ember ops, so higher derivatives follow.
:func:`plain_coefficients` computes ``k``, ``c1``, ``c2`` (and the weight's gradient) for
a backward that records nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.unary import Rsqrt

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.batch_norm_grad_numba")
_SMALL = 1 << 13  # elements: below, NumPy's calls cost no more than numba's dispatch
_SHARE = 1 << 19  # elements a piece takes at least


def _blocks(a: Any) -> tuple[str, Any] | None:
    """``a`` (N, C, …) as a kernel's blocks: (rows, C) with the channels innermost
    (channels-last, or 2-D), or (N, C, ∏spatial) in C order; None for another layout."""
    if a.ndim > 2 and a.flags.c_contiguous:
        return "channel_planes", a.reshape(a.shape[0], a.shape[1], -1)
    moved = a.transpose((0, *range(2, a.ndim), 1))
    return ("channels_inner", moved.reshape(-1, a.shape[1])) if moved.flags.c_contiguous \
        else None


def _looped(xp: Any, g: Any, x: Any, coefficients: tuple) -> Any:
    """The gradient by numba's loop into a new array in ``x``'s layout, or None where the loop
    does not apply (NumPy's calls then)."""
    if xp is not np or g.dtype not in (np.float32, np.float64) or g.size <= _SMALL or \
            g.ndim < 2 or g.shape != x.shape or g.strides != x.strides or \
            any(c.dtype != g.dtype for c in (x, *coefficients)) or \
            any(c.size != g.shape[1] for c in coefficients) or not compiled.numba_enabled():
        return None
    laid, kernels = _blocks(g), compiled.load(_KERNELS)  # (None if they fail to load)
    if laid is None or kernels is None:
        return None
    name, g_blocks = laid
    out = np.empty_like(x)
    vectors = [c.reshape(-1).copy() for c in coefficients]  # (C,) each, writable
    per_row = g_blocks[0].size
    parallel.over_rows(getattr(kernels, name),
                       (g_blocks, _blocks(x)[1], _blocks(out)[1]),
                       max(1, _SHARE // max(per_row, 1)), *vectors)
    return out


@primitive
class BatchNormInputGrad(Primitive):
    name = "batch_norm_input_grad"
    allocates = True

    def forward(self, xp, g, x, mean, k, c1, c2):
        out = _looped(xp, g, x, (mean, k, c1, c2))
        if out is not None:
            return out
        return xp.subtract(xp.add(g * k, (x - mean) * c1), c2)  # (the composite's calls)

    def infer(self, g, x, mean, k, c1, c2):
        return broadcast_spec(g, x, mean, k, c1, c2, op=self.name)

    def vjp(self, ctx, v):
        g, x, mean, k, c1, c2 = ctx.inputs
        need = [t.requires_grad for t in ctx.inputs]
        via_c1 = v * c1 if need[1] or need[2] else None
        return (sum_to(v * k, g.shape) if need[0] else None,
                sum_to(via_c1, x.shape) if need[1] else None,
                sum_to(-via_c1, mean.shape) if need[2] else None,
                sum_to(v * g, k.shape) if need[3] else None,
                sum_to(v * (x - mean), c1.shape) if need[4] else None,
                sum_to(-v, c2.shape) if need[5] else None)

    def jvp(self, ctx, dg, dx, dmean, dk, dc1, dc2):
        g, x, mean, k, c1, c2 = ctx.inputs
        return dg * k + g * dk + (dx - dmean) * c1 + (x - mean) * dc1 - dc2


def batch_norm_input_grad(g: Any, x: Any, mean: Any, k: Any, c1: Any, c2: Any) -> Any:
    """``g·k + (x - mean)·c1 - c2``: one op for float32/float64, else the composite."""
    if g.dtype is not x.dtype or g.dtype.name not in ("float32", "float64"):
        return g * k + (x - mean) * c1 - c2
    return apply(BatchNormInputGrad, g, x, mean, k, c1, c2)


def plain_coefficients(var: Any, weight: Any, g_sum: Any, g_dot: Any, eps: float,
                       n: int) -> tuple[Any, Any, Any, Any]:
    """Batch norm's per-channel backward steps on the (C,) float32/float64 arrays of the
    batch variance, the weight and the sums ``Σg``, ``Σg·(x - mean)`` over ``n`` values per
    channel: the weight's gradient ``Σg·x̂``, ``k``, ``c1`` and ``c2``, computed as the ops of
    ``BatchNorm.vjp`` compute them, in their order and dtype (bit for bit), without their
    ~15 primitives' overhead (most of a small batch norm's backward). For a backward that
    records nothing (no ``create_graph``, no transform)."""
    kind = var.dtype.type
    rstd = Rsqrt.forward(np, var + kind(eps))
    k = weight * rstd
    return (g_dot * rstd, k, -k * rstd * rstd * g_dot / kind(n), k * g_sum / kind(n))
