"""``logsumexp``: ``log(sum(exp(x)))`` over dimensions without overflow, one fused primitive
in eager float32/float64 and a composite of the reductions (``reduce.py``) elsewhere."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.autograd.graph import name_node
from ember.ops.compare import isfinite
from ember.ops.convert import to_float
from ember.ops.creation import zeros_like
from ember.ops.dims import Dim, reduce_dims, reduced_shape, with_reduced_dims
from ember.ops.primitive import DISPATCH, apply, primitive
from ember.ops.reduce import AMax, Reduction, Sum
from ember.ops.select import where
from ember.ops.unary import Exp, Log, exp, log
from ember.tensor import Tensor, method

__all__ = ["logsumexp"]


@primitive
class Logsumexp(Reduction):
    """``log(sum(exp(x)))`` over ``dims`` of a real float32/float64 tensor holding elements,
    the max factored out: eager :func:`logsumexp` in one op (it was nine), computing what the
    composite below computes, bit for bit. Its gradient is PyTorch's ``g * exp(x - out)``,
    in Ember ops; under a transform ``logsumexp`` stays the composite."""

    name = "logsumexp"
    backward_name = "LogsumexpBackward0"
    save_outputs = True

    def forward(self, xp, a, *, dims, keepdim):
        top = AMax.forward(xp, a, dims=dims, keepdim=True)
        top = xp.where(xp.isfinite(top), top, 0)  # all -inf (or inf) fibers: shift by 0
        total = Sum.forward(xp, Exp.forward(xp, a - top), dims=dims, keepdim=keepdim)
        return Log.forward(xp, total) + (top if keepdim else
                                         top.reshape(reduced_shape(a.shape, dims, False)))

    def vjp(self, ctx, g):
        return self._softmax(ctx) * self._kept(ctx, g)

    def jvp(self, ctx, dx):
        return apply(Sum, dx * self._softmax(ctx), **ctx.params)

    def _kept(self, ctx: Any, t: Tensor) -> Tensor:
        p = ctx.params
        return t if p["keepdim"] else with_reduced_dims(t, ctx.inputs[0].shape, p["dims"], True)

    def _softmax(self, ctx: Any) -> Tensor:
        return exp(ctx.inputs[0] - self._kept(ctx, ctx.out))


_LOGSUMEXP_FUSED = (np.dtype(np.float32), np.dtype(np.float64))


@method()
def logsumexp(input: Tensor, dim: Dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, computed without overflow (the max is factored out;
    for complex input, the largest real part).

    Example:
        >>> ember.tensor([0.0, 0.0]).logsumexp(0)
        tensor(0.6931)
    """
    x = to_float(input)
    dims = reduce_dims(x, dim, "logsumexp")
    if x.numel() == 0:
        return log(apply(Sum, exp(x), dims=dims, keepdim=keepdim))
    if x._data.dtype in _LOGSUMEXP_FUSED and (DISPATCH.handler is None or
                                              DISPATCH.only_observers()):
        return apply(Logsumexp, x, dims=dims, keepdim=keepdim)
    top = apply(AMax, x.detach().real, dims=dims, keepdim=True)  # (complex: the real parts)
    top = where(isfinite(top), top, zeros_like(top))  # all -inf (or inf) fibers: shift by 0
    total = apply(Sum, exp(x - top), dims=dims, keepdim=keepdim)
    out = log(total) + (top if keepdim else with_reduced_dims(top, x.shape, dims, False))
    return name_node(out, "LogsumexpBackward0")
