"""The inputs ``concrete_args`` gives: :data:`PH`, the marker that keeps part of one symbolic,
and :func:`check_specialized`, the check a graph runs on the values it was specialized to.

``symbolic_trace(f, concrete_args={"d": {"a": PH, "b": [PH]}})`` traces ``f`` with ``d`` a
dict whose ``"a"`` and ``"b"[0]`` are proxies (read from the one placeholder ``d`` with
``getitem``), as torch.fx's ``PH`` does; the other leaves of the pattern are fixed values.

Example:
    >>> gm = ember.fx.symbolic_trace(lambda d: d["a"] * 2, concrete_args={"d": {"a": PH}})
    >>> gm({"a": ember.ones(1)})
    tensor([2.])
"""

from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np

from ember.backend.device import Device
from ember.dtypes import DType
from ember.errors import ArgumentError
from ember.fx.node import Node, has_side_effect
from ember.fx.proxy import Proxy
from ember.layouts import layout, memory_format
from ember.tensor import Tensor


class PHBase:
    """The class of :data:`PH`; a subclass's fields (not its methods) are set on the node
    that reads its leaf, where the node has no attribute of that name, as torch.fx's
    ``PHWithMeta``'s ``ph_key``.

    Example:
        >>> class Keyed(PHBase):
        ...     def __init__(self, key):
        ...         self.ph_key = key
        >>> gm = ember.fx.symbolic_trace(lambda d: d["a"] + 1,
        ...                              concrete_args={"d": {"a": Keyed("k1")}})
        >>> [getattr(n, "ph_key", None) for n in gm.graph.nodes]
        [None, 'k1', None, None]
    """

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def holds_placeholder(pattern: Any) -> bool:
    """Whether ``pattern`` is :data:`PH` or a tuple, list or dict holding one."""
    if isinstance(pattern, PHBase):
        return True
    if isinstance(pattern, dict):
        return any(map(holds_placeholder, pattern.values()))
    if isinstance(pattern, (tuple, list)):
        return any(map(holds_placeholder, pattern))
    return False


def concrete_input(tracer: Any, name: str, value: Any, type_expr: Any) -> Any:
    """The value ``tracer``'s traced code sees for the parameter ``name`` given ``value`` in
    ``concrete_args``: a placeholder read as :func:`bind` says where ``value`` holds
    :data:`PH`, else ``value`` (its placeholder's default), checked where it compares by
    value."""
    if holds_placeholder(value):
        return bind(tracer, tracer.create_proxy("placeholder", name, (), {}, type_expr=type_expr),
                    value, name)
    node = tracer.create_node("placeholder", name, (value,), {}, type_expr=type_expr)
    return _specialize(tracer, node, value, name)


def bind(tracer: Any, proxy: Any, pattern: Any, path: str) -> Any:
    """The value the traced code sees for an input shaped as ``pattern``: ``proxy`` where it
    is :data:`PH`, containers of the same type indexed out of ``proxy`` where they hold one, and
    the fixed value of every other leaf (read and checked where it compares by value)."""
    if isinstance(pattern, PHBase):
        for name in dir(pattern):  # (a subclass's fields go onto the node, as torch.fx's)
            value = getattr(pattern, name)
            if not name.startswith("__") and not callable(value) and \
                    not hasattr(proxy.node, name):
                setattr(proxy.node, name, value)
        return proxy
    if not holds_placeholder(pattern):
        return _specialize(tracer, proxy.node, pattern, path)

    def leaf(key: Any, value: Any) -> Any:
        if not holds_placeholder(value) and not _guardable(value):
            return value  # (a tensor or another object: kept, nothing to read or check)
        return bind(tracer, proxy[key], value, f"{path}[{key!r}]")

    if isinstance(pattern, dict):
        return _same_type(pattern, {k: leaf(k, v) for k, v in pattern.items()})
    return _same_type(pattern, [leaf(i, v) for i, v in enumerate(pattern)])


def _same_type(pattern: tuple | list | dict, items: list | dict) -> Any:
    """``items`` as a container of ``pattern``'s type (a namedtuple, an OrderedDict, a
    defaultdict with its factory), as torch.fx's pytree rebuilds it."""
    if hasattr(pattern, "_fields"):
        return type(pattern)._make(items)
    if type(pattern) in (tuple, list, dict) or isinstance(pattern, tuple):
        return type(pattern)(items)
    made = copy.copy(pattern)  # (a list or dict subclass, its other state kept)
    made.clear()
    made.update(items) if isinstance(made, dict) else made.extend(items)
    return made


def _specialize(tracer: Any, node: Node, value: Any, name: str) -> Any:
    """``value`` (the input ``node`` is fixed to), checked where it compares by value."""
    if _guardable(value):
        tracer.create_node("call_function", check_specialized, (node, value, name), {})
    return value


_GUARDED = (bool, int, float, complex, str, DType, Device, memory_format, layout)


def _guardable(value: Any) -> bool:
    """Whether a concrete argument compares by value (None, numbers, strings, dtypes,
    devices, memory formats, layouts, tuples and lists of them), as torch.fx's check, so the
    graph can check a later call passes the same."""
    if isinstance(value, (tuple, list)):
        return all(map(_guardable, value))
    return value is None or type(value) in _GUARDED


def _passes(value: Any, expected: Any) -> bool:
    """Whether ``value`` equals the specialized ``expected`` (``value == expected``, as
    torch.fx's check): a NumPy scalar or a one-element tensor or ndarray passes for an equal
    number (``np.int64(2)``, ``ember.tensor(2)``, ``np.array([2])`` for 2), other types of
    value do not."""
    if isinstance(expected, (tuple, list)):
        return isinstance(value, tuple if isinstance(expected, tuple) else list) and \
            len(value) == len(expected) and all(map(_passes, value, expected))
    if value is None or expected is None:
        return value is expected
    if isinstance(value, (Tensor, np.ndarray)):
        n = value.size if isinstance(value, np.ndarray) else value.numel()
        return n == 1 and type(expected) in (bool, int, float, complex) and \
            bool(value == expected)
    return (_guardable(value) or isinstance(value, (numbers.Number, np.generic))) and \
        bool(value == expected)


class SpecializedArgumentError(ArgumentError, AssertionError):
    """A traced graph was called with another value for an argument that ``concrete_args``
    fixed (an ``AssertionError`` too, as torch.fx's check raises)."""


@has_side_effect
def check_specialized(value: Any, expected: Any, name: str) -> None:
    """The check a graph traced with ``concrete_args={name: expected}`` runs first: the
    graph holds only the branch ``expected`` took, so another value is refused (traced
    itself, the check is recorded)."""
    if isinstance(value, Proxy):  # (the generated code traced again: an unpickled module)
        return value.tracer.create_node("call_function", check_specialized,
                                        (value.node, expected, name), {})
    if _passes(value, expected):
        return
    scalar = _guardable(value) or isinstance(value, (numbers.Number, np.generic))
    got = repr(value) if scalar else f"a {type(value).__name__}"
    param, inside = name.partition("[")[0], "[" in name  # (``t[1]``: a leaf of ``t``'s pattern)
    if inside:
        hint = (f"trace again with {value!r} (or PH) at {name} in concrete_args[{param!r}]"
                if _guardable(value) else f"trace again with PH at {name} in "
                f"concrete_args[{param!r}]")
    else:
        hint = (f"trace again with concrete_args={{{name!r}: {value!r}}}" if _guardable(value)
                else f"trace again without {name} in concrete_args")
    raise SpecializedArgumentError(
        f"forward: {name} was specialized to {expected!r} by symbolic_trace's concrete_args, "
        f"so the graph computes only that case, but got {got}. Hint: {hint}")


check_specialized._qualified_name = "ember.fx.placeholders.check_specialized"
