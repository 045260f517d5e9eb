"""``uniform_``'s samples on ``[from, to)`` (``Tensor.uniform_``, ``nn.init.uniform_`` and the
inits built on it): one sampling primitive that draws, scales and keeps every value below
``to`` in a single pass over the backend's arrays."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, ValueOverflow
from ember.ops.int_args import as_float
from ember.ops.primitive import primitive
from ember.ops.random import (
    _TOP_DRAW,
    Generator,
    _FromShape,
    _sampled,
    as_doubles,
    rand,
)
from ember.tensor import Tensor

__all__: list[str] = []


@primitive
class UniformRange(_FromShape):
    """``rand(shape, dtype) * (high - low) + low`` below ``high``, in one op. float32/float64:
    exactly those ops, with a draw that rounds up to ``high`` moved to the value below it;
    16-bit floats: float64 draws rounded down onto the dtype's grid, as PyTorch's (to
    nearest, they would reach ``high`` and halve the ends' weight)."""

    name = "uniform_range"

    def forward(self, xp, *, shape, dtype, low, high, generator, device):
        draws = self.rng(generator).uniform(0.0, 1.0, shape)
        if dtype.itemsize == 2:
            draws *= high - low
            draws += low
            out = draws.astype(dtype.np)
            up = (out.astype(np.float64) > draws).view(np.int8).astype(np.int16)
            bits = out.view(np.int16)  # (the value below a 16-bit float: its bits ∓ 1)
            sign = bits >> 15  # (-1 where negative: up negated there, as (up ^ -1) + 1)
            bits -= (up ^ sign) - sign
            return out
        t = dtype.np.type
        out = draws.astype(dtype.np)
        top = _TOP_DRAW if dtype.itemsize == 4 else t(1 - 2 ** -53)  # (rand's largest)
        if dtype.itemsize == 4:
            np.minimum(out, top, out=out)
        out *= t(high - low)
        out += t(low)
        if top * t(high - low) + t(low) >= t(high) > t(low):  # (the top draw reaches `to`)
            np.minimum(out, np.nextafter(t(high), t(-math.inf)), out=out)
        return out


def uniform_samples(shape: tuple, low: float, high: float, *, dtype: Any, device: Any = None,
                    generator: Generator | None = None, op: str = "uniform_") -> Tensor:
    """Samples from U(low, high) of ``shape`` (both parts of a complex dtype), as ``uniform_``
    and ``nn.init.uniform_`` fill a tensor (``op``: the one its errors name)."""
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    largest = float(ml_dtypes.finfo(dt.to_real().np).max) if dt.is_floating_point or \
        dt.is_complex else math.inf  # (rand refuses other dtypes)
    low, high = (v if type(v) is int else as_float(v, op, name)  # (a str: a TypeError)
                 for v, name in ((low, "from"), (high, "to")))
    for name, value in (("from", low), ("to", high)):  # (NaN too)
        if not -largest <= value <= largest:
            raise ArgumentError(f"{op}: {name}={_bound(op, name, value)} is out of bounds for "
                                f"{dt.name}, which holds [{-largest}, {largest}], as PyTorch "
                                "refuses")
    if not low <= high:
        raise ArgumentError(f"{op}: expects to return a [from, to) range, but found "
                            f"from={_bound(op, 'from', low)} > to={_bound(op, 'to', high)}, as "
                            "PyTorch refuses")
    if not high - low <= largest:  # else the draws scaled by the width overflow to inf/NaN
        raise ArgumentError(f"{op}: to - from = {float(high) - float(low)} exceeds the "
                            f"largest {dt.name} ({largest}), as PyTorch refuses. Hint: a "
                            "narrower range or a wider dtype")
    low, high = as_doubles(low, high)
    if dt.is_floating_point:  # (from and to rounded to dt first, as PyTorch's)
        low, high = float(dt.np.type(low)), float(dt.np.type(high))
        return _sampled(op, UniformRange, (shape,), dt, device, False, low=low, high=high,
                        generator=generator)
    u = rand(shape, dtype=dtype, device=device, generator=generator) * (high - low)
    return u + low * (1 + 1j)


def _bound(op: str, name: str, value: Any) -> str:
    """A bound of ``uniform_`` as its error shows it: a long int as a float (2**1000 in 22
    characters, not 302 digits); an int past float64 is PyTorch's OverflowError instead."""
    if type(value) is not int or abs(value) < _SHORT_INT:
        return str(value)
    try:
        return repr(float(value))
    except OverflowError:
        raise ValueOverflow(f"{op}: {name} is an int of {value.bit_length()} bits, too large "
                            "to convert to float, as PyTorch refuses") from None


_SHORT_INT = 10 ** 17  # (ints of up to 17 digits are shown as they are)
