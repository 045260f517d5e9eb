"""Dtype conversion and copies (``to``, ``float()``, ``clone``, ``contiguous``), and how mixed
operands are brought to one dtype before an op (:func:`promote`)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import Device, MetaArray, compiled, copies
from ember.backend import device as to_device
from ember.backend.device import no_backend_error
from ember.backend.meta import copy_out
from ember.dtypes import DType
from ember.errors import (
    ArgumentTypeError,
    DeviceError,
    DTypeError,
    OpError,
    refuse_non_tensor,
    type_name,
)
from ember.layouts import (
    check_format,
    contiguous_format,
    dense_strides,
    format_of,
    is_dense,
    memory_format,
    operands_order,
    order_of,
    preserve_format,
    stride_order,
    suggested_format,
)
from ember.ops.creation import scalar_tensor
from ember.ops.overrides import TensorLikeOperand, calling_op, handle
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    TensorSpec,
    apply,
    not_casting,
    primitive,
)
from ember.ops.to_args import parse_to
from ember.tensor import Tensor, _wrap, method

__all__ = ["clone"]


_PREPARED = frozenset((dtypes.float16, dtypes.float8_e4m3fn, dtypes.float8_e8m0fnu))
_ML_FLOATS = frozenset(d.np for d in (dtypes.bfloat16,) + dtypes.FLOAT8_DTYPES)


_HALF_KERNELS = compiled.register("ember.ops.half_numba")
_LOOPED_HALF = 1024  # elements from which numba's float16 loop pays for its call


def _float16_looped(a: np.ndarray) -> np.ndarray | None:
    """A C-contiguous float32 array as float16 by numba's loop (NumPy's bits, ~4x faster
    than its software conversion), or None where the kernels fail to load."""
    kernels = compiled.load(_HALF_KERNELS)
    if kernels is None:
        return None
    out = np.empty(a.shape, np.float16)
    kernels.float16_bits(a.reshape(-1).view(np.uint32), out.reshape(-1).view(np.uint16))
    return out


@primitive
class Cast(Primitive):
    """A dtype conversion; complex to real keeps the real part (whose gradient is the real
    gradient as a complex one), real to complex adds a zero imaginary part."""

    name = "cast"
    backward_name = "ToCopyBackward0"  # PyTorch's .to() records _to_copy
    save_inputs = False
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True

    def forward(self, xp, a, *, dtype):
        if a.dtype.kind == "c" and not dtype.is_complex:
            if dtype is dtypes.bool_:  # a complex number is true when either part is nonzero
                return a != 0
            a = a.real
        dims = None
        if 0 in a.strides and not a.flags.c_contiguous:
            # NumPy's "K" order may put an expanded dimension outermost (a row expanded to
            # (4, 6) came out (1, 4)-strided); PyTorch lays it out as its order of strides,
            # which the conversions below keep once the view is in that order
            dims = stride_order(a.shape, tuple(abs(st) for st in a.strides))
            a = a.transpose(dims)
        if dtype in _PREPARED:
            a = dtypes.cast_ready(xp, a, dtype)
        elif a.dtype in _ML_FLOATS and dtype.category == dtypes.INT:
            # PyTorch converts through float, wrapping what is out of range (-2.5 to uint8 is
            # 254); ml_dtypes' own casts to integers give 0 there
            a = a.astype(np.float32)
        if xp is np and dtype is dtypes.float16 and a.dtype == np.float32 \
                and a.size >= _LOOPED_HALF and a.flags.c_contiguous and compiled.numba_enabled():
            out = _float16_looped(a)
            if out is not None:
                return out if dims is None else out.transpose(np.argsort(dims))
        if dims is None:
            return a.astype(dtype.np)
        return a.astype(dtype.np, order="C").transpose(np.argsort(dims))

    def infer(self, a, *, dtype):
        return TensorSpec(a.shape, dtype)

    def vjp(self, ctx, g):
        return cast(g, ctx.inputs[0].dtype)

    def jvp(self, ctx, da):
        return cast(da, ctx.params["dtype"])


@primitive
class Copy(Primitive):
    name = "copy"
    backward_name = "CloneBackward0"  # clone and contiguous, as PyTorch names them
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def forward(self, xp, a, order="C"):
        return copies.contiguous(xp, a) if order == "C" else xp.array(a, copy=True, order=order)

    def infer(self, a, order="C"):
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

    The fast paths: tensors that already share a dtype cost one comparison; a tensor and a
    Python number that cannot change its dtype (``x * 2.0`` on floats, ``i + 1`` on ints)
    skip the general rule, which costs an op as much as computing it.
    """
    if len(xs) == 2:
        a, b = xs
        if isinstance(a, Tensor):  # (a Parameter too: a module's weights meet every input)
            if isinstance(b, Tensor):
                if a._data.dtype == b._data.dtype:
                    return xs
            elif a._data.dtype.kind in _KEEPS_DTYPE.get(type(b), ""):
                return a, scalar_tensor(b, a.dtype, a._device)
        elif isinstance(b, Tensor) and b._data.dtype.kind in _KEEPS_DTYPE.get(type(a), ""):
            return scalar_tensor(a, b.dtype, b._device), b
    return promote_to(result_dtype(*xs), *xs)


# a Python number's type -> the NumPy kinds of the tensor dtypes it leaves unchanged, as
# result_type rules (a number never widens a tensor of its own category or above)
_KEEPS_DTYPE = {float: "fc", int: "iufc"}


def result_dtype(*xs: Any) -> DType:
    """:func:`ember.result_type` of an op's operands; an operand of another type (a list,
    ``None``) raises an error naming the op."""
    try:
        return dtypes.result_type(*xs)
    except DTypeError:
        refused = [type_name(x) for x in xs if _refused(x)]
        if not refused:
            raise
        raise ArgumentTypeError(f"{calling_op()}(): cannot take an operand of type "
                                f"{refused[0]}. Hint: convert it with ember.tensor(...)") from None


def _refused(x: Any) -> bool:
    try:
        dtypes.result_type(x)
    except DTypeError:
        return True
    return False


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
    overflows, their mean need not); under CPU autocast too, which leaves these ops alone."""
    return x.dtype in HALF


_AUTOCAST_FLOATS = frozenset(HALF + (dtypes.float32,))


def autocast_mix(*dts: DType) -> bool:
    """Whether autocast is on (a casting handler) and ``dts`` are all bfloat16, float16 or
    float32: a mix its policy brings to one dtype, which an op's same-dtype check lets pass,
    as PyTorch's CPU autocast does (float64 is never cast, so a mix with it stays refused)."""
    return DISPATCH.casting and _AUTOCAST_FLOATS.issuperset(dts)


# the dtype autocast lowers to, for :func:`lower_under_autocast`: the amp layer (which this
# layer never imports) puts its getter here
AUTOCAST_DTYPE: dict[str, Callable[[], DType]] = {}


def float32_under_autocast(fn: Callable) -> Callable:
    """Decorates a composite on PyTorch's CPU autocast float32 list (``cdist``, ``grid_sample``,
    3-D pools, ...): under autocast (a casting handler) its bfloat16/float16 tensor arguments
    are cast to float32 and its body runs with casting off, as PyTorch's one float32 kernel
    (so a matmul inside stays float32); a dtype error then says which dtypes were cast. Outside
    autocast it costs one flag check."""
    return _under_autocast(fn, lambda: dtypes.float32)


def lower_under_autocast(fn: Callable) -> Callable:
    """Decorates a composite on PyTorch's CPU autocast lower-precision list (transposed
    convolutions, attention): under autocast its float32/bfloat16/float16 tensor arguments are
    cast to the autocast dtype and its body runs with casting off, as PyTorch's one
    low-precision kernel (the body's half path computes in float32 and rounds once, where
    lowering each inner matmul rounded each)."""
    return _under_autocast(fn, lambda: AUTOCAST_DTYPE["autocast"]())


def _under_autocast(fn: Callable, target_of: Callable[[], DType]) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not DISPATCH.casting:
            return fn(*args, **kwargs)
        target = target_of()

        def to_target(x: Any) -> Any:
            cast_it = isinstance(x, Tensor) and x.dtype in _AUTOCAST_FLOATS
            return cast(x, target) if cast_it and x.dtype is not target else x
        cast_args = tuple(to_target(a) for a in args)
        cast_kwargs = {k: to_target(v) for k, v in kwargs.items()}
        try:
            return not_casting(lambda: fn(*cast_args, **cast_kwargs))
        except DTypeError as e:
            _note_cast(e, (*args, *kwargs.values()), target)
            raise
    return wrapper


def _note_cast(error: DTypeError, given: tuple, target: DType) -> None:
    """Adds to ``error``'s message that autocast cast the arguments (of ``given``) to
    ``target``, so a message naming float32 does not puzzle a user who passed bfloat16."""
    cast_from = sorted({x.dtype.name for x in given if isinstance(x, Tensor)
                        and x.dtype in _AUTOCAST_FLOATS and x.dtype is not target})
    if cast_from and error.args and isinstance(error.args[0], str):
        error.args = (f"{error.args[0]} (under autocast, the {' and '.join(cast_from)} "
                      f"arguments were cast to {target.name} first, as PyTorch's CPU autocast "
                      "does)", *error.args[1:])


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
    try:
        if x.dtype.category >= dtypes.FLOAT:
            return x
    except AttributeError:  # (a PyTorch tensor, a NumPy array: its dtype is not Ember's)
        refuse_non_tensor(calling_op(), "input", x)
        raise
    return cast(x, dtypes.get_default_dtype())


@method()
def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Converts dtype and/or device, as PyTorch's ``to(device=None, dtype=None,
    non_blocking=False, copy=False)``, ``to(dtype, non_blocking=False, copy=False)`` or
    ``to(tensor, non_blocking=False, copy=False)``: ``x.to(ember.float64)``, ``x.to("cpu")``,
    ``x.to(y)``; the keyword ``memory_format`` (e.g. ``ember.channels_last``) also lays the
    result out in that format. ``non_blocking`` is accepted (a copy on the CPU is
    synchronous). ``to(True)`` is refused (PyTorch reads it as ``to(ember.bool)``).

    Example:
        >>> ember.ones(2).to(ember.int64).dtype
        ember.int64
    """
    device, dtype, _, copy, memory_format = parse_to("to", args, kwargs)
    out = self
    if dtype is not None:
        out = cast_with_warning(out, dtypes.to_dtype(dtype))
    if device is not None and to_device(device) is not self.device:
        out = _to_device(out, to_device(device))
    fmt = check_format("to", preserve_format if memory_format is None else memory_format)
    if fmt.dims is not None and len(self.shape) != fmt.rank:  # (under to's name, not clone's)
        order_of("to", fmt, tuple(self.shape))
    if out is not self:  # (a new tensor: only its layout is left to settle)
        if fmt is preserve_format:
            return out
        out = contiguous(out, fmt)
        # PyTorch allocates in fmt: its strides, those of size-1 dims too (a converted
        # (2, 3, 1, 1) channels-last tensor is (3, 1, 3, 3), not the cast's (3, 1, 1, 1))
        if out.numel() and out.stride() != format_strides(tuple(out.shape), fmt):
            out = clone(out, memory_format=fmt)
        return out
    # PyTorch's rule: no copy when ``fmt`` is the layout ``self`` suggests (its own strides
    # even when not dense in it), else a copy with ``fmt``'s strides
    if copy or (fmt is not preserve_format and suggested_format(self._data) is not fmt):
        return clone(self, memory_format=fmt)
    return self


def format_strides(shape: tuple[int, ...], fmt: Any) -> tuple[int, ...]:
    """The element strides of a new tensor of ``shape`` laid out in ``fmt`` (C order for
    ``contiguous_format``), as PyTorch's ``empty(shape, memory_format=fmt)``."""
    return dense_strides(shape, fmt.dims or range(len(shape)))


def _to_device(x: Tensor, dev: Device) -> Tensor:
    """``x`` on ``dev``: onto the meta device it keeps only its shape, dtype and (dense)
    strides, a new leaf; off the meta device there is no data to copy."""
    if x.device.is_meta:
        copy_out(f"to('{dev}')", dev)
    if not dev.has_backend:
        raise no_backend_error(str(dev), "to")
    if not dev.is_meta:
        raise DeviceError(f"to: moving between devices ({x.device} → {dev}) needs the "
                          f"{dev.type} backend's copy, not available in this build")
    a = x._data
    return _wrap(MetaArray(a.shape, a.dtype, a.strides if is_dense(a) else None), dev,
                 x.requires_grad)


def cast_with_warning(x: Tensor, dtype: DType) -> Tensor:
    """``cast`` for the user's conversions (``to``, ``float()``, ``type_as``): complex to real
    warns, as PyTorch does, that the imaginary part is discarded (not to bool, which reads
    both parts)."""
    if x._data.dtype.kind == "c" and not dtype.is_complex and dtype is not dtypes.bool_:
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)
    return cast(x, dtype)


@method()
def clone(self: Tensor, *, memory_format: Any = preserve_format) -> Tensor:
    """A copy with its own memory; gradients flow back to ``self``. With ``preserve_format``
    the copy keeps ``self``'s order of dimensions in memory, as PyTorch's (its strides, when
    ``self`` is dense: a transpose's, a channels-last tensor's).

    Example:
        >>> x = ember.ones(1, 2, 2, 2).contiguous(memory_format=ember.channels_last)
        >>> x.clone().stride(), x.clone(memory_format=ember.contiguous_format).stride()
        ((8, 1, 4, 2), (8, 4, 2, 1))
    """
    fmt = check_format("clone", memory_format)
    try:
        if fmt is preserve_format:
            a = self._data
            if a.flags.c_contiguous:  # (the common case first: no keyword to pass)
                return apply(Copy, self)
            if is_dense(a):  # (NumPy's "K" order keeps a dense layout's strides)
                return apply(Copy, self, order="K")
            fmt = format_of(self)
        if fmt.dims is None:
            return apply(Copy, self)
        return _copy_in_order(self, fmt, "clone")
    except TensorLikeOperand:  # (each path reads the memory first) an fx Proxy, a DTensor
        return handle(clone, (self,), {"memory_format": memory_format})
    except AttributeError:
        refuse_non_tensor(calling_op(), "input", self)
        raise


@method()
def contiguous(self: Tensor, memory_format: Any = contiguous_format) -> Tensor:
    """``self`` if it is laid out in ``memory_format`` (C order unless given), else a copy
    that is.

    Example:
        >>> x = ember.zeros(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
        >>> x.stride(), x.is_contiguous()
        ((60, 1, 15, 3), False)
    """
    fmt = check_format("contiguous", memory_format)
    if fmt.dims is None:
        try:
            if self._data.flags.c_contiguous:
                return self
        except AttributeError:
            refuse_non_tensor(calling_op(), "input", self)
            raise
        if fmt is preserve_format:  # (PyTorch's check, after its no-copy answer)
            raise OpError("contiguous: preserve_format is no layout to copy into; use "
                          "clone() to keep the layout, or pass contiguous_format / "
                          "channels_last")
        return apply(Copy, self)
    if self.is_contiguous(memory_format=fmt):
        return self
    return _copy_in_order(self, fmt, "contiguous")


def laid_out_like(r: Tensor, x: Tensor) -> Tensor:
    """``r`` (of ``x``'s rank: a keepdim reduction of ``x``, a product of other operands)
    laid out in the order of ``x``'s dimensions in memory, so that an elementwise op with
    ``x`` first is laid out as ``x``, as PyTorch's are (the first operand's order decides
    where operands disagree; NumPy's iterator picks C order). ``r`` itself when ``x`` is
    C-ordered (one flag read), not dense, or not of the full shape (then PyTorch's rule
    reads the other operands too)."""
    try:
        a = x._data
    except AttributeError:
        refuse_non_tensor(calling_op(), "input", x)
        raise
    if a.flags.c_contiguous or a.ndim != r._data.ndim or not is_dense(a) or any(
            n < m for n, m in zip(a.shape, r._data.shape)):
        return r
    return contiguous(r, memory_format=format_of(x))


def laid_out_as_operands(out: Tensor, *operands: Any) -> Tensor:
    """``out``, a composite's elementwise result of ``operands`` (tensors in the op's order;
    numbers skipped), laid out as PyTorch lays out its one kernel's result
    (:func:`ember.layouts.in_operands_layout`): ``out`` itself when it is, else a
    differentiable copy."""
    dims = operands_order(out._data, *(t._data for t in operands if isinstance(t, Tensor)))
    if dims is None:
        return out
    return _copy_in_order(out, memory_format("preserve_format", len(dims), dims), "copy")


def _copy_in_order(x: Tensor, fmt: Any, op: str) -> Tensor:
    """A copy of ``x`` laid out in ``fmt``: the permuted tensor copied in C order, permuted
    back (so differentiable with no rule of its own). That last view is of a copy no one
    else holds: the result is no view (``_base`` None, as PyTorch's; ``share_memory_`` takes
    it)."""
    from ember.ops.shape import permute

    dims, inverse = order_of(op, fmt, x._data.shape)
    out = permute(apply(Copy, permute(x, dims)), inverse)
    out._view = None
    return out


@method()
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` in ``other``'s dtype."""
    return cast_with_warning(self, other.dtype)


@method()
def dequantize(self: Tensor) -> Tensor:
    """An ordinary tensor as float32, ``self`` itself if it is float32 (as PyTorch's; a
    quantized tensor's ``dequantize`` gives the real numbers it stands for).

    Example:
        >>> ember.tensor([1, 2]).dequantize()
        tensor([1., 2.])
    """
    return cast_with_warning(self, dtypes.float32)


def _caster(dtype: DType, name: str) -> None:
    def convert(self: Tensor, *, memory_format: Any = preserve_format) -> Tensor:
        if memory_format is preserve_format:
            return cast_with_warning(self, dtype)
        return to(self, dtype, memory_format=memory_format)
    convert.__name__ = name
    convert.__doc__ = f"``self`` as {dtype.name}."
    method(name)(convert)


for _name, _dtype in [("float", dtypes.float32), ("double", dtypes.float64),
                      ("half", dtypes.float16), ("bfloat16", dtypes.bfloat16),
                      ("long", dtypes.int64), ("int", dtypes.int32), ("short", dtypes.int16),
                      ("char", dtypes.int8), ("byte", dtypes.uint8), ("bool", dtypes.bool_),
                      ("cfloat", dtypes.complex64), ("cdouble", dtypes.complex128)]:
    _caster(_dtype, _name)
