"""``a + alpha * b`` (``add``, and ``sub``, ``rsub`` with ``-alpha``) of two float16 (or two
bfloat16) tensors as one primitive, with PyTorch's values and gradients: its vector loop
rounds ``alpha`` to their dtype and takes a float32 fused multiply-add, rounded once to the
half dtype (rounding ``alpha * b`` first was an ulp off in 1 element of 8); its gradients are
``grad`` and ``grad * alpha`` (``alpha`` a float32 there, as a number scaling a half tensor),
each summed to its input's shape. Where its loop runs its scalar code instead (an innermost
run not contiguous in every operand, and each run's tail past a multiple of 32 elements:
:func:`ember.ops.torch_steps.scalar_steps`), it rounds ``alpha * b`` to the half dtype
first, and so does Ember; above 32768 elements PyTorch splits the loop among its threads
(tails at the split points, thread-count dependent, are left fused). The optimizers' half
updates (``p.add_(g, alpha=-lr)``) take the fused sum throughout (:func:`half_add`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.layouts import in_operands_layout
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.complex_scaled_add import ComplexScaledAdd, ComplexScaledSub
from ember.ops.fits import check_factor
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.torch_steps import scalar_steps
from ember.tensor import Tensor

__all__: list[str] = []


def as_half(value: float, dtype: Any) -> float:
    """``value`` rounded to the half-precision ``dtype``, as PyTorch rounds the scalar of
    ``add``/``add_`` (``alpha``, or ``eps`` in ``t.add_(eps)``) on such a tensor (``mul_``,
    ``addcmul_``, ``addcdiv_`` and ``lerp_`` keep theirs in float32).

    Example:
        >>> as_half(0.3, np.float16)
        0.300048828125
    """
    return float(np.asarray(value, dtype=dtype))


def half_add(xp: Any, a: Any, b: Any, alpha: float, out: Any = None) -> Any:
    """``a + alpha * b`` of half-precision arrays as PyTorch's ``add(a, b, alpha=alpha)`` on
    the CPU computes it: ``alpha`` rounded to ``a``'s dtype (its scalar type; ``mul_`` and
    ``addcmul_`` keep theirs in float32), the sum fused in float32 and rounded once (written
    into ``out`` if given). NumPy's ``a + alpha * b`` keeps ``alpha`` in float32 and gives
    float32: SGD's bfloat16 weights were off PyTorch's by an ulp in ~6 % of the elements.
    float32 arrays take it too (LBFGS): its fused multiply-add, where NumPy rounds twice.

    Example:
        >>> h = np.array([1.0, 2.0], np.float16)
        >>> half_add(np, h, h, 0.3)  # h + 0.3 * h
        array([1.3, 2.6], dtype=float16)
    """
    alpha = as_half(alpha, a.dtype)
    total = a.astype(xp.float64) + alpha * b.astype(xp.float64)  # (exact products)
    total = total.astype(xp.float32)
    if out is None:
        return total.astype(a.dtype)
    out[...] = total
    return out


_VECTOR = 32  # elements a vector step of PyTorch's half add takes (two float32 vectors)


def _rounded_first(xp: Any, a: Any, b: Any, factor: float, out: Any = None) -> Any:
    """``a + factor * b`` of half arrays as PyTorch's scalar loop computes it: ``factor``
    rounded to their dtype, the product rounded to it, then the sum (into ``out`` if given)."""
    f32 = xp.float32
    product = xp.multiply(b, f32(as_half(factor, a.dtype)), dtype=f32).astype(a.dtype)
    if out is None:
        out = xp.empty(a.shape, a.dtype)
    return xp.add(a, product, dtype=f32, out=out, casting="unsafe")


class _HalfScaled(Primitive):
    """``a + factor * b`` of two half tensors of one dtype (broadcast), ``factor`` a number
    (or a 0-d tensor, as ``alpha`` may be: read as its float)."""

    def forward(self, xp, a, b, *, factor):
        factor = float(factor)
        if a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:  # (one run)
            start = a.size - a.size % _VECTOR
            if start == 0:
                return _rounded_first(xp, a, b, factor)
            r = half_add(xp, a, b, factor)
            if start < a.size:
                tail = [x.reshape(-1)[start:] for x in (r, a, b)]
                tail[0][...] = _rounded_first(xp, *tail[1:], factor)
            return r
        r = in_operands_layout(xp, xp.empty(xp.broadcast_shapes(a.shape, b.shape), a.dtype),
                               a, b)  # (PyTorch's layout, its loop's order)
        a, b = xp.broadcast_arrays(a, b)
        where = scalar_steps(r, a, b, vector=_VECTOR)
        if where is True:
            return _rounded_first(xp, a, b, factor, out=r)
        half_add(xp, a, b, factor, out=r)
        if where.any():
            r[where] = _rounded_first(xp, a[where], b[where], factor)
        return r

    def infer(self, a, b, *, factor):
        return broadcast_spec(a, b, op=self.name)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(g, a.shape) if a.requires_grad else None,
                sum_to(g * float(ctx.params["factor"]), b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        return da + db * float(ctx.params["factor"])


@primitive
class HalfScaledAdd(_HalfScaled):
    """``add``'s: ``a + alpha * b``.

    Example:
        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float16)
        >>> ember.add(x, x, alpha=0.3)
        tensor([1.2998, 2.5996], dtype=ember.float16)
    """

    name = "add_scaled_half"
    backward_name = "AddBackward0"


@primitive
class HalfScaledSub(_HalfScaled):
    """``sub``'s: the same sum, ``factor`` being ``-alpha``.

    Example:
        >>> x = ember.tensor([1.0, 2.0], dtype=ember.bfloat16)
        >>> ember.sub(x, x, alpha=0.5)
        tensor([0.5000, 1.0000], dtype=ember.bfloat16)
    """

    name = "sub_scaled_half"
    backward_name = "SubBackward0"


def scaled_add(op: str, alpha: Any, factor: Any, a: Tensor, b: Tensor,
               operands: tuple) -> Tensor:
    """``a + factor * b`` (``factor``: ``alpha`` or ``-alpha``) of two half (or two complex)
    tensors as PyTorch computes it, for ``op`` (``"add"`` or ``"sub"``), ``alpha`` checked
    first (:func:`ember.ops.fits.check_factor`); ``operands`` are the op's arguments.

    Example:
        >>> z = ember.tensor([1 + 1j])
        >>> scaled_add("sub", 2, -2, z, z, (z, z))
        tensor([-1.-1.j])
    """
    check_factor(op, "alpha", alpha, a.dtype, operands)
    if a.dtype.is_complex:  # (a 0-d tensor alpha: its number)
        return apply(ComplexScaledAdd if op == "add" else ComplexScaledSub, a, b,
                     factor=factor.item() if isinstance(factor, Tensor) else factor)
    return apply(HalfScaledAdd if op == "add" else HalfScaledSub, a, b, factor=factor)
