"""Rounding to whole numbers: ``floor``, ``ceil``, ``trunc`` (``fix``), ``round`` (to
``decimals`` places, halves to even) and ``frac``. Their gradient is zero wherever it exists,
as in PyTorch (``frac``'s is one); integer tensors are already whole (a copy), bool and complex
ones are refused.
"""

from __future__ import annotations

import math

import numpy as np

from ember.errors import DTypeError
from ember.ops.convert import clone
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import as_int
from ember.ops.primitive import Primitive, apply, primitive, refuse_complex
from ember.ops.relu_kernel import frac_array
from ember.ops.unary import Flat, Unary, refuse_bool
from ember.tensor import Tensor, method

__all__ = ["floor", "ceil", "round", "trunc", "fix", "frac"]


@primitive
class Floor(Flat):
    name = "floor"
    ufunc = "floor"


@primitive
class Ceil(Flat):
    name = "ceil"
    ufunc = "ceil"


@primitive
class Trunc(Flat):
    name = "trunc"
    ufunc = "trunc"


@primitive
class Round(Flat):
    name = "round"

    def forward(self, xp, a, *, decimals):
        if decimals == 0:
            return xp.rint(a)
        # in float32 for the 2-byte floats, as PyTorch: 10**decimals overflows float16 (a
        # float16 1234.5 at decimals=2 came out inf, and any value at decimals=10 NaN)
        wide = a.astype(xp.float32) if a.dtype.itemsize < 4 else a
        # PyTorch's steps, rint(x * 10^d) / 10^d (rint(x / 10^-d) * 10^-d below 0), with 10^d
        # in the dtype; NumPy's round moved a float64 by an ulp from d = 23 (round(x, 300) is x)
        with np.errstate(over="ignore", invalid="ignore"):
            scale = wide.dtype.type(math.inf if abs(decimals) > 308 else 10.0 ** abs(decimals))
            if decimals > 0:
                return (xp.rint(wide * scale) / scale).astype(a.dtype)
            return (xp.rint(wide / scale) * scale).astype(a.dtype)


@primitive
class Frac(Unary):
    """``x - trunc(x)`` in one op (NaN at ±inf); its derivative is 1."""

    name = "frac"
    save_inputs = False

    def forward(self, xp, a):
        return frac_array(xp, a)

    def chain(self, v, x, y):
        return v


def _rounding(prim: Primitive, input: Tensor) -> Tensor:
    if not input.dtype.is_floating_point:
        refuse_complex(prim.name, input)
        refuse_bool(prim.name, input)
        return clone(input)  # integers are already whole
    return apply(prim, input)


@method()
def floor(input: Tensor) -> Tensor:
    """The largest integer not above each element (same dtype; zero gradient).

    Example:
        >>> ember.floor(ember.tensor([-1.5, 1.5]))
        tensor([-2.,  1.])
    """
    return _rounding(Floor, input)


@method()
def ceil(input: Tensor) -> Tensor:
    """The smallest integer not below each element (same dtype; zero gradient)."""
    return _rounding(Ceil, input)


@method("trunc", "fix")
def trunc(input: Tensor) -> Tensor:
    """Each element rounded toward zero (same dtype; zero gradient)."""
    return _rounding(Trunc, input)


@method()
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Each element rounded to ``decimals`` decimal places, halves to even (zero gradient).

    Example:
        >>> ember.round(ember.tensor([0.5, 1.5, 1.26]), decimals=0)
        tensor([0., 2., 1.])
    """
    refuse_complex("round", input)
    decimals = as_int(decimals, "round", "decimals")  # (int() truncated 2.7 and read "2")
    if decimals != 0 and not input.dtype.is_floating_point:
        raise DTypeError(f"round: decimals={decimals} needs a floating tensor, got "
                         f"{input.dtype.name}")
    if not input.dtype.is_floating_point:
        return _rounding(Round, input)
    return apply(Round, input, decimals=decimals)


@method()
def frac(input: Tensor) -> Tensor:
    """The fractional part ``input - trunc(input)``, with the sign of ``input``.

    Example:
        >>> ember.frac(ember.tensor([1.25, -1.25]))
        tensor([ 0.2500, -0.2500])
    """
    refuse_complex("frac", input)
    if not input.dtype.is_floating_point:
        raise DTypeError(f"frac: needs a floating tensor, got {input.dtype.name}")
    return apply(Frac, input)


fix = trunc

bind_inplace(floor_=floor, ceil_=ceil, trunc_=trunc, fix_=trunc, round_=round, frac_=frac)
