"""``make_tensor``: test inputs drawn uniformly from ``[low, high)`` with PyTorch's default
ranges per dtype, optionally non-contiguous, zero-free or in a memory format."""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, ArgumentTypeError
from ember.ops.complex_parts import view_as_real
from ember.ops.creation import empty
from ember.ops.random import randint
from ember.tensor import Tensor
from ember.type_info import finfo, iinfo

__all__ = ["make_tensor"]

_INTEGRAL = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.int8,
             dtypes.int16, dtypes.int32, dtypes.int64)
_FLOAT8 = tuple(getattr(dtypes, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                             "float8_e5m2fnuz"))
_FLOATING = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
             dtypes.complex64, dtypes.complex128)
_RANDINT_TOP = 2 ** 63 - 1  # randint draws through int64, so no integer beyond this


def make_tensor(*shape: int | Sequence[int], dtype: dtypes.DType, device: Any,
                low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``, as
    ``torch.testing.make_tensor``.

    Defaults: ``[-9, 9)`` for floating, complex (both parts) and float8 dtypes, ``[-9, 10)``
    for integers (clamped to the dtype: ``[0, 10)`` for unsigned ones), ``[0, 2)`` for bool.
    Bounds beyond the dtype's finite range are clamped to it; integer bounds are rounded up.
    ``noncontiguous=True`` returns a strided view (every second element of a last dimension
    twice as long); ``exclude_zero=True`` replaces zeros with 1 (integers) or the dtype's
    smallest normal number; ``requires_grad`` applies to floating and complex dtypes (an
    error for the others).

    Raises:
        ValueError: for NaN bounds, ``low >= high``, an interval outside the dtype, or
            ``noncontiguous`` together with ``memory_format``.
        TypeError: for a dtype it cannot fill.

    Example:
        >>> x = ember.testing.make_tensor(2, 3, dtype=ember.int64, device="cpu", low=0, high=5)
        >>> x.shape, bool(((x >= 0) & (x < 5)).all())
        (ember.Size([2, 3]), True)
        >>> ember.testing.make_tensor(4, dtype=ember.float32, device="cpu",
        ...                           noncontiguous=True).is_contiguous()
        False
    """
    shape = _sizes(shape)
    if noncontiguous and memory_format is not None:
        raise ArgumentError("The parameters `noncontiguous` and `memory_format` are mutually "
                            f"exclusive, but got noncontiguous={noncontiguous} and "
                            f"memory_format={memory_format}")
    integral = dtype is dtypes.bool_ or dtype in _INTEGRAL
    if requires_grad and integral:
        raise ArgumentError("`requires_grad=True` is not supported for boolean and integral "
                            f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice as long, so that the elements skipped differ from those kept
        shape = (*shape[:-1], 2 * shape[-1])

    if integral:
        if dtype is dtypes.bool_:
            lowest, highest, default = 0, 2, (0, 2)
        else:
            info = iinfo(dtype)
            lowest, highest, default = info.min, min(info.max + 1, _RANDINT_TOP), (-9, 10)
        low, high = _bounds(low, high, dtype, lowest, highest, default)
        result = randint(math.ceil(low), math.ceil(high), shape, dtype=dtype, device=device)
    elif dtype in _FLOATING or dtype in _FLOAT8:
        info = finfo(dtype)
        low, high = _bounds(low, high, dtype, info.min, info.max, (-9, 9))
        drawn = dtype if dtype in _FLOATING else dtypes.float32  # float8: drawn as float32
        result = empty(shape, dtype=drawn, device=device)
        _uniform_(view_as_real(result) if drawn.is_complex else result, low, high)
        result = result.to(dtype)
    else:
        raise TypeError(f"make_tensor: the dtype {dtype} is not supported. Hint: it fills "
                        "bool, (unsigned) integer, floating, complex and float8 dtypes")

    if noncontiguous:
        result = result[..., 1::2]  # (offset by one too, to catch offset mistakes)
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else finfo(dtype).tiny
    if not integral and dtype not in _FLOAT8:
        result.requires_grad_(requires_grad)
    return result


def _sizes(shape: tuple) -> tuple[int, ...]:
    """``shape`` as ints: the sizes given one by one, or one sequence of them; a float or a
    mix is refused, as in PyTorch (``int()`` turned 2.5 into 2)."""
    sizes = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence) else shape
    try:
        return tuple(operator.index(n) for n in sizes)
    except TypeError:
        raise ArgumentTypeError(f"make_tensor: the shape must be ints, or one sequence of "
                                f"ints, got {shape!r}") from None


def _bounds(low: float | None, high: float | None, dtype: dtypes.DType, lowest: float,
            highest: float, default: tuple[float, float]) -> tuple[float, float]:
    """``low`` and ``high`` (or the defaults) checked and clamped to ``[lowest, highest]``."""
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ArgumentError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING:  # (float8: an error, as in PyTorch)
        warnings.warn("Passing `low==high` to `make_tensor` for floating or complex types is "
                      "deprecated (as in PyTorch). Use `ember.full(...)` instead.",
                      FutureWarning, stacklevel=3)
    elif low >= high:
        raise ArgumentError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ArgumentError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                            f"but {dtype} only supports [{lowest}, {highest})")
    return min(max(low, lowest), highest), min(max(high, lowest), highest)


def _uniform_(t: Tensor, low: float, high: float) -> None:
    """Fills ``t`` uniformly from ``[low, high)``; a range wider than the dtype's largest
    number is drawn at half scale and doubled, so the width never overflows."""
    if high - low >= finfo(t.dtype).max:
        t.uniform_(low / 2, high / 2).mul_(2)
    else:
        t.uniform_(low, high)
