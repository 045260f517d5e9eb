"""``var`` of a real float32/float64 tensor as one primitive: eager ``var`` and ``std`` were
seven primitives (the mean as a sum and a division, the deviations, their squares, a sum, a
division and a reshape of the mean that var threw away), each paying the per-op overhead.
Its sums are :class:`~ember.ops.reduce.Sum`'s own kernel, so its values are the composite's
bit for bit; its gradient is PyTorch's ``2 * g * (x - mean) / dof``, in Ember ops, so every
order of derivative follows. Under a transform (jit, vmap, forward mode, autocast) ``var``
stays the composite of :mod:`ember.ops.variance`, which those already know.

Example:
    >>> fused_var(ember.tensor([[1.0, 2.0], [3.0, 5.0]]), (1,), False, 1)
    tensor([0.5000, 2.0000])
"""

from __future__ import annotations

import math
from math import prod

from ember.errors import DTypeError
from ember.ops.dims import reduced_shape, with_reduced_dims
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.reduce import Sum
from ember.tensor import Tensor

__all__: list[str] = []


@primitive
class Var(Primitive):
    """``sum((x - mean)²) / dof`` over ``dims`` (sorted, holding elements), ``dof`` the count
    less ``correction``; none left gives NaN or inf, as PyTorch."""

    name = "var"
    backward_name = "VarBackward0"

    def forward(self, xp, a, *, dims, keepdim, correction):
        n = prod(a.shape[d] for d in dims)
        centered = a - Sum.forward(xp, a, dims=dims, keepdim=True) / n
        squares = Sum.forward(xp, centered * centered, dims=dims, keepdim=keepdim)
        dof = n - correction
        with xp.errstate(divide="ignore", invalid="ignore"):  # (no dof left: inf or NaN)
            return squares / (dof if dof > 0 else 0.0)

    def infer(self, a, *, dims, keepdim, correction):
        if a.dtype.name not in ("float32", "float64"):
            raise DTypeError(f"var: the fused kernel takes float32 or float64, got {a.dtype.name}")
        return TensorSpec(reduced_shape(a.shape, dims, keepdim), a.dtype)

    def vjp(self, ctx, g):
        return g_times_slope(ctx, g)

    def jvp(self, ctx, dx):
        p = ctx.params
        return apply(Sum, g_times_slope(ctx, None) * dx, dims=p["dims"], keepdim=p["keepdim"])

    def flops(self, a, **params):
        return 3 * prod(a.shape)


def g_times_slope(ctx, g: Tensor | None) -> Tensor:
    """``g`` (broadcast back over the reduced dims; 1 when None) times the variance's slope
    in each element, ``2 * (x - mean) / dof``, with PyTorch's ``dof`` (negative when the
    correction exceeds the count: -0.0 for a single element)."""
    x, p = ctx.inputs[0], ctx.params
    dims = p["dims"]
    n = prod(x.shape[d] for d in dims)
    dof = n - p["correction"]
    slope = (x - apply(Sum, x, dims=dims, keepdim=True) / n) * (2 / dof if dof else math.inf)
    if g is None:
        return slope
    return slope * (g if p["keepdim"] else with_reduced_dims(g, x.shape, dims, True))


def fused_var(x: Tensor, dims: tuple[int, ...], keepdim: bool, correction: float) -> Tensor:
    """The ``var`` primitive over ``dims`` of a real float32/float64 ``x`` (the caller checks
    that, and that the dims hold elements)."""
    return apply(Var, x, dims=dims, keepdim=keepdim, correction=correction)
