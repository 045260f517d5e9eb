"""elu's (and selu's and celu's) backward as one primitive, ``elu_grad``: from the upstream
gradient ``v`` and elu's output ``y``, ``v · (y + scale·alpha) · input_scale`` where
``y <= 0`` and ``v · scale`` elsewhere (a NaN takes the linear side). Float32/float64 arrays
of one shape and dense layout take numba's one pass (:mod:`ember.ops.elu_numba`); others the
composite's NumPy calls; the same values either way. Its rules, in Ember ops, are the
composite's, so higher derivatives follow.
"""

from __future__ import annotations

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
        return i == 1 or ctx.inputs[1].requires_grad  # (y's gradient reads v)

    def forward(self, xp, v, y, *, alpha_scale, input_scale, scale):
        out = slope_grad(xp, _KERNELS, "elu_grad", v, y, (alpha_scale, input_scale, scale))
        if out is not None:
            return out
        slope = y + alpha_scale  # (the composite's steps; a product by 1 is no step)
        if input_scale != 1:
            slope = slope * input_scale
        return Where.forward(xp, y <= 0, v * slope, v if scale == 1 else v * scale)

    def infer(self, v, y, **params):
        return broadcast_spec(v, y, op=self.name)

    def vjp(self, ctx, g):
        v, y = ctx.inputs
        gv = sum_to(apply(EluGrad, g, y, **ctx.params), v.shape)
        if not y.requires_grad:
            return gv, None
        gy = where(y <= 0, g, 0) * v
        scale = ctx.params["input_scale"]
        return gv, sum_to(gy if scale == 1 else gy * scale, y.shape)

    def jvp(self, ctx, dv, dy):
        v, y = ctx.inputs
        return apply(EluGrad, dv, y, **ctx.params) + \
            where(y <= 0, v * dy * ctx.params["input_scale"], 0)


def elu_grad(v: Tensor, y: Tensor, alpha_scale: float, input_scale: float,
             scale: float) -> Tensor:
    """elu's backward ``v · dy/dx`` from its output ``y`` (the slope below 0 not negative)."""
    return apply(EluGrad, v, y, alpha_scale=alpha_scale, input_scale=input_scale, scale=scale)
