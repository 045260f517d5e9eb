"""``smooth_l1_loss`` and ``huber_loss`` as one primitive each way: the loss of two operands
of one shape and dtype, reduced ('none' | 'sum' | 'mean'), and its input gradient. Each was
~10 primitives forward and as many backward (sub, abs, where, mul, the reduction…): 8x
PyTorch's time at 256x256. With ``m = min(|d|, beta)`` (``d = x - t``) the Huber loss is
``m·(|d| - m/2)``: ``d²/2`` below ``beta``, ``beta·(|d| - beta/2)`` above, rounded as
PyTorch's formulas (``|d| - |d|/2`` is exact); smooth L1 is that over ``beta`` (PyTorch's
``|d| - beta/2`` above ``beta`` may differ in the last bit unless ``beta`` is a power of 2).

The input gradient is ``clip(d, -beta, beta)`` (over ``beta`` for smooth L1) times the
output gradient; its own derivative in ``d`` is ``|d| < beta`` (over ``beta``), strictly,
as PyTorch's double backward. The rules are Ember ops, so every order follows.

Example:
    >>> smooth_l1(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]), beta=1.0, huber=False,
    ...           reduction="mean")
    tensor(1.3125)
"""

from __future__ import annotations

import numpy as np

from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.reduce import accumulator
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__: list[str] = []


@primitive
class SmoothL1(Primitive):
    """The Huber loss ``m·(|d| - m/2)``, ``m = min(|d|, beta)``, of ``d = x - t`` (over
    ``beta`` unless ``huber``), reduced by ``reduction``."""

    name = "smooth_l1_loss"
    backward_name = "SmoothL1LossBackward0"
    jvp_takes_none = True

    @in_float32
    def forward(self, xp, x, t, *, beta, huber, reduction):
        ad = _difference(xp, x, t)
        xp.abs(ad, out=ad)
        m = xp.minimum(ad, beta)
        loss = ad - m * 0.5
        loss *= m
        if not huber:
            loss /= beta
        if reduction == "none":
            return loss
        acc = accumulator(loss.dtype)
        total = xp.add.reduce(loss, axis=None, dtype=acc)
        if acc != loss.dtype:
            total = total.astype(loss.dtype)
        if reduction == "sum":
            return total
        if xp is not np or loss.size:
            return xp.true_divide(total, loss.size)
        with np.errstate(invalid="ignore"):  # the mean of nothing is NaN, as PyTorch's
            return xp.true_divide(total, loss.size)

    def infer(self, x, t, *, beta, huber, reduction):
        shape = _check(x, t, beta, self.name)
        return TensorSpec(shape if reduction == "none" else (), x.dtype)

    def vjp(self, ctx, g):
        x, t = ctx.inputs
        gx = apply(SmoothL1Backward, g, x, t, **ctx.params)
        return (gx if x.requires_grad else None, -gx if t.requires_grad else None)

    def jvp(self, ctx, dx, dt):
        x, t = ctx.inputs
        dd = dx if dt is None else dt.neg() if dx is None else dx - dt
        return _reduce(_slope(x, t, ctx.params) * dd, ctx.params["reduction"])

    def flops(self, x, t, **params):
        return 6 * int(np.prod(x.shape))


@primitive
class SmoothL1Backward(Primitive):
    """:class:`SmoothL1`'s gradient in ``x``: ``clip(x - t, -beta, beta)`` (over ``beta``
    unless ``huber``) times ``g`` (over the count for 'mean'; ``g`` is 0-d unless
    ``reduction`` is 'none')."""

    name = "smooth_l1_loss_backward"
    jvp_takes_none = True

    @in_float32
    def forward(self, xp, g, x, t, *, beta, huber, reduction):
        d = _difference(xp, x, t)
        xp.clip(d, -beta, beta, out=d)
        if not huber:
            d /= beta
        if reduction == "mean" and d.size:
            g = g / d.size
        d *= g
        return d

    def infer(self, g, x, t, *, beta, huber, reduction):
        _check(x, t, beta, self.name)
        want = x.shape if reduction == "none" else ()
        if tuple(g.shape) != tuple(want) or g.dtype is not x.dtype:
            raise ShapeError(f"{self.name}: the output gradient is {g.dtype.name} {g.shape}; "
                             f"expected {x.dtype.name} {tuple(want)}")
        return TensorSpec(x.shape, x.dtype)

    def vjp(self, ctx, gg):
        g, x, t = ctx.inputs
        params = ctx.params
        dg = _reduce(gg * _slope(x, t, params), params["reduction"]) if g.requires_grad \
            else None
        dx = None
        if x.requires_grad or t.requires_grad:
            dx = gg * _curvature(x, t, params) * _scaled(g, x, params["reduction"])
        return (dg, dx if x.requires_grad else None,
                dx.neg() if t.requires_grad else None)

    def jvp(self, ctx, dg, dx, dt):
        g, x, t = ctx.inputs
        params = ctx.params
        out = None if dg is None else _scaled(dg, x, params["reduction"]) * _slope(x, t, params)
        if dx is not None or dt is not None:
            dd = dx if dt is None else dt.neg() if dx is None else dx - dt
            part = dd * _curvature(x, t, params) * _scaled(g, x, params["reduction"])
            out = part if out is None else out + part
        return out

    def flops(self, g, x, t, **params):
        return 4 * int(np.prod(x.shape))


def _difference(xp, x, t):
    """``x - t`` in a new array (NumPy gives a 0-d difference as a scalar)."""
    return xp.subtract(x, t, out=xp.empty(x.shape, x.dtype))


def _check(x: TensorSpec, t: TensorSpec, beta: float, op: str) -> tuple:
    if not beta > 0:
        raise ArgumentError(f"{op}: beta must be positive, got {beta}")
    if tuple(x.shape) != tuple(t.shape):
        raise ShapeError(f"{op}: target size {tuple(t.shape)} must be the same as input size "
                         f"{tuple(x.shape)}")
    if x.dtype is not t.dtype or not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating input and a target of its dtype, got "
                         f"{x.dtype.name} and {t.dtype.name}. Hint: target.to(input.dtype)")
    return tuple(x.shape)


def _slope(x: Tensor, t: Tensor, params: dict) -> Tensor:
    """The elementwise loss's derivative in ``x``."""
    beta = params["beta"]
    slope = (x - t).clamp(-beta, beta)
    return slope if params["huber"] else slope / beta


def _curvature(x: Tensor, t: Tensor, params: dict) -> Tensor:
    """The elementwise loss's second derivative in ``x``: ``|d| < beta`` (over ``beta``)."""
    inside = ((x - t).abs() < params["beta"]).to(x.dtype)
    return inside if params["huber"] else inside / params["beta"]


def _scaled(g: Tensor, x: Tensor, reduction: str) -> Tensor:
    """The output gradient as each element receives it (over the count for 'mean')."""
    return g / x.numel() if reduction == "mean" else g


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    return loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()


def smooth_l1(x: Tensor, t: Tensor, *, beta: float, huber: bool, reduction: str) -> Tensor:
    """The ``smooth_l1_loss`` primitive on operands of one shape and floating dtype (the caller
    broadcasts and casts them); ``huber`` leaves out the division by ``beta``."""
    return apply(SmoothL1, x, t, beta=float(beta), huber=huber, reduction=reduction)
