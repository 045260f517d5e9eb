"""Integer arguments (sizes, counts, offsets, dims) read as PyTorch reads them: ints, NumPy
integers and 0-d integer tensors pass, floats and bools are a ``TypeError`` naming the op.
Float arguments (``eps``, ``p``, ``alpha``) likewise: numbers pass, a string is a ``TypeError``
(``float("0.1")`` would take it)."""

from __future__ import annotations

import operator
from typing import Any

from ember.errors import ArgumentTypeError, type_name
from ember.ops.fits import check_number_int

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
    except TypeError as exc:
        if type(exc) is not TypeError:
            raise  # (Ember's own: a tensor of many elements, named; a tensor-like's hand-over)
    raise ArgumentTypeError(f"{op}: {what} must be an int, got {type_name(value)} "
                            f"{value!r}. Hint: convert it with int() if truncating is meant")


def as_ints(values: Any, op: str, what: str) -> tuple[int, ...]:
    """An int, or a sequence (or 1-d array) of them, as a tuple of ints (see :func:`as_int`)."""
    if type(values) is tuple and all(type(v) is int for v in values):
        return values  # (the common case, as it is)
    if hasattr(values, "__iter__") and getattr(values, "ndim", 1) and \
            not isinstance(values, (str, bytes)):
        return tuple(as_int(v, op, what) for v in values)
    return (as_int(values, op, what),)


def refused_ints(values: Any, op: str, what: str, exc: TypeError) -> TypeError:
    """The error to raise where reading ``values`` as ints with ``operator.index`` (a fast read
    with no check on its success path) raised ``exc``: the first entry that is no int, or the
    whole of a string or a non-sequence; ``exc`` itself when it is Ember's own (a tensor of many
    elements, named by its error; a tensor-like's hand-over).

    Example:
        >>> try:
        ...     shape = tuple(operator.index(s) for s in (2, 3.0))
        ... except TypeError as exc:
        ...     raise refused_ints((2, 3.0), "expand", "size", exc) from None
        Traceback (most recent call last):
        ember.errors.ArgumentTypeError: expand: size must be an int, got float 3.0. ...
    """
    if type(exc) is not TypeError:
        return exc
    if not isinstance(values, (str, bytes)) and hasattr(values, "__iter__"):
        for value in values:
            try:
                as_int(value, op, what)
            except ArgumentTypeError as error:
                return error
    return ArgumentTypeError(f"{op}: {what} must be a sequence of ints, got "
                             f"{type_name(values)} {values!r}")


def as_float(value: Any, op: str, what: str) -> float:
    """``value`` (a number, a NumPy scalar or a one-element tensor) as a float; a string (which
    ``float()`` would parse) or another object is a ``TypeError`` naming the op, as in PyTorch.
    An op whose cost is a few microseconds calls it only for a value that is not a float (a
    ``type(x) is float`` test costs what ``float(x)`` did).

    Example:
        >>> as_float(1, "logit", "eps")
        1.0
    """
    if type(value) is float:
        return value
    check_number_int(op, value)  # (2**64 or np.uint64(2**63) is an error, as in PyTorch)
    if type(value) is int:
        return float(value)
    if not isinstance(value, (str, bytes)):
        try:
            return float(value)
        except TypeError as exc:
            if type(exc) is not TypeError:
                raise  # (Ember's own, as in as_int)
    raise ArgumentTypeError(f"{op}: {what} must be a number, got {type_name(value)} "
                            f"{value!r}. Hint: pass an int or a float")


def dims_tuple(dim: Any, op: str) -> tuple:
    """A dim or a sequence of dims as a tuple, its entries left to the dims reader to check;
    a string (``tuple("ab")`` would read it as two dims), a float or another object that is no
    sequence is a ``TypeError`` naming the op.

    Example:
        >>> dims_tuple(1, "frobenius_norm"), dims_tuple([0, 1], "frobenius_norm")
        ((1,), (0, 1))
    """
    if type(dim) is tuple:
        return dim
    if isinstance(dim, int):
        return (dim,)
    if isinstance(dim, (str, bytes)) or not hasattr(dim, "__iter__"):
        return as_ints(dim, op, "dim")  # (a NumPy int; else raises)
    return tuple(dim)


def as_number(value: Any, op: str, what: str) -> int | float:
    """``value`` itself when an int or a float (a big int keeps its digits for an integer
    tensor); otherwise as :func:`as_float` reads it (a string is a ``TypeError`` naming the op).

    Example:
        >>> as_number(2, "threshold", "value"), as_number(np.float32(0.5), "threshold", "value")
        (2, 0.5)
    """
    if type(value) is float:
        return value
    if type(value) is int:
        check_number_int(op, value)
        return value
    return as_float(value, op, what)


def wide_int_as_float(value: Any) -> Any:
    """``value`` as a float where it is a Python int past int64, else as it is: ml_dtypes'
    floats (bfloat16, float8) take no such int ("expected number, got int"), where NumPy's
    own floats read it through float64 (torch's ``bf16 ** 2**63`` is as ``bf16 ** 2.0**63``).

    Example:
        >>> wide_int_as_float(2 ** 63), wide_int_as_float(3)
        (9.223372036854776e+18, 3)
    """
    if type(value) is int and not -_INT64_END <= value < _INT64_END:
        return float(value)
    return value


_INT64_END = 1 << 63
