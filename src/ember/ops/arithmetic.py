"""Arithmetic with broadcasting: add, sub, mul, div (true and floor), neg, and Python's
operators on tensors. Each binary op brings its operands to PyTorch's result dtype first
(:func:`promote`), so its primitive only ever sees one dtype."""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.convert import promote, to_float
from ember.ops.inplace import bind_inplace
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, method


__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "neg", "negative", "rsub"]


class Binary(Primitive):
    """An elementwise primitive of two same-dtype inputs with broadcasting."""

    def infer(self, a: TensorSpec, b: TensorSpec) -> TensorSpec:
        return broadcast_spec(a, b, op=self.name)

    def flops(self, a: TensorSpec, b: TensorSpec) -> int:
        n = 1
        for s in self.infer(a, b).shape:
            n *= s
        return n


@primitive
class Add(Binary):
    name = "add"
    save_inputs = False

    def forward(self, xp, a, b):
        return xp.add(a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return sum_to(g, a.shape), sum_to(g, b.shape)

    def jvp(self, ctx, da, db):
        return da + db


@primitive
class Sub(Binary):
    name = "sub"
    save_inputs = False

    def forward(self, xp, a, b):
        return xp.subtract(a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return sum_to(g, a.shape), sum_to(neg(g), b.shape)

    def jvp(self, ctx, da, db):
        return da - db


@primitive
class Mul(Binary):
    name = "mul"

    def forward(self, xp, a, b):
        return xp.multiply(a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        need_a, need_b = a.requires_grad, b.requires_grad
        return (sum_to(g * b, a.shape) if need_a else None,
                sum_to(g * a, b.shape) if need_b else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return da * b + a * db


@primitive
class Div(Binary):
    name = "div"

    def forward(self, xp, a, b):
        return xp.true_divide(a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        ga = g / b
        return (sum_to(ga, a.shape) if a.requires_grad else None,
                sum_to(-ga * a / b, b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return (da - a / b * db) / b


@primitive
class FloorDiv(Binary):
    name = "floor_divide"
    differentiable = False

    def forward(self, xp, a, b):
        return xp.floor_divide(a, b)


@primitive
class Remainder(Binary):
    name = "remainder"

    def forward(self, xp, a, b):
        return xp.remainder(a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return sum_to(g, a.shape), sum_to(-g * floor_divide(a, b), b.shape)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return da - db * floor_divide(a, b)


@primitive
class Neg(Primitive):
    name = "neg"
    save_inputs = False

    def forward(self, xp, a):
        return xp.negative(a)

    def infer(self, a):
        return a

    def vjp(self, ctx, g):
        return neg(g)

    def jvp(self, ctx, da):
        return neg(da)


@method("add", "__add__")
def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting.

    Example:
        >>> ember.add(ember.ones(2), 1.5)
        tensor([2.5000, 2.5000])
    """
    if alpha != 1:
        other = other * alpha
    return apply(Add, *promote(input, other))


@method("sub", "subtract", "__sub__")
def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    if alpha != 1:
        other = other * alpha
    return apply(Sub, *promote(input, other))


@method("mul", "multiply", "__mul__")
def mul(input: Any, other: Any) -> Tensor:
    """``input * other`` with broadcasting."""
    return apply(Mul, *promote(input, other))


@method("div", "divide", "true_divide", "__truediv__")
def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other``; integer inputs give the default float dtype, as in PyTorch.

    ``rounding_mode="floor"`` or ``"trunc"`` rounds the quotient (no gradient).
    """
    if rounding_mode == "floor":
        return floor_divide(input, other)
    a, b = promote(input, other)
    if rounding_mode == "trunc":
        q = apply(Div, to_float(a), to_float(b))
        from ember.ops.unary import trunc

        return trunc(q).to(a.dtype)
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                         f"{rounding_mode!r}")
    if not a.dtype.is_floating_point:
        a, b = to_float(a), to_float(b)
    return apply(Div, a, b)


@method("floor_divide", "__floordiv__")
def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other`` rounded toward minus infinity (no gradient)."""
    return apply(FloorDiv, *promote(input, other))


@method("remainder", "__mod__")
def remainder(input: Any, other: Any) -> Tensor:
    """Python's ``%``: the remainder with the divisor's sign."""
    return apply(Remainder, *promote(input, other))


@method("neg", "negative", "__neg__")
def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input.dtype is dtypes.bool_:
        raise TypeError("neg: negation of a bool tensor is not defined; use logical_not")
    return apply(Neg, input)


@method("__pos__")
def _pos(self: Tensor) -> Tensor:
    return self


def _reflected(fn: Any, name: str) -> None:
    def op(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)
    op.__name__ = name
    method(name)(op)


for _fn, _name in [(add, "__radd__"), (sub, "__rsub__"), (mul, "__rmul__"),
                   (div, "__rtruediv__"), (floor_divide, "__rfloordiv__"),
                   (remainder, "__rmod__")]:
    _reflected(_fn, _name)


@method("rsub")
def rsub(input: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


bind_inplace(add_=add, __iadd__=add, sub_=sub, __isub__=sub, mul_=mul, __imul__=mul,
             div_=div, __itruediv__=div, floor_divide_=floor_divide, __ifloordiv__=floor_divide,
             remainder_=remainder, __imod__=remainder, neg_=neg)

subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg
