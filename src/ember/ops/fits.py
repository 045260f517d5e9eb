"""The check PyTorch makes when a Python number is stored into a tensor of a narrower dtype."""

from __future__ import annotations

import functools
import math
import sys
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentTypeError, DTypeError, IndexWriteOverflow, ValueOverflow
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["check_exponent", "check_factor", "check_fits", "check_number_int", "converts_unchecked",
           "number_int_error", "stored_number"]


def check_real(op: str, value: Any, dtype: DType) -> None:
    """A complex number (or array of them) stored into a real tensor must have no imaginary
    part (PyTorch's rule; a bool tensor takes any number as its truth value)."""
    if dtype.is_complex or dtype.category == dtypes.BOOL or not np.any(np.imag(value)):
        return
    shown = value if np.ndim(value) == 0 else "data with nonzero imaginary parts"
    raise DTypeError(f"{op}: {shown} has an imaginary part, which a {dtype.name} tensor cannot "
                     "hold. Hint: store a complex tensor, or pass .real of the value")


def check_fits(op: str, value: Any, dtype: DType) -> None:
    """PyTorch's check of a number stored into a tensor (``full``, ``tensor``, ``fill_``,
    ``masked_fill``, ``where``, ``index_fill``, ``x[i] = v``): a clear error instead of a
    silent wrap-around (300 in uint8 is 44) or infinity (1e39 in float32).

    As in PyTorch, an unsigned dtype takes negative integers down to ``-max`` (-1 is 255 in
    uint8); a float stored into an integer dtype must lie in its range (so no NaN or
    infinity), and a finite number stored into a float dtype too. A 0-d tensor ``value`` is
    read when no transform is tracing it.

    Example:
        >>> ember.zeros(2, dtype=ember.uint8).fill_(300)
        Traceback (most recent call last):
        ember.errors.ValueOverflow: fill_: the value 300 cannot be converted to uint8 ...
    """
    if value is None:
        return
    if type(value) in (float, int) and dtype.is_floating_point:  # (the common case, quickly)
        low, high = _range(dtype)
        if low <= value <= high or value != value or type(value) is float and \
                math.isinf(value) and _has_inf(dtype):  # (isinf(10**400) raises)
            return
    if isinstance(value, Tensor):
        if value.ndim or value.dtype is dtype or DISPATCH.handler is not None:
            return
        value = value.item()
    if isinstance(value, (complex, np.complexfloating)):
        check_real(op, value, dtype)
        value = value if dtype.is_complex else value.real
    if dtype.category == dtypes.BOOL or dtype in (dtypes.float64, dtypes.complex128):
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, complex,
                                                                      np.number)):
        return
    if dtype.is_complex:  # (each part in its float dtype's range: 1e300 in complex64 is refused)
        low, high = _range(dtype.to_real())
        fits = all(low <= part <= high or not (isinstance(part, int) or math.isfinite(part))
                   for part in (value.real, value.imag))
    elif dtype.is_floating_point:
        low, high = _range(dtype)
        fits = low <= value <= high or isinstance(value, (float, np.floating)) and (
            value != value or math.isinf(value) and _has_inf(dtype))  # (NaN and infinities
        # are stored as they are, where the dtype has infinities: not float8_e4m3fn's)
    else:
        low, high = _range(dtype)
        fits = (-high if low == 0 and isinstance(value, (int, np.integer)) else low) \
            <= value <= high  # False for NaN
    if not fits:
        wider = "a wider dtype, e.g. ember." + ("complex128" if dtype.is_complex else "float64"
                                                 if dtype.is_floating_point else "int64")
        if dtype.category < dtypes.FLOAT and dtype.itemsize == 8:  # (no wider integer dtype)
            wider = "a float dtype (integers stop at 64 bits), or a value in the range"
        shown, hint = repr(value), f"use {wider}"
        if type(value) is int:
            shown = _shown_int(value)
            if dtype.category >= dtypes.FLOAT and abs(value) > sys.float_info.max:
                hint = _as_float_hint("pass", value)
        raise ValueOverflow(f"{op}: the value {shown} cannot be converted to {dtype.name} "
                            f"without overflow (its range is [{low:g}, {high:g}]). Hint: "
                            f"{hint}")


def converts_unchecked(dtype: DType, fill_numel: int | None = None) -> bool:
    """Whether PyTorch stores a number into ``dtype`` with no range check, converting it as a
    0-d tensor's cast does: float dtypes narrower than float32 (float16, bfloat16, the
    float8s) in ``x[i] = v`` and ``where`` (``fill_numel`` None), and in ``fill_``/``full``
    only of exactly one element (``fill_numel`` 1; an empty or larger one is checked). Out
    of range, the cast saturates (float8_e4m3fn: 448) or gives inf/NaN, as ``.to()``."""
    return (fill_numel is None or fill_numel == 1) and dtype.is_floating_point \
        and dtype.itemsize < 4


def _shown_int(value: int) -> str:
    """``value`` as a message shows it: whole up to 40 digits, else its sign, leading digits
    and digit count (``10**400`` is '1000000000…000 (401 digits)', not 401 characters)."""
    digits = str(abs(value))
    if len(digits) <= 40:
        return str(value)
    return f"{'-' if value < 0 else ''}{digits[:10]}…{digits[-3:]} ({len(digits)} digits)"


def _as_float_hint(verb: str, value: int) -> str:
    """The hint to give an int as a float: ``float(v)``, or, past float64's range (where
    ``float(v)`` itself raises OverflowError), an infinity of its sign if that is meant."""
    if abs(value) > sys.float_info.max:
        inf = "float('-inf')" if value < 0 else "float('inf')"
        return f"it is beyond float64's range too (float() of it raises): {verb} {inf} if an " \
               "infinity is meant"
    return f"{verb} float({value if len(str(abs(value))) <= 40 else 'v'})"


def _past_int64_hint(value: int, dtype: DType) -> str:
    """What writes ``value``, an int past int64, into a ``dtype`` tensor where anything does."""
    if dtype.is_floating_point or dtype.is_complex:
        return _as_float_hint("write", value)
    if dtype.category == dtypes.BOOL:
        return "write bool(v)"
    if dtype == dtypes.uint64 and 0 <= value < 2**64:
        return "fill_ takes it: x[i:i + 1].fill_(v)"
    return f"{dtype} cannot hold it"


def stored_number(op: str, value: Any, dtype: DType, unchecked: bool = False) -> Any:
    """``value`` as a ``dtype`` tensor stores it, after :func:`check_fits` (no range check for
    an ``unchecked`` write, ``x[i] = v``, where :func:`converts_unchecked`): a complex
    number's real part in a real dtype, its truth value in bool (``2j`` is True), as
    PyTorch's. ``x[i] = v`` takes a Python int only in int64, whatever ``x``'s dtype (PyTorch
    reads it as a C long long: ``float_x[0] = 2**63`` is refused)."""
    if unchecked and type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        raise IndexWriteOverflow(f"{op}: the int {_shown_int(value)} is beyond int64, as a "
                                 "number written into a tensor by x[i] = v must be (PyTorch's "
                                 f"rule). Hint: "
                                 f"{_past_int64_hint(value, dtype)}")
    if unchecked and converts_unchecked(dtype):
        check_real(op, value, dtype)
    else:
        check_fits(op, value, dtype)
    if isinstance(value, (complex, np.complexfloating)) and not dtype.is_complex:
        return bool(value) if dtype.category == dtypes.BOOL else value.real
    return value


def check_factor(op: str, param: str, alpha: Any, dtype: DType, operands: tuple) -> None:
    """PyTorch's checks of a scale factor (add's ``alpha``, addcmul's ``value``) for a result
    of ``dtype``: a float needs a floating result and a complex one a complex result (not
    silently its real part), a bool ``alpha`` of add/sub a bool result, and the dtype must
    hold it (300 in int8 is refused, not wrapped; as in PyTorch a float ``value`` is not
    checked); ``operands`` are the op's inputs, named in the message.

    Example:
        >>> ember.add(ember.ones(1, dtype=ember.int8), 1, alpha=300)
        Traceback (most recent call last):
        ember.errors.ValueOverflow: add: the value 300 cannot be converted to int8 ...
    """
    kind = dtype.category
    for number, least, inputs, instead in ((float, dtypes.FLOAT, "integral", "an int"),
                                           (complex, dtypes.COMPLEX, "real", "a real")):
        # (PyTorch reads a NumPy bool alpha as a float)
        if (isinstance(alpha, number) or number is float and param == "alpha"
                and isinstance(alpha, np.bool_)) and kind < least:
            names = " and ".join(map(_dtype_name, operands))
            raise DTypeError(f"{op}: for {inputs} inputs ({names}), {param} must not be a "
                             f"{number.__name__}, got {alpha!r}. Hint: convert an input to a "
                             f"{number.__name__} dtype, or pass {instead} {param}")
    if isinstance(alpha, bool) and kind != dtypes.BOOL and param == "alpha" and \
            op in ("add", "sub"):
        raise DTypeError(f"{op}: a bool alpha ({alpha}) needs a bool result, not {dtype.name}. "
                         f"Hint: pass alpha={int(alpha)}")
    if kind != dtypes.FLOAT or param == "alpha":
        check_fits(op, alpha, dtype)


def _dtype_name(x: Any) -> str:
    return x.dtype.name if isinstance(x, Tensor) else type(x).__name__


@functools.cache
def _range(dtype: DType) -> tuple[float, float]:
    """The lowest and highest finite values of ``dtype``."""
    if dtype.is_floating_point:
        info = ml_dtypes.finfo(dtype.np)
        return float(info.min), float(info.max)
    info = np.iinfo(dtype.np)
    return int(info.min), int(info.max)


@functools.cache
def _has_inf(dtype: DType) -> bool:
    """Whether floating ``dtype`` holds infinity (the float8s ``e4m3fn``, ``e4m3fnuz`` and
    ``e8m0fnu`` do not: PyTorch refuses to store one there)."""
    return bool(np.isinf(np.array(np.inf).astype(dtype.np).astype(np.float64)))


INT64_MIN, UINT64_END = -(1 << 63), 1 << 64  # a Python int given as a number: [-2^63, 2^64)
INT64_MAX = (1 << 63) - 1


def check_number_int(op: str, value: Any) -> None:
    """PyTorch's rule for an int given where a number is (``full``'s fill, ``fill_``, an
    operand, a parameter such as ``hardtanh``'s ``max_val``): a Python int must lie in
    ``[-2^63, 2^64)`` even for a float tensor, which NumPy would take, and a ``np.uint64`` in
    int64 (PyTorch reads NumPy integers as int64: past it, "an integer is required", where
    NumPy would wrap it to a negative int64); ``ember.tensor(2**70, dtype=float32)`` is data,
    not a number, and may pass.

    Example:
        >>> check_number_int("full", 2 ** 70)
        Traceback (most recent call last):
        ember.errors.ValueOverflow: full: 1180591620717411303424 is beyond the 64-bit ...
    """
    if type(value) is int:
        if not INT64_MIN <= value < UINT64_END:
            raise number_int_error(op, value)
    elif type(value) is np.uint64 and value > INT64_MAX:
        raise number_int_error(op, value)


def number_int_error(op: str, value: Any) -> ValueOverflow | ArgumentTypeError:
    """The error of :func:`check_number_int` (one message for every site that tests the range
    inline on a hot path, as ``creation.scalar_tensor`` does): a TypeError for a ``np.uint64``
    and an OverflowError for a Python int, as PyTorch's."""
    where = f"{op}: " if op else ""  # (no name where the calling op adds its own)
    if type(value) is np.uint64:
        return ArgumentTypeError(f"{where}np.uint64({value}) is beyond int64, as a NumPy "
                                 "integer given to an op must be (PyTorch's rule; NumPy would "
                                 f"wrap it to {value.astype(np.int64)}). Hint: pass "
                                 f"float({value}), or ember.tensor(np.uint64({value})) for a "
                                 "uint64 tensor")
    return ValueOverflow(f"{where}{_shown_int(value)} is beyond the 64-bit integers (int64 "
                         "and uint64), as a number given to an op must be (PyTorch's rule). "
                         f"Hint: {_as_float_hint('pass', value)}")


def check_exponent(op: str, exponent: Any, dtype: DType) -> None:
    """A number exponent of ``pow`` on a ``dtype`` tensor, checked as PyTorch converts it: to
    int64 for an integer power (2**63 is refused), to the dtype for float16/bfloat16 (70000
    is), unchecked for wider floats."""
    if dtype.category < dtypes.FLOAT:
        check_fits(op, exponent, dtypes.int64)
    elif dtype.is_floating_point and dtype.itemsize == 2:
        check_fits(op, exponent, dtype)
