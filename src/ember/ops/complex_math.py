"""Complex numbers in polar form: ``angle`` (the argument) and ``polar(abs, angle)``; the
modulus is :func:`ember.abs`."""

from __future__ import annotations

import math

from ember.errors import DTypeError
from ember.ops.complex_parts import complex, conj, imag, real
from ember.ops.convert import float32_under_autocast, to_float
from ember.ops.creation import zeros_like
from ember.ops.forwarding import check_tensors, hands_over
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import where
from ember.ops.unary import cos, sin
from ember.tensor import Tensor, method

__all__ = ["angle", "polar"]


@primitive
class Angle(Primitive):
    """The argument of each element, in (-pi, pi], as a real tensor; of a real tensor, pi for
    negative elements and 0 otherwise (NaN stays NaN), as in PyTorch."""

    name = "angle"
    complex_grad = True

    def forward(self, xp, a):
        if a.dtype.kind == "c":
            return xp.angle(a)
        return xp.where(xp.isnan(a), a, xp.where(a < 0, math.pi, 0)).astype(a.dtype)

    def infer(self, a):
        return TensorSpec(a.shape, a.dtype.to_real())

    def vjp(self, ctx, g):
        z = ctx.inputs[0]
        if not z.dtype.is_complex:
            return zeros_like(g)
        # d angle / dx = -y / |z|^2 and d angle / dy = x / |z|^2: together i z / |z|^2
        sq = _abs_squared(z)
        return where(sq == 0, 0, g * (z * 1j) / where(sq == 0, 1, sq))

    def jvp(self, ctx, dz):
        z = ctx.inputs[0]
        if not z.dtype.is_complex:
            return zeros_like(dz)
        sq = _abs_squared(z)
        return where(sq == 0, 0, imag(conj(z) * dz) / where(sq == 0, 1, sq))


def _abs_squared(z: Tensor) -> Tensor:
    return real(z) * real(z) + imag(z) * imag(z)


@method()
def angle(input: Tensor) -> Tensor:
    """The argument (phase) of each element in radians; real for complex input.

    Example:
        >>> ember.angle(ember.tensor([1j, -1 + 0j]))
        tensor([1.5708, 3.1416])
    """
    return apply(Angle, to_float(input))


@hands_over
@float32_under_autocast
def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``, from float32 or float64
    tensors of one dtype (broadcasting).

    Example:
        >>> ember.polar(ember.tensor([2.0]), ember.tensor([0.0]))
        tensor([2.+0.j])
    """
    check_tensors("polar", abs=abs, angle=angle)
    if not (abs.dtype.is_floating_point and angle.dtype.is_floating_point):
        # (cos of an integer angle is a float: the result was complex64, not PyTorch's error)
        raise DTypeError(f"polar: expects abs and angle of a floating dtype, got "
                         f"{abs.dtype.name} and {angle.dtype.name}. Hint: convert both with "
                         ".float() or .double()")
    if abs.dtype is not angle.dtype:
        raise DTypeError(f"polar: expects abs and angle of one dtype, got {abs.dtype.name} and "
                         f"{angle.dtype.name}")
    return complex(abs * cos(angle), abs * sin(angle))
