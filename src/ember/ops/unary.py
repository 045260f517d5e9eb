"""Elementwise math of one tensor: exp and log, roots, trigonometry, sigmoid, erf, abs, sign
(rounding is in :mod:`ember.ops.rounding`).

Every op here is a :class:`Unary` primitive whose rules come from one method, ``chain``: the
product of a vector ``v`` with the op's derivative (an elementwise Jacobian is diagonal, so the
same product serves the vjp, with ``v`` the output gradient, and the jvp, with ``v`` the input
tangent). Float math of integer tensors gives the default float dtype, as ``torch.sin`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.errors import DTypeError
from ember.ops import arithmetic
from ember.ops.complex_parts import Holomorphic, conj
from ember.ops.complex_reciprocal import complex_reciprocal
from ember.ops.convert import to_float
from ember.ops.creation import zeros_like
from ember.ops.erf_kernel import erf_array
from ember.ops.inplace import bind_inplace, inplace_method
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, handle
from ember.ops.primitive import (
    Primitive,
    TensorSpec,
    apply,
    complex_error,
    primitive,
)
from ember.ops.relu_kernel import rsqrt_array, sign_array
from ember.tensor import Tensor, method

__all__ = ["exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "abs",
           "absolute", "sign", "sgn", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin",
           "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh",
           "arccosh", "arctanh", "sigmoid", "erf", "reciprocal", "square"]


class Unary(Primitive):
    """An elementwise primitive of one tensor; the output has its shape and dtype.

    A subclass gives ``forward`` (or just ``ufunc``, the name of the backend function) and
    ``chain(v, x, y, **params)``: ``v`` times dy/dx, written in Ember ops from the input ``x``
    and/or the output ``y`` (``save_inputs`` and ``save_outputs`` say which it reads). Both
    the vjp and the jvp are that product.
    """

    ufunc = ""  # the backend function computing the op, if one does

    def forward(self, xp, a):
        return getattr(xp, self.ufunc)(a)

    def infer(self, a, **params):
        return a

    def chain(self, v: Tensor, x: Tensor, y: Tensor | None, **params: Any) -> Tensor:
        raise NotImplementedError(f"{self.name} has no derivative rule")

    def vjp(self, ctx, g):
        return self.chain(g, ctx.inputs[0], ctx.out if self.save_outputs else None,
                          **ctx.params)

    def jvp(self, ctx, da):
        return self.chain(da, ctx.inputs[0], ctx.out if self.save_outputs else None,
                          **ctx.params)


class Flat(Unary):
    """An op whose derivative is zero wherever it exists (rounding, sign): the gradient is
    zeros, as in PyTorch, rather than none."""

    save_inputs = False

    def chain(self, v, x, y, **params):
        return zeros_like(v)


_HALF = {np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)}


def in_float32(forward: Callable) -> Callable:
    """Runs a forward of several steps for float16/bfloat16 inputs (the first's dtype) in
    float32, rounding each output once at the end, as PyTorch's kernels do (``exp(-x)`` alone
    would overflow float16; NumPy sums bfloat16 in bfloat16)."""
    @wraps(forward)
    def run(self: Primitive, xp: Any, *arrays: Any, **params: Any) -> Any:
        dtype = arrays[0].dtype
        if dtype not in _HALF:
            return forward(self, xp, *arrays, **params)
        out = forward(self, xp, *(a.astype(np.float32) if a.dtype in _HALF else a
                                  for a in arrays), **params)
        return tuple(o.astype(dtype) for o in out) if isinstance(out, tuple) else \
            out.astype(dtype)
    return run


def sigmoid_array(xp: Any, a: Any) -> Any:
    """``1 / (1 + exp(-a))`` on a backend array: exact at both tails (no cancellation).
    Computed in one buffer (the same values: four allocations of a large array cost as much as
    the arithmetic)."""
    t = -a
    if getattr(t, "ndim", 0) == 0 or t.dtype.kind not in "fc":
        return xp.reciprocal(1 + xp.exp(t))
    xp.exp(t, out=t)
    xp.add(t, 1, out=t)
    return xp.reciprocal(t, out=t)


def complex_log1p(xp: Any, z: Any) -> Any:
    """``log1p`` of a complex backend array as PyTorch computes it: near 0 the real part
    ``log|1 + z|`` is ``log1p(x (2 + x) + y²) / 2`` (NumPy's ``log(1 + z)`` rounds ``1 + z``
    first, so ``log1p(1e-10j)`` had a real part of 0, not 5e-21). complex64 is computed in
    complex128: where ``|1 + z|`` is near 1 the real part loses digits to cancellation."""
    if z.dtype == np.complex64:
        return complex_log1p(xp, z.astype(np.complex128)).astype(np.complex64)
    x, y = z.real, z.imag
    r = x * (2 + x) + y * y
    near = xp.where(r == 0, x, 0.5 * xp.log1p(r))  # r == 0: x * (2 + x) + y² underflowed
    out = xp.empty_like(z)
    out.real = xp.where(xp.abs(z) < 0.5, near, xp.log(xp.hypot(x + 1, y)))
    out.imag = xp.arctan2(y, x + 1)
    return out


# -- exponentials and logarithms ----------------------------------------------------------------
@primitive
class Exp(Holomorphic, Unary):
    name = "exp"
    ufunc = "exp"
    save_inputs, save_outputs = False, True

    def chain(self, v, x, y):
        return v * y


@primitive
class Exp2(Holomorphic, Unary):
    name = "exp2"
    ufunc = "exp2"
    save_inputs, save_outputs = False, True

    def chain(self, v, x, y):
        return v * y * math.log(2.0)


@primitive
class Expm1(Holomorphic, Unary):
    name = "expm1"
    ufunc = "expm1"

    def chain(self, v, x, y):  # (PyTorch's y + 1 cancels for x < 0: float32 slope 0 at -20)
        return v * exp(x)


@primitive
class Log(Holomorphic, Unary):
    name = "log"
    ufunc = "log"

    def chain(self, v, x, y):
        return v / x


@primitive
class Log2(Holomorphic, Unary):
    name = "log2"
    ufunc = "log2"

    def chain(self, v, x, y):
        return v / (x * math.log(2.0))


@primitive
class Log10(Holomorphic, Unary):
    name = "log10"
    ufunc = "log10"

    def chain(self, v, x, y):
        return v / (x * math.log(10.0))


@primitive
class Log1p(Holomorphic, Unary):
    name = "log1p"
    ufunc = "log1p"

    def forward(self, xp, a):
        return complex_log1p(xp, a) if a.dtype.kind == "c" else xp.log1p(a)

    def chain(self, v, x, y):
        return v / (x + 1)


# -- powers -------------------------------------------------------------------------------------
@primitive
class Sqrt(Holomorphic, Unary):
    name = "sqrt"
    ufunc = "sqrt"
    save_inputs, save_outputs = False, True

    def chain(self, v, x, y):
        return v / (y * 2)


@primitive
class Rsqrt(Holomorphic, Unary):
    name = "rsqrt"
    save_inputs, save_outputs = False, True

    # (float16/bfloat16 rounded once, as PyTorch's vector loop; its scalar loop, for tensors
    # under 32 elements and tails past a multiple of 32, rounds twice: an ulp off at times)
    @in_float32
    def forward(self, xp, a):  # (complex: PyTorch's 1/sqrt(z) with its complex reciprocal)
        return complex_reciprocal(xp, xp.sqrt(a)) if a.dtype.kind == "c" else rsqrt_array(xp, a)

    def chain(self, v, x, y):
        return -0.5 * v * y ** 3  # (PyTorch's grouping; its pow(3): float16's rounded once)


@primitive
class Reciprocal(Holomorphic, Unary):
    name = "reciprocal"
    ufunc = "reciprocal"
    save_inputs, save_outputs = False, True

    def forward(self, xp, a):
        return complex_reciprocal(xp, a) if a.dtype.kind == "c" else xp.reciprocal(a)

    def chain(self, v, x, y):
        return -(v * (y * y))  # (PyTorch's grouping: an ulp apart at times otherwise)


# -- trigonometric and hyperbolic ---------------------------------------------------------------
@primitive
class Sin(Holomorphic, Unary):
    name = "sin"
    ufunc = "sin"

    def chain(self, v, x, y):
        return v * cos(x)


@primitive
class Cos(Holomorphic, Unary):
    name = "cos"
    ufunc = "cos"

    def chain(self, v, x, y):
        return -(v * sin(x))


@primitive
class Tan(Holomorphic, Unary):
    name = "tan"
    ufunc = "tan"
    save_inputs, save_outputs = False, True

    def chain(self, v, x, y):
        return v * (y * y + 1)


@primitive
class Asin(Holomorphic, Unary):
    name = "asin"
    ufunc = "arcsin"

    def chain(self, v, x, y):
        return v * rsqrt(1 - x * x)


@primitive
class Acos(Holomorphic, Unary):
    name = "acos"
    ufunc = "arccos"

    def chain(self, v, x, y):
        return -(v * rsqrt(1 - x * x))


@primitive
class Atan(Holomorphic, Unary):
    name = "atan"
    ufunc = "arctan"

    def chain(self, v, x, y):
        return v / (x * x + 1)


@primitive
class Sinh(Holomorphic, Unary):
    name = "sinh"
    ufunc = "sinh"

    def chain(self, v, x, y):
        return v * cosh(x)


@primitive
class Cosh(Holomorphic, Unary):
    name = "cosh"
    ufunc = "cosh"

    def chain(self, v, x, y):
        return v * sinh(x)


@primitive
class Tanh(Holomorphic, Unary):
    name = "tanh"
    ufunc = "tanh"
    save_inputs, save_outputs = False, True

    def chain(self, v, x, y):
        return v * (1 - y * y)


@primitive
class Asinh(Holomorphic, Unary):
    name = "asinh"
    ufunc = "arcsinh"

    def chain(self, v, x, y):
        return v * rsqrt(x * x + 1)


@primitive
class Acosh(Holomorphic, Unary):
    name = "acosh"
    ufunc = "arccosh"

    def chain(self, v, x, y):
        if x.dtype.is_complex:  # acosh's branch: √(z-1)·√(z+1), not √(z²-1) (Re z < 0 differs)
            return v * rsqrt(x - 1) * rsqrt(x + 1)
        return v * rsqrt(x * x - 1)


@primitive
class Atanh(Holomorphic, Unary):
    name = "atanh"
    ufunc = "arctanh"

    def chain(self, v, x, y):
        return v / (1 - x * x)


# -- sigmoid, erf, abs --------------------------------------------------------------------------
@primitive
class Sigmoid(Holomorphic, Unary):
    name = "sigmoid"
    save_inputs, save_outputs = False, True

    @in_float32
    def forward(self, xp, a):
        return sigmoid_array(xp, a)

    def chain(self, v, x, y):
        return v * (y * (1 - y))


@primitive
class Erf(Unary):
    name = "erf"

    def forward(self, xp, a):
        if a.dtype.kind == "c":  # (before the kernel's cast to float warns)
            raise complex_error(self.name, a.dtype)
        return erf_array(xp, a)

    def chain(self, v, x, y):
        return v * exp(-(x * x)) * (2 / math.sqrt(math.pi))


@primitive
class Abs(Unary):
    """``|x|``; of a complex tensor, its modulus (real). The gradient of a real loss through
    it is ``g * sgn(z)``, and its tangent ``real(conj(sgn(z)) * dz)``."""

    name = "abs"
    ufunc = "abs"
    limited_dtypes = dtypes.SIGNED_FLOAT8
    complex_grad = True

    def infer(self, a):
        return TensorSpec(a.shape, a.dtype.to_real())

    def chain(self, v, x, y):
        return v * sign(x)

    def vjp(self, ctx, g):
        x = ctx.inputs[0]
        return g * sgn(x) if x.dtype.is_complex else self.chain(g, x, None)

    def jvp(self, ctx, dx):
        x = ctx.inputs[0]
        if x.dtype.is_complex:
            from ember.ops.complex_parts import real

            return real(conj(sgn(x)) * dx)
        return self.chain(dx, x, None)


# -- an op whose gradient is zero -----------------------------------------------------------------
@primitive
class Sign(Flat):
    name = "sign"

    def forward(self, xp, a):
        if a.dtype.kind == "c":  # (complex numbers have no sign: see sgn)
            raise complex_error(self.name, a.dtype)
        if a.dtype.kind == "b":
            return a.copy()
        if a.dtype.kind in "iu":
            return xp.sign(a)
        if a.dtype.isbuiltin != 1:  # ml_dtypes' bfloat16, float8s: their sign(-0.0) is -0.0
            return self.forward(xp, a.astype(np.float32)).astype(a.dtype)
        if a.dtype == np.float32 and a.size >= 4096:  # (not np.sign and its NaN check)
            return sign_array(xp, a)
        out = xp.sign(a)
        # sign(nan) is 0, as PyTorch's: one sum finds a NaN (the signs' sum is finite
        # otherwise), then the NaNs are replaced (a where over every input took 3-8x as long)
        if xp.isnan(xp.add.reduce(out, axis=None)):  # (a 0-d sign is a scalar: no putmask)
            out = xp.where(xp.isnan(out), 0, out).astype(a.dtype, copy=False)
        return out


# -- the public functions -----------------------------------------------------------------------
def _define(prim: Primitive, doc: str, *aliases: str, floating: bool = True) -> Callable:
    """The public function of a one-tensor primitive, bound as a Tensor method with its
    in-place ``_`` form. ``floating`` ops compute integer tensors in the default float dtype."""
    if floating:
        def op(input: Tensor) -> Tensor:
            try:
                return apply(prim, to_float(input))
            except TensorLikeOperand:
                return handle(op, (input,), {})
    else:
        def op(input: Tensor) -> Tensor:
            try:
                return apply(prim, input)
            except TensorLikeOperand:
                return handle(op, (input,), {})
    op.__name__ = op.__qualname__ = prim.name
    op.__doc__ = doc
    op.__module__ = __name__
    for name in (prim.name, *aliases):
        method(name)(op)
        inplace_method(name + "_", op)
    return op


exp = _define(Exp, """``e ** input`` elementwise.

    Example:
        >>> ember.exp(ember.tensor([0.0, 1.0]))
        tensor([1.0000, 2.7183])
    """)
exp2 = _define(Exp2, """``2 ** input`` elementwise.""")
expm1 = _define(Expm1, """``exp(input) - 1``, exact for small ``input``.""")
log = _define(Log, """The natural logarithm; NaN below 0, -inf at 0.

    Example:
        >>> ember.log(ember.tensor([1.0, math.e]))
        tensor([0., 1.])
    """)
log2 = _define(Log2, """The base-2 logarithm.""")
log10 = _define(Log10, """The base-10 logarithm.""")
log1p = _define(Log1p, """``log(1 + input)``, exact for small ``input``.""")
sqrt = _define(Sqrt, """The square root; NaN below 0.

    Example:
        >>> ember.sqrt(ember.tensor([4, 9]))
        tensor([2., 3.])
    """)
rsqrt = _define(Rsqrt, """``1 / sqrt(input)``.""")
reciprocal = _define(Reciprocal, """``1 / input``; integers give the default float dtype.""")
sin = _define(Sin, """The sine, in radians.

    Example:
        >>> ember.sin(ember.tensor([0.0, math.pi / 2]))
        tensor([0., 1.])
    """)
cos = _define(Cos, """The cosine, in radians.""")
tan = _define(Tan, """The tangent, in radians.""")
asin = _define(Asin, """The inverse sine; NaN outside [-1, 1].""", "arcsin")
acos = _define(Acos, """The inverse cosine; NaN outside [-1, 1].""", "arccos")
atan = _define(Atan, """The inverse tangent.""", "arctan")
sinh = _define(Sinh, """The hyperbolic sine.""")
cosh = _define(Cosh, """The hyperbolic cosine.""")
tanh = _define(Tanh, """The hyperbolic tangent.

    Example:
        >>> ember.tanh(ember.tensor([0.0, 100.0]))
        tensor([0., 1.])
    """)
asinh = _define(Asinh, """The inverse hyperbolic sine.""", "arcsinh")
acosh = _define(Acosh, """The inverse hyperbolic cosine; NaN below 1.""", "arccosh")
atanh = _define(Atanh, """The inverse hyperbolic tangent; NaN outside [-1, 1].""", "arctanh")
sigmoid = _define(Sigmoid, """The logistic function ``1 / (1 + exp(-input))``.

    Example:
        >>> ember.sigmoid(ember.tensor([0.0]))
        tensor([0.5000])
    """)
erf = _define(Erf, """The error function ``2/sqrt(pi) * integral of exp(-t**2) from 0 to input``.

    Example:
        >>> ember.erf(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.8427])
    """)
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


def refuse_bool(op: str, input: Tensor) -> None:
    if input.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: not defined for bool tensors. Hint: convert with .int() or "
                         ".float() first")


@method("abs", "absolute", "__abs__")
def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """The absolute value; integer tensors stay integer. Its gradient is ``sign(input)``.

    Example:
        >>> ember.abs(ember.tensor([-2, 3]))
        tensor([2, 3])
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(abs, (input,), {})
    refuse_bool("abs", input)
    return apply(Abs, input)


@method("sign")
def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element, in ``input``'s dtype (0 for NaN); zero gradient.
    Complex tensors have no sign (see :func:`sgn`).

    Example:
        >>> ember.sign(ember.tensor([-2.0, 0.0, 3.0]))
        tensor([-1.,  0.,  1.])
    """
    return apply(Sign, input)


@method("sgn")
def sgn(input: Tensor) -> Tensor:
    """:func:`sign` for real tensors; for complex ones ``z / |z|`` (0 at 0), as in PyTorch.

    Example:
        >>> ember.sgn(ember.tensor([3 + 4j, 0j]))
        tensor([0.6000+0.8000j, 0.0000+0.0000j])
    """
    if not input.dtype.is_complex:
        return apply(Sign, input)
    if type(input) in TENSOR_LIKE:  # (a sparse tensor: its own sgn)
        return handle(sgn, (input,), {})
    from ember.ops.select import where

    modulus = abs(input)
    return where(modulus == 0, 0, input / where(modulus == 0, 1, modulus))


@method()
def square(input: Tensor) -> Tensor:
    """``input ** 2``; bool tensors give int64, as in PyTorch.

    Example:
        >>> ember.square(ember.tensor([-3, 2]))
        tensor([9, 4])
    """
    return arithmetic.pow(input, 2)


absolute = abs


def _real_abs(op: str) -> Callable[[Tensor], Tensor]:
    """``abs`` for the in-place ``op`` (abs_, absolute_): a complex tensor cannot hold its real
    modulus in place, as in PyTorch (it was stored back as ``5+0j``)."""
    def checked(input: Tensor) -> Tensor:
        if input.dtype.is_complex:
            raise DTypeError(f"{op}: in-place abs is not supported for complex tensors, as in "
                             "PyTorch. Hint: x.abs() gives the real modulus as a new tensor")
        return abs(input)
    checked.__name__ = "abs"
    return checked


bind_inplace(abs_=_real_abs("abs_"), absolute_=_real_abs("absolute_"), sign_=sign, sgn_=sgn,
             square_=square)
