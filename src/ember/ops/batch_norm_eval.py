"""Evaluation-mode batch norm (running statistics) with its affine part as one primitive,
for eager float32/float64 NumPy input: ``((x - mean) · rstd) · weight + bias`` per channel
(dimension 1), ``rstd = 1 / sqrt(var + eps)``, in one numba pass
(:mod:`ember.ops.batch_norm_eval_numba`) where the composite took four (and nine primitives
with their reshapes); the backward is one pass per gradient asked for plus the composite's
sums. Frozen-BN fine-tuning (``model.eval()`` with trainable weights) runs this. Values and
gradients are the composite's bit for bit; its rules are the composite's in Ember ops, so
higher derivatives follow. Transforms, other dtypes and layouts keep the composite
(:func:`ember.ops.normalization.batch_norm`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.autograd.grad_mode import GRAD
from ember.backend import compiled, gemm, parallel
from ember.ops.broadcast import sum_to
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, _wrap

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.batch_norm_eval_numba")
_SHARE = 1 << 19  # elements a piece takes at least
_PLAIN = (np.dtype(np.float32), np.dtype(np.float64))


def applies(input: Tensor, mean: Tensor, var: Tensor, weight: Tensor | None,
            bias: Tensor | None) -> bool:
    """Whether :class:`BatchNormEval` computes this evaluation-mode batch norm: eager, a
    C-ordered float32/float64 NumPy input, weight and bias given, all
    of its dtype, statistics that need no gradient, numba on."""
    data = input._data
    return not DISPATCH.stack and weight is not None and bias is not None and \
        type(data) is np.ndarray and data.dtype in _PLAIN and \
        data.flags.c_contiguous and not (mean.requires_grad or var.requires_grad) and \
        all(t.dtype is input.dtype and type(t._data) is np.ndarray
            for t in (mean, var, weight, bias)) and compiled.numba_enabled() and \
        compiled.load(_KERNELS) is not None  # (None where they fail to load)


def _planes(a: Any) -> Any:
    return a.reshape(a.shape[0], a.shape[1], -1)


def _rows(a: Any) -> int:
    return max(1, _SHARE // max(a[0].size, 1))


def _rstd(var: Any, eps: float) -> Any:
    """``rsqrt(var + eps)`` as the composite's ops compute it (in ``var``'s dtype)."""
    return np.reciprocal(np.sqrt(var + eps))


@primitive
class BatchNormEval(Primitive):
    """``((x - mean) · rsqrt(var + eps)) · weight + bias`` per channel of ``x`` (N, C, …),
    the (C,) statistics held fixed (they get no gradient)."""

    name = "batch_norm_eval"

    def reads(self, ctx, i):
        x, mean, var, weight, _ = (t.requires_grad for t in ctx.inputs)
        # the input and mean for the weight's (and var's) gradient, the weight for the
        # input's (and the statistics'), var always, the bias never
        return (weight or var, weight or var, True, x or mean or var, False)[i]

    def forward(self, xp, x, mean, var, weight, bias, *, eps):
        out = np.empty_like(x)
        parallel.over_rows(compiled.load(_KERNELS).forward, (_planes(x), _planes(out)),
                           _rows(x), mean.copy(), _rstd(var, eps), weight.copy(),
                           bias.copy())
        return out

    def infer(self, x, mean, var, weight, bias, *, eps):
        return TensorSpec(tuple(x.shape), x.dtype)

    def _per_channel(self, ctx):
        x, mean, var, weight, _ = ctx.inputs
        shape = (x.shape[1],) + (1,) * (x.ndim - 2)
        return (mean.reshape(shape), (var.reshape(shape) + ctx.params["eps"]).rsqrt(),
                weight.reshape(shape))

    def vjp(self, ctx, g):
        x, m, v, weight, bias = ctx.inputs
        if not GRAD.enabled and not DISPATCH.stack and type(g._data) is np.ndarray and \
                g._data.dtype == x._data.dtype and g._data.flags.c_contiguous and \
                not (m.requires_grad or v.requires_grad):
            return self._plain_vjp(ctx, g)
        mean, rstd, w = self._per_channel(ctx)  # (the composite's steps, in its order)
        gx = g * w * rstd  # (the centred input's gradient)
        gw = sum_to(g * ((x - mean) * rstd), w.shape).reshape(weight.shape) \
            if weight.requires_grad else None
        gb = sum_to(g, w.shape).reshape(bias.shape) if bias.requires_grad else None
        gm = -sum_to(gx, w.shape).reshape(m.shape) if m.requires_grad else None
        gv = (sum_to(g * w * (x - mean), w.shape) * (rstd * rstd * rstd) * -0.5).reshape(
            v.shape) if v.requires_grad else None
        return gx if x.requires_grad else None, gm, gv, gw, gb

    def _plain_vjp(self, ctx, g):
        """The gradients on the arrays (recording nothing): numba's pass per gradient, the
        weight's and bias's sums as ``sum_to``'s."""
        x, mean, var, weight, bias = ctx.inputs
        kernels, dev, ga = compiled.load(_KERNELS), x._device, g._data
        rstd = _rstd(var._data, ctx.params["eps"])
        axes = (0, *(d for d in range(2, x.ndim) if x.shape[d] != 1))  # (sum_to's)
        gx = gw = gb = None
        if x.requires_grad:
            out = np.empty_like(ga)
            parallel.over_rows(kernels.input_grad, (_planes(ga), _planes(out)), _rows(ga),
                               weight._data.copy(), rstd)
            gx = _wrap(out, dev)
        if weight.requires_grad:
            product = np.empty_like(ga)
            parallel.over_rows(kernels.normalized_product,
                               (_planes(ga), _planes(x._data), _planes(product)), _rows(ga),
                               mean._data.copy(), rstd)
            gw = _wrap(gemm.sum_axes(np, product, axes).reshape(weight.shape), dev)
        if bias.requires_grad:
            gb = _wrap(gemm.sum_axes(np, ga, axes).reshape(bias.shape), dev)
        return gx, None, None, gw, gb

    def jvp(self, ctx, dx, dmean, dvar, dweight, dbias):
        x = ctx.inputs[0]
        mean, rstd, w = self._per_channel(ctx)
        shape, xhat = w.shape, (x - mean) * rstd
        dxhat = (dx - dmean.reshape(shape)) * rstd - xhat * (rstd * rstd * dvar.reshape(shape)
                                                            / 2)
        return dxhat * w + xhat * dweight.reshape(shape) + dbias.reshape(shape)


def fused(input: Tensor, mean: Tensor, var: Tensor, weight: Tensor, bias: Tensor,
                    eps: float) -> Tensor:
    """The fused evaluation-mode batch norm, where :func:`applies` says it does."""
    return apply(BatchNormEval, input, mean, var, weight, bias, eps=float(eps))
