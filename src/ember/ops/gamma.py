"""The gamma family and modified Bessel functions: lgamma, digamma, polygamma, mvlgamma, i0
(and i1, i0's derivative).

Each is a :class:`~ember.ops.unary.Unary` primitive computed in float64 by
:mod:`ember.ops.gamma_kernel` and rounded once to the input's dtype. Derivatives chain into
the family: ``lgamma' = digamma``, ``digamma' = polygamma(1)``, ``polygamma(n)' =
polygamma(n + 1)``, ``i0' = i1``, ``i1' = i0 - i1 / x`` (``i1 / x`` by its series below 1).
Integer inputs give the default float dtype, as in PyTorch.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, type_name
from ember.ops.bessel_kernel import i0_array, i1_array
from ember.ops.compare import lt
from ember.ops.float_host import float_operand, in_float64
from ember.ops.gamma_kernel import lgamma_array, polygamma_array
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import as_int
from ember.ops.primitive import apply, primitive
from ember.ops.select import where
from ember.ops.unary import Unary
from ember.tensor import Tensor, method

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0", "i1"]


_lgamma_narrow = partial(lgamma_array, narrow=True)


@primitive
class Lgamma(Unary):
    """``log|Γ(x)|``."""

    name = "lgamma"

    def forward(self, xp, a):
        # (float32 and narrower: numba's pass alone, correctly rounded once cast)
        return in_float64(xp, lgamma_array if a.dtype == np.float64 else _lgamma_narrow, a)

    def chain(self, v, x, y):
        return v * apply(Polygamma, x, n=0)


@primitive
class Polygamma(Unary):
    """The ``n``-th derivative of digamma (``n = 0``: digamma itself)."""

    name = "polygamma"

    def forward(self, xp, a, *, n):
        return in_float64(xp, polygamma_array, a, n)

    def chain(self, v, x, y, *, n):
        return v * apply(Polygamma, x, n=n + 1)


@primitive
class I0(Unary):
    """The modified Bessel function of the first kind, order 0."""

    name = "i0"

    def forward(self, xp, a):
        return in_float64(xp, i0_array, a)

    def chain(self, v, x, y):
        return v * apply(I1, x)


# i1(x) / x = sum_k (x² / 4)^k / (2 k! (k + 1)!), k = 0..8 (to 3e-18 for |x| < 1)
_I1_OVER_X = tuple(0.25 ** k / (2 * math.factorial(k) * math.factorial(k + 1)) for k in range(9))


def i1_over_x_near_0(x: Tensor) -> Tensor:
    """``i1(x) / x`` by its Taylor series, for ``|x| < 1``: ``i1(x) / x`` of ``I1``'s output
    cancels in its derivatives near 0 (and ``1 / x²`` overflows below 1e-154)."""
    x2 = x * x
    out = _I1_OVER_X[-1] * x2 + _I1_OVER_X[-2]
    for c in _I1_OVER_X[-3::-1]:
        out = out * x2 + c
    return out


@primitive
class I1(Unary):
    """The modified Bessel function of the first kind, order 1."""

    name = "i1"

    def forward(self, xp, a):
        return in_float64(xp, i1_array, a)

    def chain(self, v, x, y):
        near = lt(x.abs(), 1.0)
        far, small = where(near, 1.0, x), where(near, x, 0.0)
        return v * (apply(I0, x) - where(near, i1_over_x_near_0(small), apply(I1, far) / far))


@method()
def lgamma(input: Tensor) -> Tensor:
    """The log of the absolute value of the gamma function; +inf at 0 and negative integers.

    Example:
        >>> ember.lgamma(ember.tensor([0.5, 1.0, 5.0]))
        tensor([0.5724, 0.0000, 3.1781])
    """
    return apply(Lgamma, float_operand("lgamma", input))


@method()
def digamma(input: Tensor) -> Tensor:
    """The logarithmic derivative of the gamma function, ``Γ'(x) / Γ(x)``; ``-inf`` at 0 (and
    ``+inf`` at -0), NaN at negative integers, as in PyTorch.

    Example:
        >>> ember.digamma(ember.tensor([1.0, 0.5]))
        tensor([-0.5772, -1.9635])
    """
    return apply(Polygamma, float_operand("digamma", input), n=0)


@method("polygamma")
def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)`` is ``ember.polygamma(n, x)``."""
    return polygamma(n, self)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of the digamma function (``n >= 0``; 0 is digamma).

    Example:
        >>> ember.polygamma(1, ember.tensor([1.0, 2.0]))
        tensor([1.6449, 0.6449])
    """
    if isinstance(n, Tensor) and n.ndim == 0 and n.dtype.np.kind in "iu":
        n = n.item()  # PyTorch takes a 0-d integer tensor as an int
    elif isinstance(n, np.integer):
        n = int(n)  # (and a NumPy integer)
    if isinstance(n, bool) or not isinstance(n, int):
        raise ArgumentTypeError(f"polygamma: n must be an int, got {type_name(n)}")
    if n < 0:
        raise ArgumentError("polygamma(n, x) does not support negative n")
    return apply(Polygamma, float_operand("polygamma", input), n=n)


@method()
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{i<p} lgamma(x - i / 2)``.

    Example:
        >>> ember.mvlgamma(ember.tensor([2.5, 3.0]), p=2)
        tensor([0.8570, 1.5502])
    """
    p = as_int(p, "mvlgamma", "p")
    if p < 1:
        raise ArgumentError(f"mvlgamma: p has to be greater than or equal to 1, got {p!r}")
    if input.dtype.name == "bool":
        raise DTypeError("mvlgamma: the input tensor may not be a boolean tensor, as in PyTorch")
    input = float_operand("mvlgamma", input)  # integers give the default float dtype
    out = lgamma(input)
    for i in range(1, p):
        out = out + lgamma(input - i / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


@method()
def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0.

    Example:
        >>> ember.i0(ember.tensor([0.0, 1.0, -2.0]))
        tensor([1.0000, 1.2661, 2.2796])
    """
    return apply(I0, float_operand("i0", input))


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1 (``ember.special.i1``).

    Example:
        >>> ember.i1(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.5652])
    """
    return apply(I1, float_operand("i1", input))


def _inplace_polygamma(self: Tensor, n: int) -> Tensor:
    return polygamma(n, self)


bind_inplace(lgamma_=lgamma, digamma_=digamma, i0_=i0, mvlgamma_=mvlgamma,
             polygamma_=_inplace_polygamma)
