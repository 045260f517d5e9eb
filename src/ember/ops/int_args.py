"""Integer arguments (sizes, counts, offsets, dims) read as PyTorch reads them: ints, NumPy
integers and 0-d integer tensors pass, floats and bools are a ``TypeError`` naming the op."""

from __future__ import annotations

import operator
from typing import Any

from ember.errors import ArgumentTypeError

__all__: list[str] = []


def as_int(value: Any, op: str, what: str) -> int:
    """``value`` (an int, a NumPy integer or a 0-d integer tensor) as an int; a float or a bool
    is an error, as in PyTorch, rather than truncated or read as 0/1.

    Example:
        >>> as_int(np.int64(3), "narrow", "start")
        3
    """
    try:
        if not isinstance(value, bool):
            return operator.index(value)
    except TypeError:
        pass
    raise ArgumentTypeError(f"{op}: {what} must be an int, got {type(value).__name__} "
                            f"{value!r}. Hint: convert it with int() if truncating is meant")


def as_ints(values: Any, op: str, what: str) -> tuple[int, ...]:
    """An int, or a sequence (or 1-d array) of them, as a tuple of ints (see :func:`as_int`)."""
    if type(values) is tuple and all(type(v) is int for v in values):
        return values  # (the common case, as it is)
    if hasattr(values, "__iter__") and getattr(values, "ndim", 1):
        return tuple(as_int(v, op, what) for v in values)
    return (as_int(values, op, what),)
