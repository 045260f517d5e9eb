"""Special elementwise functions: two-argument angles and lengths (atan2, hypot), log-odds
(logit), and functions of exponentials and logarithms (xlogy, logaddexp, erfinv, ...).

Derivatives follow PyTorch's formulas, edge points included: ``hypot`` at ``(0, 0)`` is NaN,
``atan2``'s gradient is 0 where ``a² + b²`` is 0, ``sinc``'s is 0 at 0, ``logit`` with ``eps``
passes none outside ``[eps, 1 - eps]``, ``xlogy``'s gradient in ``x`` is 0 where ``x == 0``
and ``y <= 0``, ``copysign`` gives its second argument a zero gradient. (The step function
and the ops on integers and float bits are in :mod:`ember.ops.discrete`.)

NumPy has no erfc or erfinv: :mod:`ember.ops.erfc_kernel` computes them in float64 to about
2 ulps (a Chebyshev fit and ``erf``'s own fits below 2, a continued fraction
above; a rational first guess of erfinv refined by one or two Halley steps on ``erf``, or on
``log(erfc)`` near ±1, where ``erf`` has no digits left).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentTypeError, DTypeError, type_name
from ember.layouts import in_operands_layout
from ember.ops import arithmetic
from ember.ops.arithmetic import Binary
from ember.ops.binary32_kernel import copysign32, hypot32
from ember.ops.broadcast import sum_to
from ember.ops.compare import eq, ge, gt, le, lt
from ember.ops.complex_parts import Holomorphic, real
from ember.ops.convert import cast, promote, result_dtype, to_float
from ember.ops.creation import zeros
from ember.ops.erfc_kernel import erfc_array, erfcx_array, erfinv_array, ndtri_array
from ember.ops.float_host import float_operands
from ember.ops.forwarding import hand_over_tensor_like, hands_over
from ember.ops.inplace import bind_inplace, inplace
from ember.ops.int_args import as_float
from ember.ops.primitive import Primitive, apply, primitive, refuse_complex
from ember.ops.select import where
from ember.ops.softplus_mish import logaddexp32
from ember.ops.unary import Unary, cos, exp, exp2, in_float32, log, log1p, reciprocal, sin
from ember.tensor import Tensor, method

__all__ = ["atan2", "arctan2", "hypot", "logit", "xlogy", "copysign", "logaddexp", "logaddexp2",
           "erfinv", "erfc", "sinc", "deg2rad", "rad2deg", "float_power", "entr"]

# -- operands -----------------------------------------------------------------------------------
def _floating_pair(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    """Both operands in their result dtype, which must be floating (PyTorch has no integer
    kernel of ``hypot``, ``logaddexp``, ``nextafter``)."""
    a, b = promote(input, other)
    if not a.dtype.is_floating_point:
        raise DTypeError(f"{op}: needs floating tensors, got {_dtype_names(input, other)}. "
                         "Hint: convert with .float() first")
    return a, b


def _dtype_names(*xs: Any) -> str:
    return " and ".join(x.dtype.name if isinstance(x, Tensor) else type_name(x) for x in xs)


# -- two-argument math with gradients -----------------------------------------------------------
@primitive
class Atan2(Binary):
    """``atan2(a, b)``: the angle of the point ``(b, a)``. As in PyTorch, the backward gives 0
    where ``a² + b²`` is 0 (the origin), the forward-mode rule there gives NaN."""

    name = "atan2"

    def forward(self, xp, a, b):
        r = xp.arctan2(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        denom = a * a + b * b
        recip = where(eq(denom, 0), 0, reciprocal(denom))
        return (sum_to(g * b * recip, a.shape) if a.requires_grad else None,
                sum_to(g * -a * recip, b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return (b * da - a * db) / (a * a + b * b)


@primitive
class Hypot(Binary):
    """``sqrt(a² + b²)`` without overflow; its gradient ``(a, b) / out`` is NaN at the origin,
    as PyTorch's."""

    name = "hypot"
    save_outputs = True

    def forward(self, xp, a, b):
        r = hypot32(xp, a, b)
        r = xp.hypot(a, b) if r is None else r
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        out = ctx.out
        return (sum_to(g * a / out, a.shape) if a.requires_grad else None,
                sum_to(g * b / out, b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return (da * a + db * b) / ctx.out


@primitive
class XLogY(Binary):
    """``x * log(y)``, 0 where ``x == 0`` (even at ``y == 0``), NaN where ``y`` is NaN."""

    name = "xlogy"

    def forward(self, xp, a, b):  # (not in float32: PyTorch's half kernels round log(b) to
        # half before the product, c10's log(Half) being Half; NumPy's half log does too)
        out = xp.where(a == 0, 0, a * xp.log(b))
        r = xp.where(xp.isnan(b), b, out).astype(a.dtype, copy=False)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def _dx(self, v: Tensor, a: Tensor, b: Tensor) -> Tensor:
        # PyTorch's: xlogy(v, y), but 0 where x == 0 and y <= 0 (where log(y) is not finite)
        return where(eq(a, 0) & le(b, 0), 0, apply(XLogY, v, b))

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(self._dx(g, a, b), a.shape) if a.requires_grad else None,
                sum_to(g * a / b, b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return self._dx(da, a, b) + db * a / b


@primitive
class CopySign(Binary):
    """``|a|`` with the sign of ``b``. The gradient of ``a`` is ``out / a`` (0 where ``a`` is
    0, NaN at ±inf, as PyTorch's); the sign of ``b`` has a zero gradient."""

    name = "copysign"
    save_outputs = True

    def forward(self, xp, a, b):
        r = copysign32(xp, a, b)
        r = xp.copysign(a, b) if r is None else r
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def reads(self, ctx, i):
        return i == 0  # b's gradient is zeros: only its shape counts

    def _ratio(self, a: Tensor, out: Tensor) -> Tensor:
        return where(eq(a, 0), 0, out / a)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        # (b's zeros in C order, as PyTorch's: b itself may be a dropped stand-in, so its
        # layout must not decide it)
        return (sum_to(g * self._ratio(a, ctx.out), a.shape) if a.requires_grad else None,
                zeros(b.shape, dtype=b.dtype, device=b.device) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        return da * self._ratio(ctx.inputs[0], ctx.out)


class LogAddExpBase(Binary):
    """``log_base(base**a + base**b)``; ``d/da = 1 / (1 + base**(b - a))``, PyTorch's form."""

    ufunc = ""

    def forward(self, xp, a, b):
        r = getattr(xp, self.ufunc)(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def power(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(g / (1 + self.power(b - a)), a.shape) if a.requires_grad else None,
                sum_to(g / (1 + self.power(a - b)), b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return da / (1 + self.power(b - a)) + db / (1 + self.power(a - b))


@primitive
class LogAddExp(LogAddExpBase):
    name = "logaddexp"
    ufunc = "logaddexp"

    def forward(self, xp, a, b):
        if xp is np and a.dtype == b.dtype == np.float32:  # (in float64, rounded once)
            r = logaddexp32(a, b)
            return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)
        return super().forward(xp, a, b)

    def power(self, x):
        return exp(x)


@primitive
class LogAddExp2(LogAddExpBase):
    name = "logaddexp2"
    ufunc = "logaddexp2"

    def power(self, x):
        return exp2(x)


# -- one-argument math --------------------------------------------------------------------------
@primitive
class Logit(Unary):
    """``log(x / (1 - x))`` of ``x`` clamped to ``[eps, 1 - eps]`` (PyTorch's clamp: below
    ``eps`` gives ``eps``, above ``1 - eps`` gives ``1 - eps``). Without ``eps`` the gradient
    is NaN outside ``[0, 1]``; with it, 0 outside ``[eps, 1 - eps]``."""

    name = "logit"

    def forward(self, xp, a, *, eps):
        if eps is not None:  # the bounds in a's dtype, as PyTorch's (so clamp(x) then logit)
            lo = a.dtype.type(eps)
            hi = a.dtype.type(1) - lo
            a = xp.where(a < lo, lo, xp.where(a > hi, hi, a)).astype(a.dtype, copy=False)
        return self.log_odds(xp, a)

    @in_float32
    def log_odds(self, xp, a):
        return xp.log(a / (1 - a))

    def chain(self, v, x, y, *, eps):
        slope = v / (x * (1 - x))
        if eps is None:
            return where(lt(x, 0) | gt(x, 1), math.nan, slope)
        lo = x.dtype.np.type(eps)  # the bounds in x's dtype, as forward's
        return where(lt(x, float(lo)) | gt(x, float(x.dtype.np.type(1) - lo)), 0, slope)


@primitive
class Sinc(Holomorphic, Unary):
    """``sin(pi x) / (pi x)``, 1 at 0. Its derivative is PyTorch's
    ``(pi x cos(pi x) - sin(pi x)) / (pi x²)``, by its Taylor series where ``|pi x| < 0.1``
    (the formula cancels there: the second derivative was ``-pi²``, not ``-pi²/3``, near 0)."""

    name = "sinc"

    @in_float32
    def forward(self, xp, a):
        p = a * a.dtype.type(math.pi)
        return xp.where(a == 0, 1, xp.sin(p) / p).astype(a.dtype, copy=False)

    def chain(self, v, x, y):
        u = x * math.pi
        near = lt(u.abs(), 0.1)
        far = where(near, 1.0, u)
        u2 = u * u
        series = u * (-1 / 3 + u2 * (1 / 30 + u2 * (-1 / 840 + u2 * (1 / 45360 - u2 / 3991680))))
        return v * math.pi * where(near, series, (far * cos(far) - sin(far)) / (far * far))


@primitive
class Entr(Unary):
    """``-x log(x)``: 0 at 0, ``-inf`` below. Its derivative is PyTorch's ``-(1 + log(x))``
    everywhere (``inf`` at 0, NaN below 0)."""

    name = "special_entr"

    @in_float32
    def forward(self, xp, a):
        safe = xp.where(a > 0, a, 1)
        edge = xp.where(a < 0, -xp.inf, xp.where(a == 0, 0, a))  # (a: NaN stays NaN)
        out = xp.where(a > 0, -safe * xp.log(safe), edge)
        return out.astype(a.dtype, copy=False)

    def chain(self, v, x, y):
        return -v * (1 + log(x))


def entr(input: Tensor) -> Tensor:
    """Elementwise entropy ``-x log(x)``: 0 at 0, ``-inf`` for negative ``x``.

    Example:
        >>> ember.special.entr(ember.tensor([0.0, 0.5, -1.0]))
        tensor([0.0000, 0.3466,   -inf])
    """
    return _real_unary(Entr, input, "entr")


@primitive
class Erfc(Unary):
    name = "erfc"

    def forward(self, xp, a):
        return erfc_array(xp, a)

    def chain(self, v, x, y):
        return v * exp(-(x * x)) * (-2 / math.sqrt(math.pi))


@primitive
class Erfcx(Unary):
    """``exp(x²) erfc(x)``; its derivative is ``2 x erfcx(x) - 2 / sqrt(pi)``."""

    name = "erfcx"
    save_outputs = True

    def forward(self, xp, a):
        return erfcx_array(xp, a)

    def chain(self, v, x, y):
        return v * (2 * x * y - 2 / math.sqrt(math.pi))


@primitive
class Erfinv(Unary):
    name = "erfinv"
    save_inputs, save_outputs = False, True

    def forward(self, xp, a):
        return erfinv_array(xp, a)

    def chain(self, v, x, y):
        return v * exp(y * y) * (math.sqrt(math.pi) / 2)


@primitive
class Ndtri(Unary):
    """The standard normal quantile; its derivative is ``sqrt(2 pi) exp(y² / 2)`` (``inf`` at
    0 and 1, NaN outside ``[0, 1]``, as PyTorch's)."""

    name = "special_ndtri"
    save_inputs, save_outputs = False, True

    def forward(self, xp, a):
        return ndtri_array(xp, a)

    def chain(self, v, x, y):
        return v * exp(y * y / 2) * math.sqrt(2 * math.pi)


# -- the public functions -----------------------------------------------------------------------
@method("atan2", "arctan2")
def atan2(input: Any, other: Any) -> Tensor:
    """The angle of the point ``(other, input)`` in radians, in ``[-pi, pi]``, quadrant-aware
    (``atan(input / other)`` is not); integers give the default float dtype.

    Example:
        >>> ember.atan2(ember.tensor([1.0, 1.0]), ember.tensor([1.0, -1.0]))
        tensor([0.7854, 2.3562])
    """
    return apply(Atan2, *float_operands("atan2", input, other))


@method()
def hypot(input: Any, other: Any) -> Tensor:
    """``sqrt(input² + other²)``, without overflow or underflow on the way (floats only).

    Example:
        >>> ember.hypot(ember.tensor([3.0, 3e30]), ember.tensor([4.0, 4e30]))
        tensor([5.0000e+00, 5.0000e+30])
    """
    return apply(Hypot, *_floating_pair("hypot", input, other))


@method()
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """The log-odds ``log(input / (1 - input))``, the inverse of ``sigmoid``. With ``eps``,
    ``input`` is first clamped to ``[eps, 1 - eps]`` (and gets no gradient outside it); with
    none (or a negative one) values outside ``[0, 1]`` give NaN.

    Example:
        >>> ember.logit(ember.tensor([0.5, 0.75, 1.0]))
        tensor([0.0000, 1.0986,    inf])
        >>> ember.logit(ember.tensor([0.0, 1.0]), eps=0.25)
        tensor([-1.0986,  1.0986])
    """
    if eps is not None:
        eps = eps if type(eps) is float else as_float(eps, "logit", "eps")
        if eps < 0:
            eps = None
    x = to_float(input)
    refuse_complex("logit", x)  # as PyTorch: its clamp and NaN rules are real-only
    return apply(Logit, x, eps=eps)


@method()
def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, but 0 where ``input`` is 0 (so ``0 * log(0)`` is 0, the
    convention of entropies), and NaN where ``other`` is NaN.

    Example:
        >>> ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, math.e]))
        tensor([0., 2.])
    """
    return apply(XLogY, *float_operands("xlogy", input, other))


@method()
def copysign(input: Any, other: Any) -> Tensor:
    """``|input|`` with the sign (bit) of ``other``: ``-0.0`` and negative NaNs count as
    negative. ``other`` gets a zero gradient; integers give the default float dtype.

    Example:
        >>> ember.copysign(ember.tensor([1.0, -2.0, 3.0]), ember.tensor([-1.0, 1.0, -0.0]))
        tensor([-1.,  2., -3.])
    """
    return apply(CopySign, *float_operands("copysign", input, other))


@method()
def logaddexp(input: Any, other: Any) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow (floats, or complex as PyTorch).

    Example:
        >>> ember.logaddexp(ember.tensor([0.0, 100.0]), ember.tensor([0.0, 100.0]))
        tensor([  0.6931, 100.6931])
    """
    if result_dtype(input, other).is_complex:
        a, b = promote(input, other)
        first = ge(real(a), real(b))
        hi, lo = where(first, a, b), where(first, b, a)  # the larger real part factored out
        return hi + log1p(exp(lo - hi))
    return apply(LogAddExp, *_floating_pair("logaddexp", input, other))


@method()
def logaddexp2(input: Any, other: Any) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow (floats only).

    Example:
        >>> ember.logaddexp2(ember.tensor([0.0, 3.0]), ember.tensor([0.0, 3.0]))
        tensor([1., 4.])
    """
    return apply(LogAddExp2, *_floating_pair("logaddexp2", input, other))


def _real_unary(prim: Primitive, input: Tensor, op: str | None = None) -> Tensor:
    refuse_complex(op or prim.name, input)  # (the kernel is real-only)
    return apply(prim, to_float(input))


@method()
def erfinv(input: Tensor) -> Tensor:
    """The inverse error function: ``erf(erfinv(y)) == y`` on ``(-1, 1)``, ±inf at ±1, NaN
    beyond. Accurate to a few ulps up to ``1 - 2**-53``.

    Example:
        >>> ember.erfinv(ember.tensor([0.0, 0.5, -1.0]))
        tensor([0.0000, 0.4769,   -inf])
    """
    return _real_unary(Erfinv, input)


@method()
def erfc(input: Tensor) -> Tensor:
    """The complementary error function ``1 - erf(input)``, with full relative precision
    where it is tiny (``erfc(10)`` is 2.1e-45, not 0).

    Example:
        >>> ember.erfc(ember.tensor([0.0, 1.0, 10.0], dtype=ember.float64))
        tensor([1.0000e+00, 1.5730e-01, 2.0885e-45], dtype=ember.float64)
    """
    return _real_unary(Erfc, input)


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(input²) erfc(input)``
    (``ember.special.erfcx``), finite where ``erfc`` underflows; ``inf`` below -26.6.

    Example:
        >>> ember.special.erfcx(ember.tensor([0.0, 1.0, 100.0]))
        tensor([1.0000, 0.4276, 0.0056])
    """
    return _real_unary(Erfcx, input)


@method()
def sinc(input: Tensor) -> Tensor:
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.

    Example:
        >>> ember.sinc(ember.tensor([0.0, 0.5]))
        tensor([1.0000, 0.6366])
    """
    return apply(Sinc, to_float(input))


@method()
@hands_over
def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians; integers give the default float dtype.

    Example:
        >>> ember.deg2rad(ember.tensor([180, 90]))
        tensor([3.1416, 1.5708])
    """
    _need_tensor("deg2rad", input)
    x = to_float(input)
    refuse_complex("deg2rad", x)  # as PyTorch
    return x * (math.pi / 180)


@method()
@hands_over
def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees; integers give the default float dtype.

    Example:
        >>> ember.rad2deg(ember.tensor([math.pi]))
        tensor([180.])
    """
    _need_tensor("rad2deg", input)
    x = to_float(input)
    refuse_complex("rad2deg", x)  # as PyTorch
    return x * (180 / math.pi)


def _need_tensor(op: str, input: Any) -> None:
    if not isinstance(input, Tensor):
        hand_over_tensor_like(input, "input")  # (a sparse tensor: @hands_over hands it over)
        raise ArgumentTypeError(f"{op}: input must be a tensor, got {type_name(input)}")


@method()
def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed in float64, whatever the operands' dtypes (the result
    is float64, complex128 if an operand is complex; gradients come back in each input's
    dtype).

    Example:
        >>> ember.float_power(ember.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=ember.float64)
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        hand_over_tensor_like(input, "input")  # (float_power(nt, 2.0): hands it over)
        hand_over_tensor_like(exponent, "exponent")  # (float_power(2.0, nt): hands it over)
        raise ArgumentTypeError("float_power: needs a tensor input or exponent, got "
                                f"{type_name(input)} and {type_name(exponent)}")
    wide = _float_power_dtype(input, exponent)
    if isinstance(input, Tensor):
        input = cast(input, wide)
    if isinstance(exponent, Tensor):
        exponent = cast(exponent, wide)
    elif isinstance(exponent, bool):
        exponent = int(exponent)
    return arithmetic.pow(input, exponent)


def _float_power_dtype(input: Any, exponent: Any) -> dtypes.DType:
    """float_power's result dtype: complex128 if an operand is complex, else float64."""
    return dtypes.complex128 if result_dtype(input, exponent).is_complex else dtypes.float64


@method("float_power_")
def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place ``float_power``: only a tensor of the result's dtype (float64, complex128 with a
    complex operand) can hold it."""
    wide = _float_power_dtype(self, exponent)
    if self.dtype is not wide:
        raise DTypeError(f"float_power_: the result is {wide.name}, which cannot be written "
                         f"into a {self.dtype.name} tensor. Hint: use float_power, or "
                         f"convert with .to(ember.{wide.name}) first")
    return inplace(self, "float_power_", lambda old: float_power(old, exponent))


arctan2 = atan2

bind_inplace(atan2_=atan2, arctan2_=atan2, hypot_=hypot, logit_=logit, xlogy_=xlogy,
             copysign_=copysign, erfinv_=erfinv, erfc_=erfc, sinc_=sinc, deg2rad_=deg2rad,
             rad2deg_=rad2deg)
