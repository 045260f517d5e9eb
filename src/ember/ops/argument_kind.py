"""The error of a tensor used where an op takes a Python bool, int or float (a flag, a dim, a
probability) and that cannot be one: more than one element, or a float where an int belongs.

``bool()``, ``int()``, ``float()``, ``operator.index`` and ``item()`` of such a tensor raise it
on their error path (a passing conversion costs nothing more): inside an op it names the op
the user called and the argument, as PyTorch's argument parser does; outside one the plain
message of the conversion stands.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentTypeError, describe
from ember.ops.public_op import argument_of

__all__: list[str] = []

# annotations that say which Python type an argument takes better than the conversion does
_SHOWN = {"bool": "bool", "int": "int", "float": "float", "bool | None": "bool",
          "int | None": "int", "float | None": "float", "Number": "Number"}


def not_a_python_value(value: Any, kind: str, plain: Exception) -> Exception:
    """The error for converting ``value``, a tensor, to a Python ``kind`` ("bool", "int",
    "float", "number"), which it cannot be: ``plain`` (the conversion's own error) outside any
    op; inside one, e.g. ``sum(): argument 'keepdim' must be bool, not a Tensor of
    shape (2,) int64``.

    Example:
        >>> ember.ones(3, 4).sum(0, keepdim=ember.tensor([1, 2]))
        Traceback (most recent call last):
        ember.errors.ArgumentTypeError: sum(): argument 'keepdim' must be bool, not a Tensor ...
    """
    where = argument_of(value)
    if where is None:
        return plain
    op, name, annotation, argument = where
    if not name:  # (an op's own value, not an argument: name the op)
        plain.args = (f"{op}: {plain.args[0]}", *plain.args[1:])
        return plain
    kind = _SHOWN.get(annotation, kind)
    shown = describe(argument.shape, argument.dtype)
    return ArgumentTypeError(f"{op}(): argument '{name}' must be {kind}, not a Tensor of shape "
                             f"{shown}. Hint: pass a Python {kind}; a one-element tensor's "
                             "value is t.item()")


def not_a_number(value: Any, kind: str = "a number") -> ArgumentTypeError:
    """The error for ``value`` (a string, a list, …) given where the op now running takes a
    Python number, naming the op the user called and the argument, as PyTorch's argument
    parser does: ``full(): argument 'fill_value' must be a number, not str 'abc'``."""
    op, name, _, _ = argument_of(value) or ("conversion to a number", "", "", None)
    arg = f"argument '{name}'" if name else "an argument"
    return ArgumentTypeError(f"{op}(): {arg} must be {kind}, not {type(value).__name__} "
                             f"{value!r}. Hint: pass an int, a float or a bool")
