"""``linspace``'s and ``logspace``'s dtype from their ends, and ``linspace``'s values as
PyTorch's CPU kernel computes them, so that the same call gives the
same numbers (histogram edges, grid coordinates): the step in the dtype, the first half of the
points counted up from ``start`` and the second half down from ``end``, each point one fused
multiply-add (emulated exactly in float64). Matched on 400 random calls per dtype: every
float32, float64, complex64 value, every integer one (3000 more calls: the integer points are
fused too, truncated); float16/bfloat16 round each operation to the dtype, as PyTorch's
half arithmetic does (1000 random calls each). ``arange``'s float
points are PyTorch's too, as its kernel steps them, lane by lane (:func:`stepped`).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentTypeError, DTypeError, ShapeError, type_name
from ember.ops.fits import check_fits, check_number_int
from ember.tensor import Tensor

__all__: list[str] = []

_PART = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
_SPLIT = 2.0 ** 27 + 1  # Veltkamp's constant: splits a float64 into two 26-bit halves
_DIGITS = {np.dtype(np.float64): 53, np.dtype(np.float32): 24, np.dtype(np.float16): 11}


def spaced_dtype(op: str, start: Any, end: Any, dtype: Any, steps: int) -> DType:
    """``linspace``'s and ``logspace``'s dtype: ``dtype``, else the default dtype (its complex
    form for a complex end, a number or a tensor), bool for at most one point; the ends must
    be numbers or 0-d tensors, and those that ``steps`` points reach (``start`` from one,
    ``end`` from two) must fit the dtype (PyTorch's overflow check: 300 in uint8 is refused,
    not wrapped).

    Example:
        >>> spaced_dtype("linspace", ember.tensor(1j), 3, None, 5)
        ember.complex64
    """
    for name, v in (("start", start), ("end", end)):
        if not isinstance(v, numbers.Number | np.bool_ | Tensor):
            raise ArgumentTypeError(f"{op}(): argument '{name}' must be a number or a 0-d "
                                    f"tensor, not {type_name(v)} {v!r}")
    if np.ndim(start) or np.ndim(end):
        raise ShapeError(f"{op}: only supports 0-dimensional start and end tensors, got "
                         f"{np.ndim(start)} and {np.ndim(end)} dimension(s)")
    complex_ends = any(isinstance(v, complex) or isinstance(v, Tensor) and v.dtype.is_complex
                       for v in (start, end))
    if dtype is not None:
        dt = dtypes.to_dtype(dtype)
        if complex_ends and not dt.is_complex:
            raise DTypeError(f"{op}: complex ends {start!r}, {end!r} cannot be spaced in "
                             f"{dt.name}. Hint: pass a complex dtype, or real ends")
    else:
        default = dtypes.get_default_dtype()
        dt = default.to_complex() if complex_ends else default
    if steps > 1:  # (PyTorch fills zero or one point in bool; its kernel spaces none)
        refuse_bool(op, dt)
    for v in (start, end):
        check_number_int(op, v)  # (2**64 is refused even where no point is made)
    for v in (start, end)[:steps]:
        check_fits(op, v, dt)
    return dt


def refuse_bool(op: str, dt: DType) -> None:
    """A DTypeError for a range (``arange``, ``linspace``, …) asked in bool, which PyTorch has
    no kernel for (NumPy would give 0, 1, 1, … silently)."""
    if dt is dtypes.bool_:
        raise DTypeError(f"{op}: not implemented for bool, as in PyTorch. Hint: make the range "
                         f"in an integer dtype, then compare it (e.g. ember.arange(n) > 0)")


def refuse_complex_steps(op: str, dt: DType) -> None:
    """A DTypeError for ``arange``/``range`` asked in a complex dtype, which PyTorch has no
    kernel for (``linspace`` and ``logspace`` take one)."""
    if dt.is_complex:
        raise DTypeError(f"{op}: not implemented for {dt.name}, as in PyTorch. Hint: make the "
                         f"range in a float dtype, then convert it with .to(ember.{dt.name})")


def evenly_spaced(start: Any, end: Any, steps: int, dtype: np.dtype) -> np.ndarray:
    """``steps`` points from ``start`` to ``end`` inclusive, as a NumPy array of ``dtype``.

    Example:
        >>> evenly_spaced(0.0, 1.0, 11, np.dtype(np.float64))[6]
        np.float64(0.6)
    """
    dtype = np.dtype(dtype)
    if steps <= 1:
        return np.array([start] * steps).astype(dtype)
    if dtype in _PART:  # PyTorch's complex step and points, one part at a time
        start, end = complex(start), complex(end)
        real = evenly_spaced(start.real, end.real, steps, _PART[dtype])
        imag = evenly_spaced(start.imag, end.imag, steps, _PART[dtype])
        return (real + 1j * imag).astype(dtype)
    index = np.arange(steps, dtype=np.float64)
    half = steps // 2
    up, down = index[:half], (steps - 1) - index[half:]
    if dtype in (np.float32, np.float64):
        first, last = np.array(start, dtype), np.array(end, dtype)
        step = float((last - first) / dtype.type(steps - 1))
        first, last = float(first), float(last)
        if dtype == np.float32:  # (float64 holds each product exactly: one rounding, then two)
            points = [first + step * up, last - step * down]
        else:
            points = [_fused(first, step, up), _fused(last, -step, down)]
    elif dtype.kind in "iu":  # in float64, ends truncated and cast first (-1 is 255 in uint8)
        first, last = (float(np.array(int(v)).astype(dtype)) for v in (start, end))
        step = (last - first) / (steps - 1)
        points = [np.trunc(_fused(first, step, up)), np.trunc(_fused(last, -step, down))]
    elif dtype.itemsize == 2:  # float16, bfloat16: each operation rounded to the dtype
        # (through float32), as PyTorch's half arithmetic rounds it
        first, last = _rounded(start, dtype), _rounded(end, dtype)
        step = _rounded(_rounded(last - first, dtype) / _rounded(steps - 1, dtype), dtype)
        points = [_rounded(first + _rounded(step * _rounded(up, dtype), dtype), dtype),
                  _rounded(last - _rounded(step * _rounded(down, dtype), dtype), dtype)]
    else:
        return np.linspace(start, end, steps).astype(dtype)
    return np.concatenate(points).astype(dtype)


def _rounded(value: Any, dtype: np.dtype) -> np.ndarray:
    """``value`` rounded to float32, then to the half dtype ``dtype``, back in float64."""
    return np.asarray(value, np.float64).astype(np.float32).astype(dtype).astype(np.float64)


def stepped(xp: Any, start: float, step: float, n: int, dtype: np.dtype) -> Any:
    """``n`` points ``start + step·i`` of a float dtype as PyTorch's CPU ``arange`` computes
    them: in its accumulate type (float64; float32 for the half dtypes), one fused
    multiply-add each, except in its vector loop (pairs of 32-byte lanes, as many whole pairs
    as fit), which counts each lane on from the lane's first point rounded to ``dtype``
    (bfloat16's lanes add an unfused product). (Matched on 9000 random ranges; a range past
    PyTorch's parallel grain, 32768 points, is split by thread, which this ignores.)

    Example:
        >>> float(stepped(np, -0.7, 0.1, 11, np.dtype(np.float64))[7])
        8.326672684688674e-17
    """
    dtype = np.dtype(dtype)
    if _exact(start, step, n, dtype) or n >= 2 ** 26:  # (every point exact, one rounding:
        # any order of sums gives it; past 2**26, _fused's range, one rounding more)
        return (start + step * xp.arange(n, dtype=np.float64)).astype(dtype)
    acc = np.float32 if dtype.itemsize == 2 else np.float64
    start, step = float(acc(start)), float(acc(step))
    width = 32 // dtype.itemsize
    tail = n - n % (2 * width)
    rest = _fused(start, step, xp.arange(tail, n, dtype=np.float64)).astype(acc).astype(dtype)
    if not tail:
        return rest
    firsts = _fused(start, step, xp.arange(0, tail, width, dtype=np.float64))
    firsts = firsts.astype(acc).astype(dtype).astype(np.float64)[:, None]
    lane = xp.arange(width, dtype=np.float64)
    if dtype == dtypes.bfloat16.np:
        lanes = firsts + (step * lane).astype(acc)
    else:
        lanes = _fused(firsts, step, lane)
    if dtype.itemsize == 2:  # (a first point past the dtype's range is inf, as its lane)
        lanes = xp.where(xp.isinf(firsts), firsts, lanes)
    return xp.concatenate([lanes.reshape(-1).astype(acc).astype(dtype), rest])


def _exact(start: float, step: float, n: int, dtype: np.dtype) -> bool:
    """Whether every point ``start + step·i`` (``i < n``) is a number ``dtype`` holds."""
    scale = max(start.as_integer_ratio()[1], step.as_integer_ratio()[1])  # (powers of 2)
    top = (abs(start) + abs(step) * n) * scale
    return top < 2.0 ** _DIGITS.get(dtype, 8)  # (8: bfloat16's)


def unfused_spaced(first: float, last: float, steps: int) -> np.ndarray:
    """``steps`` (two or more) float64 points from ``first`` to ``last``, half counted up and
    half down as :func:`evenly_spaced`'s, each product and sum rounded on its own (PyTorch's
    integer ``logspace`` exponents)."""
    index = np.arange(steps, dtype=np.float64)
    half, step = steps // 2, (last - first) / (steps - 1)
    return np.concatenate([first + step * index[:half],
                           last - step * ((steps - 1) - index[half:])])


def _fused(a: Any, b: float, i: np.ndarray) -> np.ndarray:
    """``a + b·i`` (``a`` a float or an array) rounded once, as a fused multiply-add, for
    whole numbers ``i`` below 2**26 (the product's error by Dekker's split, the sum's by
    Knuth's two-sum)."""
    product = b * i
    split = _SPLIT * b
    high = split - (split - b)
    product_error = (high * i - product) + (b - high) * i
    total = a + product
    back = total - a
    sum_error = (a - (total - back)) + (product - back)
    return total + (sum_error + product_error)
