"""The reflected arithmetic operators, ``number <op> tensor``: ``Tensor.__radd__`` and kin.

They compute as PyTorch's do, which is not always ``op(number, tensor)``: ``0.1 * t`` is
``mul(t, 0.1)`` (the number second, so a half-precision product keeps its float32 value) and
``0.1 / t`` is ``t.reciprocal() * 0.1`` (in half precision the reciprocal is rounded first);
``inf + z`` is ``add(z, inf)`` (a complex sum adds 1·other, so inf + (1+1j) is inf+nanj).

Example:
    >>> 0.1 / ember.tensor([3.0], dtype=ember.float16)
    tensor([0.0333], dtype=ember.float16)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import errors
from ember.errors import DTypeError
from ember.ops.arithmetic import add, floor_divide, mul, pow, remainder, sub
from ember.ops.convert import result_dtype
from ember.ops.operator_protocol import refuse_foreign
from ember.tensor import Tensor, method

__all__: list[str] = []


def _reflected(fn: Callable[[Any, Tensor], Tensor], name: str) -> None:
    """Binds ``Tensor.<name>``, the operator Python calls for ``other <op> tensor``. With a
    sequence on the left it gives NotImplemented, as PyTorch's does, so Python applies its own
    rule: ``[0] * n`` repeats the list by a one-element integer tensor ``n``; ``[1] + t`` is
    Python's TypeError. (The common sequences are told apart before the op: ``fn`` refuses
    them, and its error costs ~70 us; any other operand ``fn`` refuses that is not a number or
    array, ``bytearray`` or ``None``, gives NotImplemented after it.)"""
    def op(self: Tensor, other: Any) -> Tensor:
        if isinstance(other, (list, tuple, str, bytes)):
            return NotImplemented
        try:
            return fn(other, self)
        except (DTypeError, errors.ArgumentTypeError):
            refuse_foreign(name, other, self)
            if not isinstance(other, int | float | complex | np.generic | np.ndarray):
                return NotImplemented
            raise
    op.__name__ = name
    method(name)(op)


def _radd(other: Any, input: Tensor) -> Tensor:
    return add(input, other)


def _rmul(other: Any, input: Tensor) -> Tensor:
    return mul(input, other)


def _rdiv(other: Any, input: Tensor) -> Tensor:
    """``input.reciprocal() * other`` whatever ``other`` is, as PyTorch's ``__rtruediv__``."""
    try:
        return mul(input.reciprocal(), other)
    except (DTypeError, errors.ArgumentTypeError):
        result_dtype(input, other)  # (refuses a foreign operand as before the mul did)
        raise


for _fn, _name in [(_radd, "__radd__"), (sub, "__rsub__"), (_rmul, "__rmul__"),
                   (_rdiv, "__rtruediv__"), (floor_divide, "__rfloordiv__"),
                   (remainder, "__rmod__"), (pow, "__rpow__")]:
    _reflected(_fn, _name)
