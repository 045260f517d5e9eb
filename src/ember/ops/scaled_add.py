"""``a + alpha * b`` (``add``, and ``sub``, ``rsub`` with ``-alpha``) of two float16 (or two
bfloat16) tensors as one primitive, with PyTorch's values and gradients: its vector loop
rounds ``alpha`` to their dtype and takes a float32 fused multiply-add, rounded once to the
half dtype (rounding ``alpha * b`` first was an ulp off in 1 element of 8); its gradients are
``grad`` and ``grad * alpha`` (``alpha`` a float32 there, as a number scaling a half tensor),
each summed to its input's shape. A tail past a multiple of 32 elements, which PyTorch's scalar
loop computes step by step in the half dtype, may differ by an ulp.
"""

from __future__ import annotations

import numpy as np

from ember.layouts import in_operands_layout
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.primitive import Primitive, primitive

__all__: list[str] = []


class _HalfScaled(Primitive):
    """``a + factor * b`` of two half tensors of one dtype (broadcast), ``factor`` a number."""

    def forward(self, xp, a, b, *, factor):
        product = b.astype(np.float64) * float(a.dtype.type(factor))  # (exact)
        r = (a.astype(np.float64) + product).astype(np.float32).astype(a.dtype)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)  # (as Add's)

    def infer(self, a, b, *, factor):
        return broadcast_spec(a, b, op=self.name)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(g, a.shape) if a.requires_grad else None,
                sum_to(g * ctx.params["factor"], b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        return da + db * ctx.params["factor"]


@primitive
class HalfScaledAdd(_HalfScaled):
    name = "add_scaled_half"
    backward_name = "AddBackward0"


@primitive
class HalfScaledSub(_HalfScaled):
    """``sub``'s: the same sum, ``factor`` being ``-alpha``."""

    name = "sub_scaled_half"
    backward_name = "SubBackward0"
