"""Bessel and Airy functions of ``torch.special``: ``J_0``, ``J_1``, ``Y_0``, ``Y_1``, the
modified ``I_0``, ``I_1``, ``K_0``, ``K_1`` (``K`` also scaled by ``e^x``), ``i0e``/``i1e``
(``I`` scaled by ``e^-|x|``), the spherical ``j_0``, and ``Ai``.

Each is computed in float64 by :mod:`ember.ops.bessel_kernel` and rounded once to the
input's dtype (integers give the default float dtype). As in PyTorch, only ``i0e`` and
``i1e`` are differentiable (``i0e' = i1e - sign(x) i0e``, ``i1e' = i0e - i1e (sign(x) +
1/x)``, ``1/2`` at 0); the outputs of the others never require grad.
"""

from __future__ import annotations

from functools import partial

from ember.ops.bessel_kernel import (
    airy_ai_array,
    bessel_i_array,
    bessel_j0_array,
    bessel_j1_array,
    bessel_k_array,
    bessel_y0_array,
    bessel_y1_array,
    spherical_bessel_j0_array,
)
from ember.ops.compare import lt
from ember.ops.float_host import float_operand, in_float64
from ember.ops.gamma import i1_over_x_near_0
from ember.ops.primitive import apply, primitive
from ember.ops.select import where
from ember.ops.unary import Unary, exp, sign
from ember.tensor import Tensor

__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "i0e", "i1e",
           "spherical_bessel_j0", "airy_ai"]

_KERNELS = {
    "bessel_j0": bessel_j0_array,
    "bessel_j1": bessel_j1_array,
    "bessel_y0": bessel_y0_array,
    "bessel_y1": bessel_y1_array,
    "modified_bessel_i0": partial(bessel_i_array, 0),
    "modified_bessel_i1": partial(bessel_i_array, 1),
    "modified_bessel_k0": partial(bessel_k_array, 0),
    "modified_bessel_k1": partial(bessel_k_array, 1),
    "scaled_modified_bessel_k0": partial(bessel_k_array, 0, scaled=True),
    "scaled_modified_bessel_k1": partial(bessel_k_array, 1, scaled=True),
    "spherical_bessel_j0": spherical_bessel_j0_array,
    "airy_ai": airy_ai_array,
}


@primitive
class BesselFunction(Unary):
    """One of the functions in ``_KERNELS`` (``kind``); not differentiable, as in PyTorch."""

    name = "bessel_function"
    differentiable = False

    def forward(self, xp, a, *, kind):
        return in_float64(xp, _KERNELS[kind], a)


@primitive
class I0e(Unary):
    """``e^-|x| I_0(x)``."""

    name = "i0e"
    save_outputs = True

    def forward(self, xp, a):
        return in_float64(xp, partial(bessel_i_array, 0, scaled=True), a)

    def chain(self, v, x, y):
        return v * (apply(I1e, x) - sign(x) * y)


@primitive
class I1e(Unary):
    """``e^-|x| I_1(x)``."""

    name = "i1e"
    save_outputs = True

    def forward(self, xp, a):
        return in_float64(xp, partial(bessel_i_array, 1, scaled=True), a)

    def chain(self, v, x, y):
        near = lt(x.abs(), 1.0)
        small = where(near, x, 0.0)
        over_x = where(near, exp(-small.abs()) * i1_over_x_near_0(small), y / where(near, 1.0, x))
        return v * (apply(I0e, x) - y * sign(x) - over_x)


def _bessel(kind: str, input: Tensor) -> Tensor:
    return apply(BesselFunction, float_operand(kind, input), kind=kind)


def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0, ``J_0``.

    Example:
        >>> ember.special.bessel_j0(ember.tensor([0.0, 1.0, 10.0]))
        tensor([ 1.0000,  0.7652, -0.2459])
    """
    return _bessel("bessel_j0", input)


def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1, ``J_1``.

    Example:
        >>> ember.special.bessel_j1(ember.tensor([0.0, 1.0, 10.0]))
        tensor([0.0000, 0.4401, 0.0435])
    """
    return _bessel("bessel_j1", input)


def bessel_y0(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0, ``Y_0``: ``-inf`` at 0, NaN below.

    Example:
        >>> ember.special.bessel_y0(ember.tensor([0.0, 1.0, 10.0]))
        tensor([   -inf,  0.0883,  0.0557])
    """
    return _bessel("bessel_y0", input)


def bessel_y1(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1, ``Y_1``: ``-inf`` at 0, NaN below.

    Example:
        >>> ember.special.bessel_y1(ember.tensor([0.0, 1.0, 10.0]))
        tensor([   -inf, -0.7812,  0.2490])
    """
    return _bessel("bessel_y1", input)


def modified_bessel_i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0, ``I_0`` (``inf`` at
    ``±inf``, where :func:`ember.i0` gives NaN, as in PyTorch).

    Example:
        >>> ember.special.modified_bessel_i0(ember.tensor([0.0, 1.0, -2.0]))
        tensor([1.0000, 1.2661, 2.2796])
    """
    return _bessel("modified_bessel_i0", input)


def modified_bessel_i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1, ``I_1`` (odd).

    Example:
        >>> ember.special.modified_bessel_i1(ember.tensor([0.0, 1.0, -2.0]))
        tensor([ 0.0000,  0.5652, -1.5906])
    """
    return _bessel("modified_bessel_i1", input)


def modified_bessel_k0(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0, ``K_0``: ``inf`` at 0, NaN
    below.

    Example:
        >>> ember.special.modified_bessel_k0(ember.tensor([0.5, 1.0, 10.0]))
        tensor([9.2442e-01, 4.2102e-01, 1.7780e-05])
    """
    return _bessel("modified_bessel_k0", input)


def modified_bessel_k1(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1, ``K_1``: ``inf`` at 0, NaN
    below.

    Example:
        >>> ember.special.modified_bessel_k1(ember.tensor([0.5, 1.0, 10.0]))
        tensor([1.6564e+00, 6.0191e-01, 1.8649e-05])
    """
    return _bessel("modified_bessel_k1", input)


def scaled_modified_bessel_k0(x: Tensor) -> Tensor:
    """``e^x K_0(x)``, finite where ``K_0`` underflows.

    Example:
        >>> ember.special.scaled_modified_bessel_k0(ember.tensor([0.5, 1.0, 1000.0]))
        tensor([1.5241, 1.1445, 0.0396])
    """
    return _bessel("scaled_modified_bessel_k0", x)


def scaled_modified_bessel_k1(x: Tensor) -> Tensor:
    """``e^x K_1(x)``, finite where ``K_1`` underflows.

    Example:
        >>> ember.special.scaled_modified_bessel_k1(ember.tensor([0.5, 1.0, 1000.0]))
        tensor([2.7310, 1.6362, 0.0396])
    """
    return _bessel("scaled_modified_bessel_k1", x)


def spherical_bessel_j0(x: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0).

    Example:
        >>> ember.special.spherical_bessel_j0(ember.tensor([0.0, 1.0, 3.0]))
        tensor([1.0000, 0.8415, 0.0470])
    """
    return _bessel("spherical_bessel_j0", x)


def airy_ai(x: Tensor) -> Tensor:
    """The Airy function ``Ai``, the solution of ``y'' = x y`` that decays as ``x -> inf``.

    Example:
        >>> ember.special.airy_ai(ember.tensor([-2.0, 0.0, 2.0]))
        tensor([0.2274, 0.3550, 0.0349])
    """
    return _bessel("airy_ai", x)


def i0e(input: Tensor) -> Tensor:
    """The exponentially scaled modified Bessel function ``e^-|x| I_0(x)``.

    Example:
        >>> ember.special.i0e(ember.tensor([0.0, 1.0, 100.0]))
        tensor([1.0000, 0.4658, 0.0399])
    """
    return apply(I0e, float_operand("i0e", input))


def i1e(input: Tensor) -> Tensor:
    """The exponentially scaled modified Bessel function ``e^-|x| I_1(x)`` (odd).

    Example:
        >>> ember.special.i1e(ember.tensor([0.0, 1.0, -100.0]))
        tensor([ 0.0000,  0.2079, -0.0397])
    """
    return apply(I1e, float_operand("i1e", input))
