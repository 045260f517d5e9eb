"""``a + alpha * b`` (``add``, and ``sub`` with ``-alpha``) of complex tensors as one primitive,
as PyTorch's kernel computes it whatever ``alpha`` is: the product ``alpha * b`` is a complex
product (``(1+0j) * (inf+0j)`` is ``inf+nanj``), then the sum. ``alpha`` of 1 is
:class:`ember.ops.arithmetic.Add`'s own; two primitives in a row would take the product twice.
"""

from __future__ import annotations

from ember.layouts import in_operands_layout
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.complex_parts import Holomorphic
from ember.ops.primitive import Primitive, primitive

__all__: list[str] = []


class _ComplexScaled(Holomorphic, Primitive):
    """``a + factor * b`` of two complex tensors of one dtype (broadcast), ``factor`` a
    number."""

    def forward(self, xp, a, b, *, factor):
        r = xp.add(a, xp.multiply(b, factor))
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def infer(self, a, b, *, factor):
        return broadcast_spec(a, b, op=self.name)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(g, a.shape) if a.requires_grad else None,
                sum_to(g * ctx.params["factor"], b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        return da + db * ctx.params["factor"]


@primitive
class ComplexScaledAdd(_ComplexScaled):
    """``add``'s: ``a + alpha * b``.

    Example:
        >>> z = ember.tensor([complex("inf"), 1j])
        >>> ember.add(z, z, alpha=2)
        tensor([inf+nanj, 0.+3.j])
    """

    name = "add_scaled_complex"
    backward_name = "AddBackward0"


@primitive
class ComplexScaledSub(_ComplexScaled):
    """``sub``'s: the same sum, ``factor`` being ``-alpha``.

    Example:
        >>> z = ember.tensor([1 + 1j])
        >>> ember.sub(z, z, alpha=0.5)
        tensor([0.5000+0.5000j])
    """

    name = "sub_scaled_complex"
    backward_name = "SubBackward0"
