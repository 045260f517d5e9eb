"""Elementwise ops on how numbers are represented: the step function (``heaviside``), integer
divisors (``gcd``, ``lcm``) and float bits (``ldexp``, ``nextafter``).

``heaviside``, ``gcd`` and ``lcm`` have no gradient. ``nextafter`` passes ``input``'s gradient
where the value moves and gives ``other`` a zero one, as PyTorch does. ``ldexp`` scales exactly
by integer exponents (as ``np.ldexp``), and its gradient is exact there too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import DTypeError, dtype_name
from ember.layouts import in_operands_layout
from ember.ops.arithmetic import Binary
from ember.ops.broadcast import broadcast_shapes, sum_to
from ember.ops.compare import ne
from ember.ops.convert import cast, promote, promote_to, result_dtype
from ember.ops.creation import scalar_tensor, zeros_like
from ember.ops.inplace import bind_inplace
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive, refuse_complex
from ember.ops.select import where
from ember.ops.special import _dtype_names, _floating_pair
from ember.ops.unary import in_float32
from ember.tensor import Tensor, method

__all__ = ["heaviside", "gcd", "lcm", "ldexp", "nextafter"]

_LN2 = math.log(2.0)


def _integer_pair(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    a, b = promote(input, other)
    if a.dtype.category != dtypes.INT:
        raise DTypeError(f"{op}: needs integer tensors, got {_dtype_names(input, other)}. "
                         "Hint: convert with .long() first")
    return a, b


@primitive
class NextAfter(Binary):
    """The next float after ``a`` toward ``b``. As in PyTorch, ``a``'s gradient passes where
    the value moves (``a != b``) and is 0 where it does not; ``b``'s is zero."""

    name = "nextafter"

    def forward(self, xp, a, b):
        r = xp.nextafter(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(where(ne(a, b), g, 0), a.shape) if a.requires_grad else None,
                zeros_like(b) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return where(ne(a, b), da, 0)


@primitive
class Ldexp(Primitive):
    """``a * 2**b`` for a floating ``a`` and a same-dtype or integer ``b``: an integer exponent
    scales exactly (``np.ldexp``, no overflow of ``2**b`` on the way), as PyTorch's."""

    name = "ldexp"
    save_outputs = True

    @in_float32
    def forward(self, xp, a, b):
        if b.dtype.kind in "biu":
            out = xp.ldexp(a, b.astype(np.int64, copy=False))
            out = out.astype(a.dtype, copy=False)  # bfloat16 comes back as float32
        else:
            out = a * xp.exp2(b)
        return out if a.flags.c_contiguous else in_operands_layout(xp, out, a, b)

    def infer(self, a, b):
        if not a.dtype.is_floating_point or (b.dtype.is_floating_point and b.dtype is not
                                             a.dtype):
            raise DTypeError(f"ldexp: needs a floating mantissa and an integer or same-dtype "
                             f"exponent, got {a.dtype.name} and {b.dtype.name}")
        return TensorSpec(broadcast_shapes(a.shape, b.shape, op=self.name), a.dtype)

    def reads(self, ctx, i):
        return i == 1  # a's values never enter a gradient (the output stands for them)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        ga = sum_to(apply(Ldexp, g, b), a.shape) if a.requires_grad else None
        gb = sum_to(g * ctx.out * _LN2, b.shape) if b.requires_grad else None
        return ga, gb

    def jvp(self, ctx, da, db):
        b = ctx.inputs[1]
        out = apply(Ldexp, da, b)
        return out + db * ctx.out * _LN2 if b.dtype.is_floating_point else out


# -- two-argument ops without a gradient --------------------------------------------------------
class NoGradBinary(Binary):
    """An elementwise op of two same-dtype tensors with no gradient."""

    differentiable = False
    save_inputs = False
    ufunc = ""

    def forward(self, xp, a, b):
        r = getattr(xp, self.ufunc)(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)


@primitive
class Heaviside(NoGradBinary):
    name = "heaviside"

    def forward(self, xp, a, b):
        # PyTorch's: values where a == 0, else (a > 0), so a NaN input gives 0
        r = xp.where(a == 0, b, a > 0).astype(a.dtype, copy=False)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)


@primitive
class Gcd(NoGradBinary):
    name = "gcd"
    ufunc = "gcd"


@primitive
class Lcm(NoGradBinary):
    name = "lcm"
    ufunc = "lcm"


# -- the public functions -------------------------------------------------------------------------
@method()
def heaviside(input: Tensor, values: Any) -> Tensor:
    """The step function: 0 where ``input < 0``, ``values`` where it is 0, 1 where it is
    positive (0 for NaN, as PyTorch). ``input`` and ``values`` must share a dtype; no
    gradient.

    Example:
        >>> ember.heaviside(ember.tensor([-1.5, 0.0, 2.0]), ember.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    refuse_complex("heaviside", input)
    if not isinstance(values, Tensor):
        values = scalar_tensor(values, input.dtype, input.device)
    elif values.dtype is not input.dtype:
        raise DTypeError(f"heaviside: input and values must have one dtype, got "
                         f"{dtype_name('heaviside', 'input', input)} and "
                         f"{dtype_name('heaviside', 'values', values)}. Hint: convert values "
                         f"with .to({input.dtype.name}) first")
    return apply(Heaviside, input, values)


@method()
def gcd(input: Any, other: Any) -> Tensor:
    """The greatest common divisor (non-negative) of integer tensors; ``gcd(0, 0)`` is 0.
    No gradient.

    Example:
        >>> ember.gcd(ember.tensor([4, -6, 0]), ember.tensor([6, 9, 5]))
        tensor([2, 3, 5])
    """
    return apply(Gcd, *_integer_pair("gcd", input, other))


@method()
def lcm(input: Any, other: Any) -> Tensor:
    """The least common multiple (non-negative) of integer tensors; 0 if either is 0. No
    gradient.

    Example:
        >>> ember.lcm(ember.tensor([4, -6, 0]), ember.tensor([6, 9, 5]))
        tensor([12, 18,  0])
    """
    return apply(Lcm, *_integer_pair("lcm", input, other))


@method()
def ldexp(input: Any, other: Any) -> Tensor:
    """``input * 2**other`` in the operands' result dtype (integers give the default float).
    An integer ``other`` scales exactly, without forming ``2**other``.

    Example:
        >>> ember.ldexp(ember.tensor([1.0, 3.0]), ember.tensor([3, -1]))
        tensor([8.0000, 1.5000])
    """
    target = result_dtype(input, other)
    if target.is_complex:  # no exact scaling of complex numbers: input * 2**other
        a, b = promote_to(target, input, other)
        return a * 2**b
    if not target.is_floating_point:
        target = dtypes.get_default_dtype()
    if isinstance(input, Tensor):
        a = cast(input, target)
    else:
        a = scalar_tensor(input, target, other.device)
    if isinstance(other, Tensor):
        b = other if not other.dtype.is_floating_point else cast(other, target)
    else:
        b = scalar_tensor(other, dtypes.int64 if isinstance(other, int) else target, a.device)
    return apply(Ldexp, a, b)


@method()
def nextafter(input: Any, other: Any) -> Tensor:
    """The next representable float after ``input`` toward ``other`` (``input`` itself where
    they are equal; floats only).

    Example:
        >>> ember.nextafter(ember.tensor([1.0], dtype=ember.float64), 2.0) - 1
        tensor([2.2204e-16], dtype=ember.float64)
    """
    return apply(NextAfter, *_floating_pair("nextafter", input, other))


bind_inplace(heaviside_=heaviside, gcd_=gcd, lcm_=lcm, ldexp_=ldexp, nextafter_=nextafter)
