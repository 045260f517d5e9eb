"""Whether an object holds a value of interest anywhere inside it: in its items (tuples,
lists, sets, dicts' keys and values), its attributes (``__dict__`` and ``__slots__``), a
function's closure cells and defaults, a bound method's object, a ``functools.partial``'s
function, arguments and keywords, at any depth, each object once (cycles end). A function's
globals are not walked. The walk visits every object reached, so an object holding a long
Python list is walked item by item. :func:`ember.jit.compile` uses it to find outputs that
hold values the trace computed, :mod:`ember.fx` objects that hold a proxy."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

from ember.tensor import Tensor

#: values whose insides are never walked: atoms, classes, code, modules, tensors
_OPAQUE = (str, bytes, bytearray, int, float, complex, type, types.ModuleType,
           types.BuiltinFunctionType, types.CodeType, Tensor)


def holds(value: Any, match: Callable[[Any], bool]) -> bool:
    """Whether ``match`` is true of ``value`` or of anything ``value`` holds.

    Example:
        >>> class Box:
        ...     __slots__ = ("items",)
        >>> b = Box(); b.items = {"k": [[3]]}
        >>> holds(b, lambda v: v == 3)
        True
    """
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if match(v):
            return True
        if isinstance(v, _OPAQUE) or v is None or id(v) in seen:
            continue
        seen.add(id(v))
        stack.extend(_members(v))
    return False


def _members(v: Any) -> list:
    """What ``v`` holds one level down."""
    if isinstance(v, dict):
        return [*v.keys(), *v.values()]
    if isinstance(v, tuple | list | set | frozenset):
        return list(v)
    members: list = []
    if isinstance(v, types.FunctionType):
        members += [_cell(c) for c in v.__closure__ or ()]
        members += [v.__defaults__, v.__kwdefaults__]
    elif isinstance(v, types.MethodType):
        members += [v.__self__, v.__func__]
    elif isinstance(v, functools.partial):
        members += [v.func, v.args, v.keywords]
    attrs = getattr(v, "__dict__", None)
    if isinstance(attrs, dict):
        members += attrs.values()
    for cls in type(v).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__"):
                if name.startswith("__") and not name.endswith("__"):  # (a private name)
                    name = f"_{cls.__name__.lstrip('_')}{name}"
                try:
                    members.append(getattr(v, name))
                except AttributeError:  # (a slot never set)
                    pass
    return members


def _cell(cell: types.CellType) -> Any:
    """What a closure cell holds (None where it is not bound yet)."""
    try:
        return cell.cell_contents
    except ValueError:  # (an empty cell: the name is not assigned yet)
        return None
