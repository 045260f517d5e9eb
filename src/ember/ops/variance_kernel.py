"""``var`` and ``std`` of a real float32/float64 tensor as one primitive each: eager ``var``
and ``std`` were seven primitives (the mean as a sum and a division, the deviations, their
squares, a sum, a division and a reshape of the mean that var threw away), each paying the
per-op overhead, and ``std`` four more for its root. Their sums are
:class:`~ember.ops.reduce.Sum`'s own kernel, so their values are the composite's bit for bit;
their gradients are PyTorch's ``2 * g * (x - mean) / dof`` (over ``2 * std`` for ``std``), in
Ember ops, so every order of derivative follows. Transforms use them too (a batching rule,
an ONNX converter), so a compiled or vmapped ``var`` is eager's, overflow included.

Float32 squares overflow past ~1.8e19, where PyTorch, which accumulates in float64, is still
finite: a float32 sum of squares that is not finite (checked once per call) is computed again
in float64, so only such calls pay for it.

Example:
    >>> fused_var(ember.tensor([[1.0, 2.0], [3.0, 5.0]]), (1,), False, 1)
    tensor([0.5000, 2.0000])
"""

from __future__ import annotations

import math
from math import prod

import numpy as np

from ember.errors import DTypeError
from ember.ops.dims import reduced_shape, with_reduced_dims
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.reduce import Sum
from ember.ops.select import where
from ember.tensor import Tensor

__all__: list[str] = []


def _spread(xp, a, dims: tuple[int, ...], keepdim: bool, correction: float, root: bool):
    """The variance (its root with ``root``) of array ``a`` over ``dims``."""
    n = prod(a.shape[d] for d in dims)
    centered = a - Sum.forward(xp, a, dims=dims, keepdim=True) / n
    squares = Sum.forward(xp, centered * centered, dims=dims, keepdim=keepdim)
    if a.dtype == np.float32 and not math.isfinite(squares if squares.ndim == 0 else
                                                    squares.sum()):  # (squares are >= 0)
        return _spread(xp, a.astype(np.float64), dims, keepdim, correction, root).astype(
            np.float32)
    dof = n - correction
    with xp.errstate(divide="ignore", invalid="ignore"):  # (no dof left: inf or NaN)
        variance = squares / (dof if dof > 0 else 0.0)
    return xp.sqrt(variance) if root else variance


class _Spread(Primitive):
    """What ``var`` and ``std`` share: their shape rule and cost."""

    def infer(self, a, *, dims, keepdim, correction):
        if a.dtype.name not in ("float32", "float64"):
            raise DTypeError(f"{self.name}: the fused kernel takes float32 or float64, "
                             f"got {a.dtype.name}")
        return TensorSpec(reduced_shape(a.shape, dims, keepdim), a.dtype)

    def flops(self, a, **params):
        return 3 * prod(a.shape)


@primitive
class Var(_Spread):
    """``sum((x - mean)²) / dof`` over ``dims`` (sorted, holding elements), ``dof`` the count
    less ``correction``; none left gives NaN or inf, as PyTorch."""

    name = "var"
    backward_name = "VarBackward0"

    def forward(self, xp, a, *, dims, keepdim, correction):
        return _spread(xp, a, dims, keepdim, correction, False)

    def vjp(self, ctx, g):
        return g_times_slope(ctx, g)

    def jvp(self, ctx, dx):
        return _var_tangent(ctx, dx)


@primitive
class Std(_Spread):
    """The square root of :class:`Var`, rounded once from float64 where float32 squares
    overflow; a zero gradient where it is 0 (a constant slice), as PyTorch."""

    name = "std"
    backward_name = "StdBackward0"
    save_outputs = True

    def forward(self, xp, a, *, dims, keepdim, correction):
        return _spread(xp, a, dims, keepdim, correction, True)

    def vjp(self, ctx, g):
        return g_times_slope(ctx, _over_twice_std(ctx.out, g))

    def jvp(self, ctx, dx):
        return _over_twice_std(ctx.out, _var_tangent(ctx, dx))


def _var_tangent(ctx, dx: Tensor) -> Tensor:
    """The variance's tangent: the sum of slope times ``dx``."""
    p = ctx.params
    return apply(Sum, g_times_slope(ctx, None) * dx, dims=p["dims"], keepdim=p["keepdim"])


def _over_twice_std(std: Tensor, g: Tensor) -> Tensor:
    """``g / (2 * std)``, 0 where ``std`` is 0 (a double ``where``, so that the unused
    branch's ``g / 0`` sends no NaN into higher derivatives)."""
    zero = std == 0
    return where(zero, 0.0, g / (2 * where(zero, 1.0, std)))


def g_times_slope(ctx, g: Tensor | None) -> Tensor:
    """``g`` (broadcast back over the reduced dims; 1 when None) times the variance's slope
    in each element, ``2 * (x - mean) / dof``; NaN with no degrees of freedom left (the
    variance is inf or NaN there), as the composite's chain rule and PyTorch's ``var()``
    of a single element (its explicit-dims path gives ``2 * (x - mean) / dof`` with a
    negative ``dof`` instead)."""
    x, p = ctx.inputs[0], ctx.params
    dims = p["dims"]
    n = prod(x.shape[d] for d in dims)
    dof = n - p["correction"]
    slope = (x - apply(Sum, x, dims=dims, keepdim=True) / n) * (2 / dof if dof > 0 else math.nan)
    if g is None:
        return slope
    return slope * (g if p["keepdim"] else with_reduced_dims(g, x.shape, dims, True))


def fused_var(x: Tensor, dims: tuple[int, ...], keepdim: bool, correction: float,
              root: bool = False) -> Tensor:
    """The ``var`` primitive (``std`` with ``root``) over ``dims`` of a real float32/float64
    ``x`` (the caller checks that, and that the dims hold elements)."""
    return apply(Std if root else Var, x, dims=dims, keepdim=keepdim, correction=correction)
