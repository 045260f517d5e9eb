"""Numeric limits of dtypes (:class:`finfo`, :class:`iinfo`) and :func:`can_cast`, with
PyTorch's attribute names."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentTypeError, DTypeError


class _Limits:
    """Limits are values: two of the same dtype are equal, as PyTorch's are."""

    dtype: str

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dtype))


def _read_dtype(op: str, value: Any, example: str = "ember.float32") -> DType:
    """``value`` as a dtype (a dtype, its name, a Python or NumPy type); a DTypeError (a
    TypeError, as PyTorch's) naming ``op`` for anything else: None (which NumPy reads as
    float64), a number, a tensor or array (hinted to pass its dtype)."""
    if value is None:
        raise ArgumentTypeError(f"{op}: expected a dtype (e.g. {example}), got None")
    try:
        return dtypes.to_dtype(value)
    except DTypeError as exc:
        raise DTypeError(f"{op}: {exc}") from None


class finfo(_Limits):  # noqa: N801 - PyTorch's name
    """The limits of a floating dtype (the default dtype when none is given): ``bits``,
    ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``.
    A complex dtype gives the limits of its parts' dtype, as in PyTorch.

    Example:
        >>> ember.finfo(ember.float32).eps
        1.1920928955078125e-07
        >>> ember.finfo(ember.float16).max
        65504.0
    """

    def __init__(self, type: Any = None) -> None:  # noqa: A002 - PyTorch's name
        dt = dtypes.get_default_dtype() if type is None else _read_dtype("finfo", type).to_real()
        if not dt.is_floating_point:
            raise TypeError(f"finfo: expected a floating dtype, got {dt.name} (use iinfo)")
        info = np.finfo(dt.np) if dt.np.type.__module__ == 'numpy' else ml_dtypes.finfo(dt.np)
        self.bits = dt.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        # PyTorch's 10 ** -digits10, digits10 = the decimal digits the mantissa always keeps
        self.resolution = 10.0 ** -math.floor(int(info.nmant) * math.log10(2))
        self.dtype = dt.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo(_Limits):  # noqa: N801 - PyTorch's name
    """The limits of an integer dtype: ``bits``, ``max``, ``min``, ``dtype``.

    Example:
        >>> ember.iinfo(ember.int8).min, ember.iinfo(ember.uint8).max
        (-128, 255)
    """

    def __init__(self, type: Any) -> None:  # noqa: A002 - PyTorch's name
        dt = _read_dtype("iinfo", type, "ember.int32")
        if dt.category != dtypes.INT:
            raise TypeError(f"iinfo: expected an integer dtype, got {dt.name}")
        self.bits = dt.itemsize * 8
        info = np.iinfo(dt.np)
        self.min, self.max = int(info.min), int(info.max)
        self.dtype = dt.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"  # (PyTorch's)


def can_cast(from_: DType, to: DType) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` in type promotion: never to a
    lower category (floating → integer, integer → bool).

    Example:
        >>> ember.can_cast(ember.float64, ember.float16), ember.can_cast(ember.float32, ember.int32)
        (True, False)
    """
    return _read_dtype("can_cast", from_).category <= _read_dtype("can_cast", to).category
