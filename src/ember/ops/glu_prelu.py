"""glu and prelu as primitives, so that their backward keeps what PyTorch's keeps: glu's input
(the composite ``a * sigmoid(b)`` kept the input and the sigmoid's output, 1.5x the memory),
prelu's input and weight (``x * where(x > 0, 1, w)`` kept the input, a mask and a full-size
slope, 2.25x). Their functions are in :mod:`ember.ops.activations`."""

from __future__ import annotations

from typing import Any

from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.join import cat
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import where
from ember.ops.unary import in_float32, sigmoid, sigmoid_array
from ember.tensor import Tensor

__all__: list[str] = []


def _halves(x: Any, dim: int) -> tuple[Any, Any]:
    """The two halves of a backend array along ``dim``, as views."""
    half = x.shape[dim] // 2
    lead = (slice(None),) * dim
    return x[lead + (slice(0, half),)], x[lead + (slice(half, None),)]


@primitive
class Glu(Primitive):
    """``a * sigmoid(b)``, ``a`` and ``b`` the halves of the input along ``dim`` (≥ 0, of
    even size); the backward reads the input alone."""

    name = "glu"
    input_layout = True  # (NumPy's product of the halves keeps the input's order)

    @in_float32
    def forward(self, xp, x, *, dim):
        a, b = _halves(x, dim)
        s = sigmoid_array(xp, b)
        return xp.multiply(a, s, out=s)

    def infer(self, x, *, dim):
        shape = list(x.shape)
        shape[dim] //= 2
        return TensorSpec(tuple(shape), x.dtype)

    def vjp(self, ctx, g):
        return apply(GluGrad, g, ctx.inputs[0], dim=ctx.params["dim"])

    def jvp(self, ctx, dx):
        return _glu_tangent(ctx.inputs[0], dx, ctx.params["dim"])


def _glu_tangent(x: Tensor, dx: Tensor, dim: int) -> Tensor:
    """glu's derivative at ``x`` along ``dx``: ``s·(da + a·(1 - s)·db)``."""
    a, b = x.chunk(2, dim)
    da, db = dx.chunk(2, dim)
    s = sigmoid(b)
    return s * (da + a * (1 - s) * db)


def _glu_grad_in_x(g: Tensor, x: Tensor, dx: Tensor, dim: int) -> Tensor:
    """glu_grad's derivative in ``x`` along ``dx`` (symmetric: also its vjp in ``x``)."""
    a, b = x.chunk(2, dim)
    da, db = dx.chunk(2, dim)
    s = sigmoid(b)
    t = s * (1 - s)
    return cat([g * t * db, g * t * (da + a * (1 - 2 * s) * db)], dim)


@primitive
class GluGrad(Primitive):
    """glu's input gradient from the output gradient ``g``: ``g·s`` for ``a`` and
    ``g·a·s·(1 - s)`` for ``b`` (``s = sigmoid(b)``), computed into one buffer (the
    composite's sigmoid, products and concatenation were twice the passes)."""

    name = "glu_grad"

    @in_float32
    def forward(self, xp, g, x, *, dim):
        a, b = _halves(x, dim)
        out = xp.empty(x.shape, dtype=xp.result_type(g, x))
        out_a, out_b = _halves(out, dim)
        s = sigmoid_array(xp, b)
        xp.multiply(g, s, out=out_a)
        xp.multiply(out_a, a, out=out_b)
        xp.subtract(1, s, out=s)
        xp.multiply(out_b, s, out=out_b)
        return out

    def infer(self, g, x, *, dim):
        return TensorSpec(tuple(x.shape), x.dtype)

    def vjp(self, ctx, u):
        g, x = ctx.inputs
        dim = ctx.params["dim"]
        # (linear in g: its gradient is glu's jvp along u)
        return _glu_tangent(x, u, dim), _glu_grad_in_x(g, x, u, dim)

    def jvp(self, ctx, dg, dx):
        g, x = ctx.inputs
        dim = ctx.params["dim"]
        return apply(GluGrad, dg, x, dim=dim) + _glu_grad_in_x(g, x, dx, dim)


@primitive
class Prelu(Primitive):
    """``x`` where positive, ``w * x`` elsewhere, ``w`` broadcast to ``x`` (one slope per
    channel or one in all); the backward reads ``x`` and ``w``."""

    name = "prelu"

    def forward(self, xp, x, w):
        scaled = x * w  # (in x's layout, as PyTorch's)
        if getattr(scaled, "ndim", 0) == 0:
            return xp.asarray(xp.where(x > 0, x, scaled))
        if w.size and 0 < w.min() and w.max() <= 1:
            # x ≥ w·x above 0 and w·x ≥ x below: their maximum, one pass and no mask (as
            # leaky_relu; a mask's selection costs 15x a product); NaN and -0.0 stay
            return xp.maximum(x, scaled, out=scaled)
        xp.copyto(scaled, x, where=x > 0)
        return scaled

    def infer(self, x, w):
        return broadcast_spec(x, w, op="prelu")

    def vjp(self, ctx, g):
        x, w = ctx.inputs
        positive = x > 0
        gx = where(positive, g, g * w) if ctx.wants_grad(0) else None
        # (0 above 0, as PyTorch's, not g * 0: neither an infinite x nor an infinite or NaN g
        # there sends NaN to w)
        gw = sum_to(where(positive, 0, g * x), tuple(w.shape)) if ctx.wants_grad(1) else None
        return gx, gw

    def jvp(self, ctx, dx, dw):
        x, w = ctx.inputs
        return where(x > 0, dx, dx * w + x * dw)
