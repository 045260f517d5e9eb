"""leaky_relu's and hardtanh's backward as primitives, ``leaky_relu_grad`` and
``hardtanh_grad``, of the upstream gradient ``v`` and the input ``x``: ``v`` where ``x > 0``
else ``v · negative_slope``; ``v`` where ``min_val < x < max_val`` else 0. Float32/float64
arrays of one shape and dense layout take numba's one pass
(:mod:`ember.ops.slope_grads_numba`), others the composite's compare, product and select;
the same values. Each is linear in ``v`` with ``x`` a mask, so its rules are itself.
"""

from __future__ import annotations

from ember.backend import compiled
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.creation import zeros_like
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.relu_kernel import slope_grad
from ember.ops.select import Where

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.slope_grads_numba")
# elements: below, NumPy's compare, product and select cost no more than the pass (2 cores,
# float32, 2048: 4.3 vs 5.3 µs; 8192: 12.3 vs 6.1 µs, NumPy's select of a random mask branching)
_SMALL = 1 << 12


class _MaskedGrad(Primitive):
    """``v`` times a slope chosen by ``x``: linear in ``v``, no gradient for ``x``."""

    def reads(self, ctx, i):
        return i == 1

    def infer(self, v, x, **params):
        return broadcast_spec(v, x, op=self.name)

    def vjp(self, ctx, g):
        v, x = ctx.inputs  # (x a mask: its gradient is zeros, as PyTorch's)
        return sum_to(apply(self, g, x, **ctx.params), v.shape), \
            zeros_like(x) if x.requires_grad else None

    def jvp(self, ctx, dv, dx):
        return apply(self, dv, ctx.inputs[1], **ctx.params)


def leaky_relu_array(xp, a, negative_slope: float):
    """leaky_relu's values ``a`` where ``a > 0`` else ``a · negative_slope``, in one numba pass
    (its gradient's kernel with ``v = x = a``: NumPy's product and maximum or select make two,
    1M float32 650 -> 350 µs), or None where it does not apply."""
    if 0 in getattr(a, "strides", (0,)):  # (a broadcast: the NumPy calls' C-ordered result)
        return None
    return slope_grad(xp, _KERNELS, LeakyReluGrad.name, (a, a), (negative_slope, 0.0),
                      _SMALL)


@primitive
class LeakyReluGrad(_MaskedGrad):
    name = "leaky_relu_grad"

    def forward(self, xp, v, x, *, negative_slope):
        out = slope_grad(xp, _KERNELS, self.name, (v, x), (negative_slope, 0.0), _SMALL)
        return Where.forward(xp, x > 0, v, v * negative_slope) if out is None else out


@primitive
class HardtanhGrad(_MaskedGrad):
    name = "hardtanh_grad"

    def forward(self, xp, v, x, *, min_val, max_val):
        out = slope_grad(xp, _KERNELS, self.name, (v, x), (min_val, max_val), _SMALL)
        if out is not None:
            return out
        return Where.forward(xp, (x > min_val) & (x < max_val), v, xp.zeros((), v.dtype))
