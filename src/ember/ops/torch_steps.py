"""Elementwise arithmetic on backend arrays rounded step by step where PyTorch's CPU kernels
take steps of their own (NumPy's one call rounds once, or differently): ``x ** 0.5, -0.5,
3, -2`` through sqrt, 1/sqrt and products, and float16/bfloat16 floor division in the half
dtype. Bit for bit PyTorch's, tested against it in ``tests/ops/test_torch_steps.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.ops.relu_kernel import rsqrt_array

__all__: list[str] = []

POW_SHORTCUTS = frozenset((0.5, -0.5, 3, -2))  # (a set: 2.5 misses it in ~20 ns)
_BFLOAT16 = dtypes.bfloat16.np
POW_SHORTCUT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), _BFLOAT16)
HALF_ARRAYS = (np.dtype(np.float16), _BFLOAT16)


def pow_shortcut(xp: Any, a: Any, exponent: float) -> Any:
    """``a ** exponent`` for an exponent of ``POW_SHORTCUTS`` as PyTorch's float32, float64
    and bfloat16 kernels compute it (float16's use pow): sqrt and 1/sqrt (so (-0) ** -0.5 is
    -inf and (-inf) ** 0.5 NaN; bfloat16's rounded once), ``x * x * x`` and ``1 / (x * x)``
    (each step rounded: power's one rounding was an ulp off at times).

    Example:
        >>> pow_shortcut(np, np.array([-0.0, 4.0]), -0.5)
        array([-inf,  0.5])
    """
    if exponent in (3, -2):
        square = a * a
        return square * a if exponent == 3 else 1 / square
    wide = a.astype(np.float32) if a.dtype == _BFLOAT16 else a
    root = xp.sqrt(wide) if exponent == 0.5 else rsqrt_array(xp, wide)
    return root.astype(a.dtype, copy=False)


def half_floor_divide(xp: Any, a: Any, b: Any) -> Any:
    """``a // b`` of two float16 (or two bfloat16) arrays as PyTorch's kernel for two half
    tensors: the exact quotient ``(a - fmod(a, b)) / b``, one less where the remainder's sign
    is not the divisor's, floored, one more past a half, each step rounded in the half dtype
    (NumPy's float32 loop rounds once: 1 result in 16 was 1 or 2 apart past 2048).

    Example:
        >>> a, b = np.float16([-3968.0, 7.0]), np.float16([1.1318359375, -2.0])
        >>> half_floor_divide(np, a, b).tolist()  # (NumPy's a // b: -3506, -4)
        [-3508.0, -4.0]
    """
    one = a.dtype.type(1)
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    div = xp.where((mod != 0) & ((b < 0) != (mod < 0)), div - one, div)
    floor = xp.floor(div)
    floor = xp.where(div - floor > a.dtype.type(0.5), floor + one, floor)
    quotient = a / b  # (its sign for a zero quotient; the IEEE value for a zero divisor)
    floor = xp.where(div != 0, floor, xp.copysign(xp.zeros_like(quotient), quotient))
    return xp.where(b == 0, quotient, floor)


def integer_pow(xp: Any, a: Any, b: Any) -> Any:
    """Integer powers with negative exponents, as PyTorch computes them: 1 and -1 keep their
    magnitude, every other base gives 0 (NumPy refuses).

    Example:
        >>> integer_pow(np, np.array([1, -1, 2]), np.array([-3, -3, -1]))
        array([ 1, -1,  0])
    """
    positive = xp.power(a, xp.where(b < 0, 0, b))
    unit = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(b < 0, unit, positive).astype(a.dtype, copy=False)
