"""Arithmetic with broadcasting: add, sub, mul, div (true and floor), remainder, pow, neg,
and Python's operators on tensors (their fused forms addcmul, addcdiv and lerp are in
``fused_arithmetic.py``). Each binary op
brings its operands to PyTorch's result dtype first (:func:`promote`), so its primitive only
ever sees one dtype.

Two PyTorch rules beyond the result dtype: true division of integers computes in the float
result dtype from the operands' own values, and a float16/bfloat16 tensor multiplied or
divided by a scalar computes in float32 and rounds once ("opmath": ``f16 * 1e-8`` is not 0).
Only a scalar second operand keeps its own value: a first one (``ember.mul(0.1, f16)``, a 0-d
float32 tensor times a float16 one) is rounded to half first, as PyTorch's kernels do. The
reflected operators (``0.1 / t``) are in ``reflected.py``.
Integer division and remainder by zero raise :class:`~ember.errors.DivisionByZero`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DivisionByZero, DTypeError, OpError, describe
from ember.layouts import in_operands_layout
from ember.ops import torch_steps as steps
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.complex_parts import Holomorphic
from ember.ops.convert import HALF, cast, clone, has_scalar, promote, promote_to, result_dtype
from ember.ops.creation import ones_like, zeros, zeros_like
from ember.ops.fits import check_exponent, check_factor, check_number_int
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import wide_int_as_float
from ember.ops.modulus_kernel import modulus32, zeros_signed_as
from ember.ops.overrides import TensorLikeOperand, handle
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.scaled_add import scaled_add
from ember.tensor import Tensor, method

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
           "floor_divide", "remainder", "fmod", "neg", "negative", "positive", "rsub", "pow"]


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
    complex_grad = True

    def forward(self, xp, a, b):
        if b.dtype.kind == "c":  # (PyTorch adds 1·b, a complex product: an infinite part of b
            b = xp.multiply(b, 1)  # makes its other part NaN, and -0 parts may turn +0)
        r = xp.add(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs  # (an input needing no gradient, such as y + 0.5's, costs no sum)
        return (sum_to(g, a._data.shape) if a.requires_grad else None,
                sum_to(g, b._data.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        return da + db


@primitive
class Sub(Binary):
    name = "sub"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a, b):
        r = xp.add(a, xp.multiply(b, -1)) if b.dtype.kind == "c" else xp.subtract(a, b)  # (Add)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(g, a._data.shape) if a.requires_grad else None,
                sum_to(neg(g), b._data.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        return da - db


@primitive
class Mul(Holomorphic, Binary):
    name = "mul"
    jvp_takes_none = True
    limited_dtypes = dtypes.ALL_LIMITED

    def forward(self, xp, a, b):
        r = xp.multiply(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def reads(self, ctx, i):
        return ctx.inputs[1 - i].requires_grad

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        need_a, need_b = a.requires_grad, b.requires_grad
        return (sum_to(g * b, a._data.shape) if need_a else None,
                sum_to(g * a, b._data.shape) if need_b else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        if da is None or db is None:
            return a * db if da is None else da * b
        return da * b + a * db


@primitive
class Div(Holomorphic, Binary):
    name = "div"
    jvp_takes_none = True

    def forward(self, xp, a, b):
        r = xp.true_divide(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def reads(self, ctx, i):
        return i == 1 or ctx.inputs[1].requires_grad

    def vjp(self, ctx, g):
        a, b = ctx.inputs  # (b's as PyTorch's to the bit, inf and NaN included: -g * (a/b/b))
        return (sum_to(g / b, a.shape) if a.requires_grad else None,
                sum_to(-(g * (a / b / b)), b.shape) if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        if db is None:
            return da / b
        return (-a / b * db if da is None else da - a / b * db) / b


def _check_divisor(op: str, a: Any, b: Any) -> None:
    """Integer division by zero has no value (NumPy would give 0): PyTorch raises."""
    if b.dtype.kind in "iu" and a.size and not b.all():
        raise DivisionByZero(f"{op}: integer division by zero: the divisor "
                             f"{describe(b.shape, b.dtype)} holds a 0 (dividend "
                             f"{describe(a.shape, a.dtype)}). Hint: mask the zeros first, or "
                             "divide floating tensors, where x / 0 is inf")


class RoundedDiv(Binary):
    """A rounded quotient, a step function of both inputs: its gradient is zeros, as
    PyTorch's (never ``0 / b``, which is NaN where ``b`` is 0)."""

    save_inputs = False

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (zeros(a.shape, dtype=g.dtype, device=g.device),
                zeros(b.shape, dtype=g.dtype, device=g.device))

    def jvp(self, ctx, da, db):
        return zeros_like(da + db)


@primitive
class FloorDiv(RoundedDiv):
    name = "floor_divide"

    def forward(self, xp, a, b):
        _check_divisor(self.name, a, b)
        half = a.dtype in steps.HALF_ARRAYS
        r = steps.half_floor_divide(xp, a, b) if half else xp.floor_divide(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)


class Modulus(Binary):
    """``a - b * quotient(a, b)`` for a rounded quotient: the gradient is ``(1, -quotient)``."""

    def quotient(self, a: Tensor, b: Tensor) -> Tensor:
        raise NotImplementedError

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return sum_to(g, a.shape), sum_to(-g * self.quotient(a, b), b.shape)

    def jvp(self, ctx, da, db):
        a, b = ctx.inputs
        return da - db * self.quotient(a, b)


@primitive
class Remainder(Modulus):
    name = "remainder"

    def forward(self, xp, a, b):
        _check_divisor(self.name, a, b)
        r = modulus32(xp, a, b, python=True)
        r = zeros_signed_as(xp, xp.remainder(a, b), a) if r is None else r
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def quotient(self, a, b):
        return floor_divide(a, b)


@primitive
class Fmod(Modulus):
    name = "fmod"

    def forward(self, xp, a, b):
        _check_divisor(self.name, a, b)
        r = modulus32(xp, a, b, python=False)
        r = xp.fmod(a, b) if r is None else r
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def quotient(self, a, b):
        return _trunc_div(a, b)


@primitive
class TruncDiv(RoundedDiv):
    """Division rounded toward zero. Integers exactly (a float quotient loses digits past
    2**24): the floor quotient, one more where it is negative and inexact."""

    name = "div_trunc"
    backward_name = "DivBackward2"  # PyTorch's div(rounding_mode=) overload

    def forward(self, xp, a, b):
        if a.dtype.kind not in "iub":  # (floats; bfloat16's NumPy kind is "V")
            return xp.trunc(xp.true_divide(a, b))
        _check_divisor(self.name, a, b)
        q, r = xp.divmod(a, b)
        return q + ((q < 0) & (r != 0))


def _trunc_div(a: Tensor, b: Tensor) -> Tensor:
    """The quotient rounded toward zero, of two tensors of one dtype (zero gradient)."""
    return apply(TruncDiv, a, b)


@primitive
class Pow(Holomorphic, Binary):
    """``a ** b`` of two tensors. As in PyTorch, a zero exponent gets no gradient through the
    base (even at base 0), and a zero base with a non-negative (real) exponent none through the
    exponent (where ``log(0)`` would give NaN)."""

    name = "pow"
    backward_name = "PowBackward1"  # PyTorch's Tensor-exponent overload
    save_outputs = True

    def forward(self, xp, a, b):
        if a.dtype.kind in "iu" and b.dtype.kind == "i" and (b < 0).any():
            r = steps.integer_pow(xp, a, b)
        else:
            r = steps.tensor_power(xp, a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        return (sum_to(g * _dpow_dbase(a, b), a.shape) if a.requires_grad else None,
                sum_to(g * _dpow_dexponent(a, b, ctx.out), b.shape)
                if b.requires_grad else None)

    def jvp(self, ctx, da, db):
        from ember.ops.select import where

        a, b = ctx.inputs
        # a zero tangent (an input held fixed) adds nothing, even where the partial derivative
        # is infinite or NaN (the exponent's at a negative base)
        return (where(da == 0, 0, da * _dpow_dbase(a, b))
                + where(db == 0, 0, db * _dpow_dexponent(a, b, ctx.out)))


def _dpow_dbase(a: Tensor, b: Tensor) -> Tensor:
    from ember.ops.select import where

    return where(b == 0, 0, b * a ** (b - 1))


def _dpow_dexponent(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    from ember.ops.select import where
    from ember.ops.unary import log

    if b.dtype.is_complex:  # as PyTorch: only a real non-negative exponent (else NaN)
        return where((a == 0) & (b.imag == 0) & (b.real >= 0), 0, out * log(a))
    return where((a == 0) & (b >= 0), 0, out * log(a))


@primitive
class PowScalar(Holomorphic, Primitive):
    """``a ** exponent`` for a Python-number exponent (no exponent gradient to compute)."""

    name = "pow_scalar"
    backward_name = "PowBackward0"  # PyTorch's Scalar-exponent overload

    def forward(self, xp, a, *, exponent):
        if exponent == 2 and a.dtype in _SQUARED:  # (NumPy's power loop: 33 against 8.6 µs
            return xp.square(a)  # at 10^5 float32, the same values, and PyTorch's x·x)
        if a.dtype.kind == "c" and exponent in steps.COMPLEX_SHORTCUTS:
            return steps.complex_pow_shortcut(xp, a, exponent)
        if a.dtype.kind == "c" and exponent not in (0, 1, 2, 3):  # (NumPy's products: C's
            return steps.tensor_power(xp, a, xp.asarray(exponent, a.dtype))  # pow past 3)
        if exponent in steps.POW_SHORTCUTS and a.dtype in steps.POW_SHORTCUT_DTYPES:
            return steps.pow_shortcut(xp, a, exponent)
        if a.dtype.isbuiltin != 1:  # (bfloat16, float8: an int past int64 as a float)
            exponent = wide_int_as_float(exponent)
            if type(exponent) is float:  # (rounded to the tensor's dtype first, as PyTorch's
                exponent = a.dtype.type(exponent)  # bf16 ** 0.1 is bf16 ** 0.10009765625)
        return xp.power(a, exponent).astype(a.dtype, copy=False)  # bfloat16 ** float widens

    def infer(self, a, *, exponent):
        return a

    def vjp(self, ctx, g):
        return g * self.derivative(ctx.inputs[0], ctx.params["exponent"])

    def jvp(self, ctx, da):
        return da * self.derivative(ctx.inputs[0], ctx.params["exponent"])

    def derivative(self, x: Tensor, exponent: float) -> Tensor:
        if exponent == 0:
            return zeros_like(x)
        if exponent == 2:
            return x * 2
        return x ** (exponent - 1) * exponent


@primitive
class Neg(Primitive):
    name = "neg"
    save_inputs = False
    complex_grad = True

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
    try:
        a, b = promote(input, other)
    except TensorLikeOperand:
        return handle(add, (input, other), {"alpha": alpha})
    if alpha != 1 or alpha.__class__ is not int:  # (1.0, 1+0j, True: their type is checked)
        if a.dtype in HALF or a.dtype.is_complex:
            return scaled_add("add", alpha, alpha, a, b, (input, other))
        b = _scaled("add", "alpha", b, alpha, input, other)
    return apply(Add, a, b)


@method("sub", "subtract", "__sub__")
def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    if _is_bool(input) or _is_bool(other):
        raise DTypeError(_BOOL_SUB[_is_bool(input) and _is_bool(other)])
    try:
        a, b = promote(input, other)
    except TensorLikeOperand:
        return handle(sub, (input, other), {"alpha": alpha})
    if alpha != 1 or alpha.__class__ is not int:
        if a.dtype in HALF or a.dtype.is_complex:
            return scaled_add("sub", alpha, -alpha, a, b, (input, other))
        b = _scaled("sub", "alpha", b, alpha, input, other)
    return apply(Sub, a, b)


_BOOL_SUB = {
    True: "sub: subtraction, the `-` operator, with two bool tensors is not supported. Hint: "
          "use `^` or logical_xor() instead",
    False: "sub: subtraction, the `-` operator, with a bool tensor is not supported. Hint: to "
           "invert a mask use `~` or logical_not(); else convert it with .int() first",
}


def _scaled(op: str, param: str, other: Tensor, alpha: Any, *operands: Any) -> Tensor:
    """``alpha * other`` in ``other``'s dtype, the op's result dtype, so that nothing overflows
    in a narrower one first (``uint8 + 2 * int8`` is int16 throughout) and ``bool + 2 * bool``
    stays bool; ``alpha`` is checked first as PyTorch does (:func:`check_factor`)."""
    check_factor(op, param, alpha, other.dtype, operands)
    return cast(mul(other, alpha), other.dtype)


def _is_bool(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x._data.dtype.kind == "b"  # (cheaper than x.dtype: sub is a hot path)
    return isinstance(x, (bool, np.bool_))


@method("mul", "multiply", "__mul__")
def mul(input: Any, other: Any) -> Tensor:
    """``input * other`` with broadcasting."""
    try:
        a, b = promote(input, other)
    except TensorLikeOperand:
        return handle(mul, (input, other), {})
    dtype = a.dtype
    if dtype in _SCALAR_RULED and has_scalar(input, other):
        if dtype in dtypes.ALL_LIMITED:
            raise DTypeError(f"mul: a {dtype.name} tensor times a Python number is not "
                             f"implemented, as in PyTorch (two {dtype.name} tensors multiply). "
                             "Hint: convert with .float() first")
        if has_scalar(other):
            return _in_float32(Mul, a, other, dtype)
    return apply(Mul, a, b)


# dtypes whose product with a Python number PyTorch computes its own way (half precision in
# float32) or not at all (the float8s)
_SCALAR_RULED = frozenset(HALF + dtypes.FLOAT8_DTYPES)


def _in_float32(prim: Primitive, a: Tensor, other: Any, dtype: dtypes.DType) -> Tensor:
    """A half-precision op ``a`` (already ``dtype``) with a scalar second operand as PyTorch
    computes it: in float32, from the scalar's own value, rounded to ``dtype`` once."""
    return cast(apply(prim, *promote_to(dtypes.float32, a, other)), dtype)


@method("div", "divide", "true_divide", "__truediv__")
def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other``; integer inputs give the default float dtype, as in PyTorch.

    ``rounding_mode="floor"`` or ``"trunc"`` rounds the quotient (a zero gradient).
    """
    if rounding_mode == "floor":
        return floor_divide(input, other)
    try:
        a, b = promote(input, other)
    except TensorLikeOperand:
        return handle(div, (input, other), {"rounding_mode": rounding_mode})
    if rounding_mode == "trunc":
        a, b = _no_bool("div", a, b)
        if a.dtype in HALF and has_scalar(other):
            return _in_float32(TruncDiv, a, other, a.dtype)
        return _trunc_div(a, b)
    if rounding_mode is not None:
        raise ArgumentError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                            f"{rounding_mode!r}")
    dtype = a.dtype
    if not dtype.is_floating_point and not dtype.is_complex:  # from the operands' own
        # values: uint8 / -1 is -1.0
        a, b = promote_to(dtypes.get_default_dtype(), input, other)
    elif dtype in HALF and has_scalar(other):
        return _in_float32(Div, a, other, dtype)
    return apply(Div, a, b)


def _no_bool(op: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Promoted operands of a rounding division, which PyTorch does not define for bool."""
    if a.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: not defined for bool tensors ({describe(a.shape, a.dtype)}, "
                         f"{describe(b.shape, b.dtype)}). Hint: convert with .int() first")
    return a, b


@method("floor_divide", "__floordiv__")
def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other`` rounded toward minus infinity (a zero gradient, as PyTorch's)."""
    try:
        operands = promote(input, other)
    except TensorLikeOperand:
        return handle(floor_divide, (input, other), {})
    a, b = _no_bool("floor_divide", *operands)
    if a.dtype in HALF and has_scalar(other):
        return _in_float32(FloorDiv, a, other, a.dtype)
    return apply(FloorDiv, a, b)


@method("remainder", "__mod__")
def remainder(input: Any, other: Any) -> Tensor:
    """Python's ``%``: the remainder with the divisor's sign."""
    try:
        operands = promote(input, other)
    except TensorLikeOperand:
        return handle(remainder, (input, other), {})
    return apply(Remainder, *_no_bool("remainder", *operands))


@method()
def fmod(input: Any, other: Any) -> Tensor:
    """C's ``fmod``: the remainder of division rounded toward zero, with the dividend's sign.

    Example:
        >>> ember.fmod(ember.tensor([-3.0, 3.0]), 2)
        tensor([-1.,  1.])
    """
    return apply(Fmod, *_no_bool("fmod", *promote(input, other)))


@method("pow", "__pow__")
def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """``input ** exponent``; either may be a Python number. Dtypes follow PyTorch:
    ``int_tensor ** 2`` stays integer, ``int_tensor ** 0.5`` is float, and integer tensors
    cannot take negative Python-number exponents.

    Example:
        >>> ember.pow(ember.tensor([1.0, 2.0, 3.0]), 2)
        tensor([1., 4., 9.])
        >>> 2 ** ember.tensor([0, 3])
        tensor([1, 8])
    """
    if type(exponent) in _NUMBERS and type(input) is Tensor and input.dtype.is_floating_point:
        check_number_int("pow", exponent)  # (x ** 2**64 was 1.0; PyTorch's Scalar refuses it)
        check_exponent("pow", exponent, input.dtype)
        return apply(PowScalar, input, exponent=exponent)
    if not isinstance(exponent, _SCALARS) or not isinstance(input, Tensor):
        try:
            a, b = promote(input, exponent)
        except TensorLikeOperand:
            return handle(pow, (input, exponent), {})
        _pow_dtype(a.dtype)
        return apply(Pow, a, b)
    if isinstance(exponent, (bool, np.bool_)) and input.dtype is dtypes.bool_:
        return clone(input) if exponent else ones_like(input)  # bool, as in PyTorch
    if isinstance(exponent, (np.generic, bool)):
        exponent = exponent.item() if isinstance(exponent, np.generic) else int(exponent)
    check_number_int("pow", exponent)
    dtype = result_dtype(input, exponent)
    _pow_dtype(dtype)
    check_exponent("pow", exponent, dtype)
    if dtype.category < dtypes.FLOAT and exponent < 0:
        raise OpError(f"pow: integers to negative integer powers are not allowed ({dtype.name} "
                      f"tensor ** {exponent}). Hint: convert the tensor with .float() first")
    return apply(PowScalar, cast(input, dtype), exponent=exponent)


_NUMBERS = (int, float)
_SQUARED = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_SCALARS = (int, float, complex, np.generic)


def _pow_dtype(dtype: dtypes.DType) -> None:
    if dtype is dtypes.bool_:
        raise DTypeError("pow: not defined for bool ** bool. Hint: convert with .int() first")


@method("neg", "negative", "__neg__")
def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input.dtype is dtypes.bool_:
        raise DTypeError("neg: negation of a bool tensor is not defined. Hint: use `~` or "
                         "logical_not() instead")
    return apply(Neg, input)


@method("positive", "__pos__")
def positive(input: Tensor) -> Tensor:
    """``+input``: ``input`` itself.

    Example:
        >>> ember.positive(ember.tensor([-1.0, 2.0]))
        tensor([-1.,  2.])
    """
    if input.dtype is dtypes.bool_:
        raise DTypeError("positive: the `+` operator on a bool tensor is not defined, as in "
                         "PyTorch")
    return input


@method("rsub")
def rsub(input: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


bind_inplace({add: np.add, sub: np.subtract, mul: np.multiply},  # (written directly)
             add_=add, __iadd__=add, sub_=sub, __isub__=sub, mul_=mul, __imul__=mul,
             div_=div, __itruediv__=div, floor_divide_=floor_divide, __ifloordiv__=floor_divide,
             remainder_=remainder, __imod__=remainder, neg_=neg, negative_=neg, fmod_=fmod,
             pow_=pow, __ipow__=pow)

subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg
