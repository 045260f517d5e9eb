"""Dtype conversion and copies (``to``, ``float()``, ``clone``, ``contiguous``), and how mixed
operands are brought to one dtype before an op (:func:`promote`)."""

from __future__ import annotations

import warnings
from typing import Any

from ember import dtypes
from ember.backend import Device
from ember.backend import device as to_device
from ember.dtypes import DType
from ember.errors import DTypeError
from ember.ops.creation import scalar_tensor
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, method

__all__ = ["clone"]


@primitive
class Cast(Primitive):
    """A dtype conversion; complex to real keeps the real part (whose gradient is the real
    gradient as a complex one), real to complex adds a zero imaginary part."""

    name = "cast"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, a, *, dtype):
        if a.dtype.kind == "c" and not dtype.is_complex:
            if dtype is dtypes.bool_:  # a complex number is true when either part is nonzero
                return a != 0
            a = a.real
        return a.astype(dtype.np)

    def infer(self, a, *, dtype):
        return TensorSpec(a.shape, dtype)

    def vjp(self, ctx, g):
        return cast(g, ctx.inputs[0].dtype)

    def jvp(self, ctx, da):
        return cast(da, ctx.params["dtype"])


@primitive
class Copy(Primitive):
    name = "copy"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def forward(self, xp, a):
        return xp.array(a, copy=True, order="C")

    def infer(self, a):
        return a

    def vjp(self, ctx, g):
        return g

    def jvp(self, ctx, da):
        return da


def cast(x: Tensor, dtype: DType) -> Tensor:
    """``x`` in ``dtype`` (``x`` itself when it already is); differentiable between floats and
    complex dtypes (complex to real keeps the real part, silently: the user-facing casts warn)."""
    if x.dtype is dtype:
        return x
    return apply(Cast, x, dtype=dtype)


def promote(*xs: Any) -> tuple[Tensor, ...]:
    """Brings tensors and Python scalars to their PyTorch result dtype, as tensors.

    The fast path, tensors that already share a dtype, costs one comparison.
    """
    if len(xs) == 2:
        a, b = xs
        if type(a) is Tensor and type(b) is Tensor and a._data.dtype == b._data.dtype:
            return xs
    return promote_to(dtypes.result_type(*xs), *xs)


def promote_to(dtype: DType, *xs: Any) -> tuple[Tensor, ...]:
    """``xs`` as tensors of ``dtype``: tensors cast, Python scalars made in ``dtype`` from their
    own value (so ``uint8_tensor / -1`` divides by -1.0, not by -1 wrapped into uint8)."""
    dev = _device_of(xs)
    return tuple(cast(x, dtype) if isinstance(x, Tensor) else scalar_tensor(x, dtype, dev)
                 for x in xs)


HALF = (dtypes.float16, dtypes.bfloat16)  # PyTorch computes these in float32 ("opmath")


def reduces_in_float32(x: Tensor) -> bool:
    """Whether a reduction of ``x`` (mean, var, a norm) runs in float32 and rounds once to
    ``x``'s dtype at the end, as PyTorch's do for half precision (the sum of two float16 60000s
    overflows, their mean need not). Not under autocast: its policy already reduces in float32
    and keeps the float32 result."""
    return x.dtype in HALF and not DISPATCH.casting


def has_scalar(*xs: Any) -> bool:
    """Whether an operand is a scalar: a Python number or a 0-d tensor."""
    return any(not isinstance(x, Tensor) or not x.ndim for x in xs)


def _device_of(xs: tuple) -> Device:
    for x in xs:
        if isinstance(x, Tensor):
            return x._device
    return to_device(None)


def to_float(x: Tensor) -> Tensor:
    """``x`` itself if floating or complex, else ``x`` in the default float dtype (as
    ``sin(int)`` is)."""
    if x.dtype.category >= dtypes.FLOAT:
        return x
    return cast(x, dtypes.get_default_dtype())


@method()
def to(self: Tensor, *args: Any, dtype: Any = None, device: Any = None,
       copy: bool = False) -> Tensor:
    """Converts dtype and/or device: ``x.to(ember.float64)``, ``x.to("cpu")``, ``x.to(y)``.

    Example:
        >>> ember.ones(2).to(ember.int64).dtype
        ember.int64
    """
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (DType, type)) or (isinstance(a, str) and _is_dtype_name(a)):
            dtype = a
        else:
            device = a
    out = self
    if dtype is not None:
        out = cast_with_warning(out, dtypes.to_dtype(dtype))
    if device is not None and to_device(device) is not self.device:
        raise DTypeError(f"to: moving between devices ({self.device} → {device}) needs the "
                         f"{to_device(device).type} backend's copy, not available in this build")
    if copy and out is self:
        out = clone(out)
    return out


def cast_with_warning(x: Tensor, dtype: DType) -> Tensor:
    """``cast`` for the user's conversions (``to``, ``float()``, ``type_as``): complex to real
    warns, as PyTorch does, that the imaginary part is discarded."""
    if x._data.dtype.kind == "c" and not dtype.is_complex:  # (real tensors: one dtype read)
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)
    return cast(x, dtype)


def _is_dtype_name(s: str) -> bool:
    try:
        dtypes.to_dtype(s)
        return True
    except DTypeError:
        return False


@method()
def clone(self: Tensor) -> Tensor:
    """A copy with its own memory; gradients flow back to ``self``."""
    return apply(Copy, self)


@method()
def contiguous(self: Tensor) -> Tensor:
    """``self`` if it is C-contiguous, else a contiguous copy."""
    return self if self._data.flags.c_contiguous else apply(Copy, self)


@method()
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` in ``other``'s dtype."""
    return cast_with_warning(self, other.dtype)


def _caster(dtype: DType, name: str) -> None:
    def convert(self: Tensor) -> Tensor:
        return cast_with_warning(self, dtype)
    convert.__name__ = name
    convert.__doc__ = f"``self`` as {dtype.name}."
    method(name)(convert)


for _name, _dtype in [("float", dtypes.float32), ("double", dtypes.float64),
                      ("half", dtypes.float16), ("bfloat16", dtypes.bfloat16),
                      ("long", dtypes.int64), ("int", dtypes.int32), ("short", dtypes.int16),
                      ("char", dtypes.int8), ("byte", dtypes.uint8), ("bool", dtypes.bool_),
                      ("cfloat", dtypes.complex64), ("cdouble", dtypes.complex128)]:
    _caster(_dtype, _name)
