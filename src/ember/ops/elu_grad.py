"""elu's (and selu's and celu's) backward as one primitive, ``elu_grad``, of the upstream
gradient ``v`` and elu's input ``x`` (``from_input``, as PyTorch's elu) or output ``y`` (as
its in-place elu_): ``v · scale·alpha·input_scale · exp(input_scale·x)`` where ``x <= 0``, or
``v · (y + scale·alpha) · input_scale`` where ``y <= 0``, and ``v · scale`` elsewhere (a NaN
takes the linear side). Float32/float64 arrays of one shape and dense layout take numba's one
pass (:mod:`ember.ops.elu_numba`; from x, float32's exp in the pass, float64's after NumPy's
exp); others the composite's NumPy calls; the same values either way, except float32's exp
from x (numba's and NumPy's differ in the last bits). Its rules, in Ember ops, are the
composite's, so higher derivatives follow.
"""

from __future__ import annotations

import numpy as np

from ember.backend import compiled
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.relu_kernel import slope_grad
from ember.ops.select import Where, where
from ember.tensor import Tensor

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.elu_numba")


@primitive
class EluGrad(Primitive):
    name = "elu_grad"

    def reads(self, ctx, i):
        return i == 1 or ctx.inputs[1].requires_grad  # (s's gradient reads v)

    def forward(self, xp, v, s, *, alpha_scale, input_scale, scale, from_input):
        linear = v if scale == 1 else v * scale
        if from_input:  # (exp(x) keeps the slope's last bits, which y + alpha loses)
            slope = alpha_scale * input_scale
            if v.dtype == np.float32 and input_scale >= 0:  # (the exp in the pass)
                out = slope_grad(xp, _KERNELS, "elu_grad_from_input", (v, s),
                                 (slope, input_scale, scale))
                if out is not None:
                    return out
            e = xp.exp(s if input_scale == 1 else s * input_scale)  # (inf above: unused)
            out = slope_grad(xp, _KERNELS, "elu_grad_from_exp", (v, s, e), (slope, scale))
            return Where.forward(xp, s <= 0, v * (e * slope), linear) if out is None else out
        out = slope_grad(xp, _KERNELS, "elu_grad", (v, s), (alpha_scale, input_scale, scale))
        if out is not None:
            return out
        slope = s + alpha_scale  # (the composite's steps; a product by 1 is no step)
        if input_scale != 1:
            slope = slope * input_scale
        return Where.forward(xp, s <= 0, v * slope, linear)

    def infer(self, v, s, **params):
        return broadcast_spec(v, s, op=self.name)

    def vjp(self, ctx, g):
        v, s = ctx.inputs
        gv = sum_to(apply(EluGrad, g, s, **ctx.params), v.shape)
        if not s.requires_grad:
            return gv, None
        return gv, sum_to(self._in_s(ctx, g * v), s.shape)

    def jvp(self, ctx, dv, ds):
        v, s = ctx.inputs
        return apply(EluGrad, dv, s, **ctx.params) + self._in_s(ctx, v * ds)

    def _in_s(self, ctx, w: Tensor) -> Tensor:
        """``w`` times the slope's derivative in ``s`` (x or y): 0 on the linear side and at
        ±0 (PyTorch's elu_double_backward masks with s < 0)."""
        s, p = ctx.inputs[1], ctx.params
        below = where(s < 0, apply(EluGrad, w, s, **p) if p["from_input"] else w, 0)
        return below if p["input_scale"] == 1 else below * p["input_scale"]


def elu_grad(v: Tensor, s: Tensor, alpha_scale: float, input_scale: float, scale: float,
             from_input: bool) -> Tensor:
    """elu's backward ``v · dy/dx`` from its input ``s`` (``from_input``) or output (then the
    slope below 0 not negative)."""
    return apply(EluGrad, v, s, alpha_scale=alpha_scale, input_scale=input_scale, scale=scale,
                 from_input=from_input)
