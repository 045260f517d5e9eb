"""Whether an object holds a value of interest anywhere inside it: in its items (tuples,
lists, sets, dicts' keys and values), its attributes (``__dict__`` and ``__slots__``), at any
depth, each object once (cycles end). :func:`ember.jit.compile` uses it to find outputs that
hold values the trace computed, :mod:`ember.fx` objects that hold a proxy."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ember.tensor import Tensor

#: values whose insides are never walked: atoms, classes, code, modules, tensors
_OPAQUE = (str, bytes, bytearray, int, float, complex, type, types.ModuleType,
           types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType,
           Tensor)


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
    members = []
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
