"""Comparisons, bitwise ops and floating-point tests (no gradient), and nan_to_num.

Comparisons bring their operands to PyTorch's common dtype first (``int_tensor == 2.5``
compares in float) and return bool tensors. The logical ops, the bitwise primitives applied
to truth values, live in ``ops/logical.py`` and are re-exported here.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, is_complex_input, type_name
from ember.layouts import in_operands_layout, is_dense
from ember.ops.broadcast import broadcast_shapes
from ember.ops.convert import clone, promote
from ember.ops.creation import ones_like, scalar_tensor, zeros_like
from ember.ops.forwarding import hands_over
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import as_float
from ember.ops.operator_protocol import OPERANDS, refuse_foreign
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, calling_op, handle
from ember.ops.primitive import (
    Primitive,
    TensorSpec,
    apply,
    complex_error,
    primitive,
    refuse_complex,
    refuse_limited,
)
from ember.tensor import Tensor, method

__all__ = ["eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge",
           "greater_equal", "equal", "isclose", "allclose", "logical_and", "logical_or",
           "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "isnan", "isinf",
           "isfinite", "isposinf", "isneginf", "signbit", "isreal", "nan_to_num"]


class Elementwise(Primitive):
    """A gradient-free elementwise primitive computed by one backend function, ``ufunc``."""

    differentiable = False
    save_inputs = False
    ufunc = ""
    boolean = True  # the output is bool (else it has the inputs' dtype)

    def forward(self, xp, *arrays):
        r = getattr(xp, self.ufunc)(*arrays)
        return r if arrays[0].flags.c_contiguous else in_operands_layout(xp, r, *arrays)

    def infer(self, *specs):
        shape = broadcast_shapes(*(s.shape for s in specs), op=self.name)
        return TensorSpec(shape, dtypes.bool_ if self.boolean else specs[0].dtype)


class Ordering(Elementwise):
    """A comparison by order, which complex numbers do not have (NumPy's lexicographic one is
    not PyTorch's: it raises)."""

    def forward(self, xp, a, b):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        r = getattr(xp, self.ufunc)(a, b)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)


def _elementwise(cls_name: str, name: str, ufunc: str, boolean: bool = True,
                 base: type = Elementwise, limited: frozenset = frozenset()) -> Primitive:
    return primitive(type(cls_name, (base,), {"name": name, "ufunc": ufunc,
                                              "boolean": boolean, "limited_dtypes": limited,
                                              "__module__": __name__}))


Eq = _elementwise("Eq", "eq", "equal", limited=dtypes.ALL_LIMITED)
Ne = _elementwise("Ne", "ne", "not_equal", limited=dtypes.ALL_LIMITED)
Lt = _elementwise("Lt", "lt", "less", base=Ordering)
Le = _elementwise("Le", "le", "less_equal", base=Ordering)
Gt = _elementwise("Gt", "gt", "greater", base=Ordering)
Ge = _elementwise("Ge", "ge", "greater_equal", base=Ordering)
BitwiseAnd = _elementwise("BitwiseAnd", "bitwise_and", "bitwise_and", boolean=False,
                         limited=dtypes.WIDE_UNSIGNED)
BitwiseOr = _elementwise("BitwiseOr", "bitwise_or", "bitwise_or", boolean=False,
                         limited=dtypes.WIDE_UNSIGNED)
BitwiseXor = _elementwise("BitwiseXor", "bitwise_xor", "bitwise_xor", boolean=False,
                         limited=dtypes.WIDE_UNSIGNED)
BitwiseNot = _elementwise("BitwiseNot", "bitwise_not", "invert", boolean=False)


class Shift(Elementwise):
    """A bit shift as PyTorch defines it past the C rules: a shift by a negative amount or by
    the bit width or more gives 0 (for a right shift of a negative number, -1)."""

    boolean = False

    def forward(self, xp, a, b):
        bits = a.dtype.itemsize * 8
        inside = (b >= 0) & (b < bits)
        out = getattr(xp, self.ufunc)(a, xp.where(inside, b, 0))
        beyond = a >> (bits - 1) if self.ufunc == "right_shift" and a.dtype.kind == "i" else 0
        r = xp.where(inside, out, beyond)
        return r if a.flags.c_contiguous else in_operands_layout(xp, r, a, b)


@primitive
class LeftShift(Shift):
    name, ufunc = "bitwise_left_shift", "left_shift"


@primitive
class RightShift(Shift):
    name, ufunc = "bitwise_right_shift", "right_shift"


IsNan = _elementwise("IsNan", "isnan", "isnan", limited=dtypes.ALL_LIMITED)
IsInf = _elementwise("IsInf", "isinf", "isinf", limited=frozenset([dtypes.float8_e5m2]))
IsFinite = _elementwise("IsFinite", "isfinite", "isfinite",
                        limited=frozenset([dtypes.float8_e5m2, dtypes.float8_e8m0fnu]))
SignBit = _elementwise("SignBit", "signbit", "signbit")


# -- comparisons --------------------------------------------------------------------------------
@method("eq")
def eq(input: Tensor, other: Any) -> Tensor:
    """``input == other`` elementwise, as a bool tensor (broadcasting; scalars allowed).

    Example:
        >>> ember.eq(ember.tensor([1, 2]), 2)
        tensor([False,  True])
    """
    try:
        return apply(Eq, *promote(input, other))
    except TensorLikeOperand:  # a DTensor, an fx Proxy, …
        return handle(eq, (input, other), {})


@method("ne", "not_equal")
def ne(input: Tensor, other: Any) -> Tensor:
    """``input != other`` elementwise, as a bool tensor."""
    try:
        return apply(Ne, *promote(input, other))
    except TensorLikeOperand:  # a DTensor, an fx Proxy, …
        return handle(ne, (input, other), {})


@method("lt", "less")
def lt(input: Tensor, other: Any) -> Tensor:
    """``input < other`` elementwise, as a bool tensor.

    Example:
        >>> ember.tensor([1.0, 3.0]) < 2
        tensor([ True, False])
    """
    try:
        return apply(Lt, *promote(input, other))
    except TensorLikeOperand:  # a DTensor, an fx Proxy, …
        return handle(lt, (input, other), {})


@method("le", "less_equal")
def le(input: Tensor, other: Any) -> Tensor:
    """``input <= other`` elementwise, as a bool tensor."""
    try:
        return apply(Le, *promote(input, other))
    except TensorLikeOperand:  # a DTensor, an fx Proxy, …
        return handle(le, (input, other), {})


@method("gt", "greater")
def gt(input: Tensor, other: Any) -> Tensor:
    """``input > other`` elementwise, as a bool tensor."""
    try:
        return apply(Gt, *promote(input, other))
    except TensorLikeOperand:  # a DTensor, an fx Proxy, …
        return handle(gt, (input, other), {})


@method("ge", "greater_equal")
def ge(input: Tensor, other: Any) -> Tensor:
    """``input >= other`` elementwise, as a bool tensor."""
    try:
        return apply(Ge, *promote(input, other))
    except TensorLikeOperand:  # a DTensor, an fx Proxy, …
        return handle(ge, (input, other), {})


not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge


def _operator(fn: Any, name: str, swap: bool = False) -> None:
    """Binds ``Tensor.<name>``; operands that are not numbers, NumPy arrays or tensors give
    NotImplemented, so ``t == None`` is False and ``t < "a"`` a TypeError, as Python expects
    (``t == np_array`` compares elements, as in PyTorch, from either side)."""
    def op(self: Tensor, other: Any) -> Any:
        if not isinstance(other, OPERANDS) or \
                isinstance(other, np.ndarray) and other.dtype.kind not in "biufc":
            refuse_foreign(name, *((other, self) if swap else (self, other)))
            return NotImplemented  # (an array of strings or objects: == is False, as torch's)
        return fn(other, self) if swap else fn(self, other)
    op.__name__ = name
    method(name)(op)


for _fn, _name in [(eq, "__eq__"), (ne, "__ne__"), (lt, "__lt__"), (le, "__le__"),
                   (gt, "__gt__"), (ge, "__ge__")]:
    _operator(_fn, _name)


@method()
def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and the same values (a Python bool).

    Example:
        >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1.0, 2.0]))
        True
    """
    refuse_limited("equal", input.dtype, dtypes.WIDE_UNSIGNED)
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(eq(input, other)._data.all())


@primitive
class IsClose(Primitive):
    name = "isclose"
    limited_dtypes = dtypes.WIDE_UNSIGNED
    differentiable = False
    save_inputs = False

    def forward(self, xp, a, b, *, rtol, atol, equal_nan, whole_in="float32"):
        # PyTorch's arithmetic, each step rounded to the operands' dtype: ``|b * rtol|`` (for
        # float16 and bfloat16 computed in float32), plus atol, and ``|a - b|``; bools and
        # integers (equal exactly) in ``whole_in``, the default dtype (0 and 1 for bools: the
        # tolerances apply)
        close = xp.equal(a, b)
        if equal_nan:
            close |= xp.isnan(a) & xp.isnan(b)
        if rtol == atol == 0:
            return close
        if a.dtype.kind in "biu":
            work = getattr(dtypes, whole_in).np
            a, b = a.astype(work), b.astype(work)
        dtype = a.dtype.type
        wide = np.float32 if a.dtype.itemsize < 4 else dtype  # (PyTorch's opmath type)
        with np.errstate(all="ignore"):  # (inf * 0 is NaN: never within tolerance)
            bound = _modulus(xp, (b.astype(wide, copy=False) * wide(rtol)).astype(dtype,
                                                                                copy=False))
            bound += bound.dtype.type(atol)
            error = _modulus(xp, a - b)
        # an infinite error is never within tolerance, even an infinite one: infinities are
        # close only to themselves (PyTorch's rule)
        return close | (xp.isfinite(error) & xp.less_equal(error, bound))

    def infer(self, a, b, **params):
        return TensorSpec(broadcast_shapes(a.shape, b.shape, op=self.name), dtypes.bool_)


def _modulus(xp, z):
    """``|z|``; of complex64 as PyTorch's CPU kernel, ``sqrt(re² + im²)`` in float64 rounded
    to float32 (NumPy's float32 hypot rounds otherwise); an infinite part gives inf even beside
    a NaN one, as hypot."""
    if z.dtype != np.complex64:
        return xp.abs(z)
    re, im = z.real.astype(np.float64), z.imag.astype(np.float64)
    modulus = xp.sqrt(re * re + im * im)
    return xp.where(xp.isinf(re) | xp.isinf(im), np.inf, modulus).astype(np.float32)


def _same_dtype(op: str, input: Tensor, other: Any) -> tuple[Tensor, Tensor]:
    if not isinstance(input, Tensor):
        if type(input) in TENSOR_LIKE:
            raise TensorLikeOperand(op)  # (isclose hands it over)
        raise DTypeError(f"{op}: input must be a tensor, got {type_name(input)}")
    if not isinstance(other, Tensor):  # (a tensor-like raises TensorLikeOperand here)
        return input, scalar_tensor(other, input.dtype, input.device)
    if input.dtype is not other.dtype:
        raise DTypeError(f"{op}: input is {input.dtype.name} but other is {other.dtype.name}; "
                         f"{op} compares tensors of one dtype. Hint: convert one with .to()")
    return input, other


@method()
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|``, as a bool tensor.

    An infinity is close only to the same infinity; NaNs are close to each other only with
    ``equal_nan``. Each step is rounded to the dtype, as in PyTorch (bools and integers in
    the default dtype).

    Example:
        >>> ember.isclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0 + 1e-9, 2.1]))
        tensor([ True, False])
    """
    try:
        a, b = _same_dtype("isclose", input, other)
    except TensorLikeOperand:
        return handle(isclose, (input, other, rtol, atol, equal_nan), {})
    if not type(rtol) is type(atol) is float:
        rtol, atol = as_float(rtol, "isclose", "rtol"), as_float(atol, "isclose", "atol")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not tol >= 0:  # (NaN too)
            raise ArgumentError(f"{calling_op()}: {name} must be greater than or equal to "
                                f"zero, but got {tol}")
    whole = not (a.dtype.is_floating_point or a.dtype.is_complex)
    whole_in = dtypes.get_default_dtype().name if whole else "float32"
    return apply(IsClose, a, b, rtol=rtol, atol=atol, equal_nan=bool(equal_nan),
                 whole_in=whole_in)


@method()
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True if every element of ``input`` is close to ``other`` (see :func:`isclose`).

    Example:
        >>> ember.allclose(ember.ones(3), ember.ones(3) + 1e-9)
        True
    """
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


# -- bitwise -------------------------------------------------------------------------------------
def _integral(op: str, *xs: Tensor) -> tuple[Tensor, ...]:
    for x in xs:
        if x.dtype.is_floating_point:
            raise DTypeError(f"{op}: needs bool or integer tensors, got {x.dtype.name}. Hint: "
                             "for truth values of floats use the logical_* ops")
    return xs


@method("bitwise_and", "__and__")
def bitwise_and(input: Tensor, other: Any) -> Tensor:
    """Bitwise AND of bool or integer tensors (``&``).

    Example:
        >>> ember.tensor([True, False]) & True
        tensor([ True, False])
    """
    try:
        operands = promote(input, other)
    except TensorLikeOperand:
        return handle(bitwise_and, (input, other), {})
    return apply(BitwiseAnd, *_integral("bitwise_and", *operands))


@method("bitwise_or", "__or__")
def bitwise_or(input: Tensor, other: Any) -> Tensor:
    """Bitwise OR of bool or integer tensors (``|``)."""
    try:
        operands = promote(input, other)
    except TensorLikeOperand:
        return handle(bitwise_or, (input, other), {})
    return apply(BitwiseOr, *_integral("bitwise_or", *operands))


@method("bitwise_xor", "__xor__")
def bitwise_xor(input: Tensor, other: Any) -> Tensor:
    """Bitwise XOR of bool or integer tensors (``^``)."""
    try:
        operands = promote(input, other)
    except TensorLikeOperand:
        return handle(bitwise_xor, (input, other), {})
    return apply(BitwiseXor, *_integral("bitwise_xor", *operands))


@method("bitwise_not", "__invert__")
def bitwise_not(input: Tensor) -> Tensor:
    """Bitwise NOT of a bool or integer tensor (``~``): logical NOT for bool.

    Example:
        >>> ~ember.tensor([0, 5])
        tensor([-1, -6])
    """
    return apply(BitwiseNot, *_integral("bitwise_not", input))


@method("bitwise_left_shift", "__lshift__")
def bitwise_left_shift(input: Tensor, other: Any) -> Tensor:
    """``input << other`` of integer tensors; bits shifted out are lost (``int8 100 << 1`` is
    -56), and shifting by the bit width or more gives 0.

    Example:
        >>> ember.tensor([1, 3]) << 2
        tensor([ 4, 12])
    """
    return apply(LeftShift, *_shiftable("bitwise_left_shift", input, other))


@method("bitwise_right_shift", "__rshift__")
def bitwise_right_shift(input: Tensor, other: Any) -> Tensor:
    """``input >> other`` of integer tensors, arithmetic (sign-filling) for signed dtypes."""
    return apply(RightShift, *_shiftable("bitwise_right_shift", input, other))


def _shiftable(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    a, b = _integral(op, *promote(input, other))
    if a.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: needs integer tensors, got two bools, as in PyTorch. Hint: "
                         "convert with .int() first")
    return a, b


for _fn, _name in [(bitwise_and, "__rand__"), (bitwise_or, "__ror__"),
                   (bitwise_xor, "__rxor__"), (bitwise_left_shift, "__rlshift__"),
                   (bitwise_right_shift, "__rrshift__")]:
    _operator(_fn, _name, swap=True)

bind_inplace(bitwise_and_=bitwise_and, __iand__=bitwise_and, bitwise_or_=bitwise_or,
             __ior__=bitwise_or, bitwise_xor_=bitwise_xor, __ixor__=bitwise_xor,
             bitwise_left_shift_=bitwise_left_shift, __ilshift__=bitwise_left_shift,
             bitwise_right_shift_=bitwise_right_shift, __irshift__=bitwise_right_shift,
             bitwise_not_=bitwise_not, eq_=eq, ne_=ne, lt_=lt, le_=le, gt_=gt, ge_=ge)


# -- floating-point tests -----------------------------------------------------------------------
def _all(input: Tensor, value: bool) -> Tensor:
    """The answer of a float test for a bool or integer tensor: ``value`` everywhere."""
    return (ones_like if value else zeros_like)(input, dtype=dtypes.bool_)


@hands_over  # (ember.isnan(nt) hands a nested tensor over; t.isnan() is the bare function)
@method()
def isnan(input: Tensor) -> Tensor:
    """True where ``input`` is NaN.

    Example:
        >>> ember.isnan(ember.tensor([1.0, float("nan")]))
        tensor([False,  True])
    """
    return apply(IsNan, input) if input.dtype.category >= dtypes.FLOAT else _all(input, False)


@hands_over
@method()
def isinf(input: Tensor) -> Tensor:
    """True where ``input`` is plus or minus infinity."""
    return apply(IsInf, input) if input.dtype.category >= dtypes.FLOAT else _all(input, False)


@hands_over
@method()
def isfinite(input: Tensor) -> Tensor:
    """True where ``input`` is neither infinite nor NaN."""
    return apply(IsFinite, input) if input.dtype.category >= dtypes.FLOAT else _all(input, True)


@method()
def isposinf(input: Tensor) -> Tensor:
    """True where ``input`` is plus infinity."""
    refuse_complex("isposinf", input)
    refuse_limited("isposinf", input.dtype, dtypes.WIDE_UNSIGNED)
    return eq(input, math.inf) if input.dtype.is_floating_point else _all(input, False)


@method()
def isneginf(input: Tensor) -> Tensor:
    """True where ``input`` is minus infinity."""
    refuse_complex("isneginf", input)
    refuse_limited("isneginf", input.dtype, dtypes.WIDE_UNSIGNED)
    return eq(input, -math.inf) if input.dtype.is_floating_point else _all(input, False)


@method()
def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (negative numbers, and -0.0).

    Example:
        >>> ember.signbit(ember.tensor([-0.0, 1.0]))
        tensor([ True, False])
    """
    refuse_complex("signbit", input)
    if input.dtype.is_floating_point:
        return apply(SignBit, input)
    return lt(input, 0) if input.dtype.is_signed else _all(input, False)


@method()
def isreal(input: Tensor) -> Tensor:
    """True where the imaginary part is zero (everywhere for a real tensor).

    Example:
        >>> ember.isreal(ember.tensor([1 + 0j, 1j]))
        tensor([ True, False])
    """
    if is_complex_input("isreal", "input", input):
        from ember.ops.complex_parts import imag

        return eq(imag(input), 0)
    return _all(input, True)


# -- nan_to_num ---------------------------------------------------------------------------------
@primitive
class NanToNum(Primitive):
    name = "nan_to_num"

    def forward(self, xp, a, *, nan, posinf, neginf):
        out = a.copy(order="K" if is_dense(a) else "C")  # (a dense input's layout, as torch)
        out[xp.isnan(a)] = nan
        out[xp.equal(a, math.inf)] = posinf
        out[xp.equal(a, -math.inf)] = neginf
        return out

    def infer(self, a, **params):
        return a

    def vjp(self, ctx, g):
        from ember.ops.select import where

        return where(isfinite(ctx.inputs[0]), g, 0.0)

    def jvp(self, ctx, da):
        from ember.ops.select import where

        return where(isfinite(ctx.inputs[0]), da, 0.0)


@method()
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """Replaces NaN, +inf and -inf with finite numbers: by default 0 and the largest and
    smallest values of the dtype. The gradient passes where ``input`` was finite.

    Example:
        >>> ember.nan_to_num(ember.tensor([float("nan"), float("inf")]), posinf=9.0)
        tensor([0., 9.])
    """
    if input.dtype.is_complex:  # each part on its own, as PyTorch does
        from ember.ops.complex_parts import complex, imag, real

        return complex(*(nan_to_num(part, nan, posinf, neginf)
                         for part in (real(input), imag(input))))
    if not input.dtype.is_floating_point:
        return clone(input)
    info = ml_dtypes.finfo(input.dtype.np)
    if type(nan) is not float:  # (None: 0.0, as PyTorch's)
        nan = 0.0 if nan is None else as_float(nan, "nan_to_num", "nan")
    return apply(NanToNum, input, nan=nan,
                 posinf=float(info.max) if posinf is None else as_float(posinf, "nan_to_num",
                                                                          "posinf"),
                 neginf=float(info.min) if neginf is None else as_float(neginf, "nan_to_num",
                                                                          "neginf"))


bind_inplace(nan_to_num_=nan_to_num)


# (after the bitwise primitives, which ops/logical.py imports: the names stay importable here)
from ember.ops.logical import logical_and, logical_not, logical_or, logical_xor  # noqa: E402
