"""Which objects a compiled function follows, and reading them without running their code.

The user's objects, classes and modules are followed (:func:`plain_object`,
:func:`user_class`, :func:`user_module`); installed libraries' and Ember's are not
(:func:`is_library`). Attributes are read as Python looks them up but never through a property
(:func:`attribute`), and a global, closure cell, default argument or attribute through one
call (:func:`bound_value`).
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Iterator
from typing import Any

from ember.jit.code_names import ATTRIBUTE_LOADS, STATE_NAMES, attribute_writes, code_names
from ember.nn.module import Module

# kinds never followed: numbers, strings, classes and modules (their attributes are not state)
NOT_FOLLOWED = (types.ModuleType, type, str, bytes, int, float, bool, type(None), complex)
_LIBRARIES = frozenset({"numpy", "builtins", "torch", "logging", "functools", "typing",
                        "collections", "threading", "tqdm", "matplotlib", "mpi4py"})


def is_library(obj: Any) -> bool:
    """Objects of installed packages and of Ember itself are not followed (their state is
    not the user's model)."""
    return library_module(getattr(obj, "__module__", None) or
                          getattr(type(obj), "__module__", ""))


def library_code(func: Any) -> bool:
    """Whether ``func`` is a library's code; a function by the module it was defined in
    (``functools.wraps`` copies the ``__module__`` of what it wraps: the user's wrapper of a
    built-in module is the user's code)."""
    if isinstance(func, types.FunctionType):
        return library_module(func.__globals__.get("__name__"))
    return is_library(func)


def library_module(name: str | None) -> bool:
    """Whether the module named ``name`` belongs to an installed library Ember does not
    follow, or to Ember."""
    top = (name or "").split(".", 1)[0]
    return top in _LIBRARIES or top == "ember"


def user_functions(cls: type) -> Iterator[tuple[str, types.FunctionType]]:
    """``(name, function)`` for the functions of the user's class and of its user base
    classes."""
    return ((key, f) for klass in cls.__mro__ if not is_library(klass)
            for key, f in vars(klass).items() if isinstance(f, types.FunctionType))


@functools.lru_cache(maxsize=256)
def assigned_attributes(cls: type) -> frozenset[str]:
    """The attribute names the user's class's functions other than ``__init__`` assign."""
    return frozenset(attributes[-1] for key, f in user_functions(cls) if key != "__init__"
                     for _, _, attributes in attribute_writes(f.__code__))


@functools.lru_cache(maxsize=256)
def class_reads_state(cls: type) -> bool:
    """Whether a method of the user's class (or of its user base classes) reads some
    ``.state``: a method the function calls on such an object (``self.damp()``) may branch
    on an optimizer's state."""
    return any(not STATE_NAMES.isdisjoint(code_names(f.__code__, ATTRIBUTE_LOADS))
               for _, f in user_functions(cls))


def plain_object(obj: Any) -> bool:
    """An object of the user's with attributes to follow (not a number, string, class, module
    or an installed library's or Ember's object)."""
    return not isinstance(obj, NOT_FOLLOWED) and hasattr(obj, "__dict__") and not is_library(obj)


def user_module(obj: Any) -> bool:
    """A Python module of the user's (``config`` in ``config.SCALE``): neither the standard
    library's nor one of the libraries Ember does not follow."""
    if not isinstance(obj, types.ModuleType):
        return False
    return obj.__name__.split(".", 1)[0] not in sys.stdlib_module_names and \
        not library_module(obj.__name__)


def user_class(obj: Any) -> bool:
    """A class of the user's (``Config`` in ``Config.scale``), decided as for its objects
    (:func:`plain_object`): not one of an installed library's or Ember's."""
    return isinstance(obj, type) and not is_library(obj)


def member(obj: Any, name: str) -> Any:
    """``obj.name`` without running code: an instance attribute, a class's own or inherited
    one, or a module's member (a property, say a parametrized weight, is not computed)."""
    if isinstance(obj, Module):
        for members in (obj._parameters, obj._buffers, obj._modules):
            if name in members:
                return members[name]
    return attribute(obj, name)


def attribute(obj: Any, name: str) -> Any:
    """``obj.name`` from ``obj``'s own ``__dict__``, else from its class's (along the MRO), as
    Python looks it up, but never running a property or other data descriptor."""
    if isinstance(obj, type):
        return _class_attribute(obj, name)
    found = vars(obj).get(name, MISSING)
    if found is MISSING:
        found = _class_attribute(type(obj), name)
        if hasattr(type(found), "__set__"):  # (a property: its value is computed)
            return MISSING
    return found


def _class_attribute(cls: type, name: str) -> Any:
    for owner in cls.__mro__:
        if name in vars(owner):
            return vars(owner)[name]
    return MISSING


def partial_arguments(p: functools.partial, positions: bool = False) -> dict[str, Any]:
    """The arguments a ``functools.partial`` binds, by its function's parameter names
    (``positions``: the positional ones as ``args[i]``, for labels).

    Example:
        >>> partial_arguments(functools.partial(lambda c, x: x * c[0], cfg))
        {'c': cfg}
    """
    code = getattr(getattr(p.func, "__func__", p.func), "__code__", None)
    names = () if code is None else code.co_varnames[:code.co_argcount]
    names = names[1:] if isinstance(p.func, types.MethodType) else names
    given = {f"args[{i}]" if positions or i >= len(names) else names[i]: arg
             for i, arg in enumerate(p.args)}
    return {**given, **p.keywords}


def bound_value(holder: Any, name: Any) -> Any:
    """The value a global (``holder`` the globals dict), closure cell, default argument, the
    attribute ``name`` of a plain object or class, or the item ``name`` of a dict or list
    holds now."""
    if isinstance(holder, dict):  # (not a subclass's own ``get``: the user's code)
        return dict.get(holder, name, MISSING)
    if isinstance(holder, list | tuple):
        return holder[name] if type(name) is int and -len(holder) <= name < len(holder) \
            else MISSING
    if isinstance(holder, types.CellType):
        try:
            return holder.cell_contents
        except ValueError:
            return MISSING
    if isinstance(holder, Defaults | Numbers):
        return holder.read(name)
    return attribute(holder, name)


MISSING = object()


class Defaults:
    """A function's default argument values, as a binding's holder: ``f.__defaults__ = (5.0,)``
    (or ``__kwdefaults__``) changes an input of the graph, as rebinding a global does."""

    __slots__ = ("fn", "positions")

    def __init__(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        self.fn = fn
        # each positional parameter's place, counted from the last one (defaults fill the end)
        self.positions = {name: code.co_argcount - i
                          for i, name in enumerate(code.co_varnames[:code.co_argcount])}

    def names(self) -> list[str]:
        """The parameters that have a default now."""
        count = len(self.fn.__defaults__ or ())
        return [name for name, back in self.positions.items() if back <= count] + \
            list(self.fn.__kwdefaults__ or ())

    def read(self, name: str) -> Any:
        """The default value of parameter ``name`` now."""
        back = self.positions.get(name)
        if back is None:
            return (self.fn.__kwdefaults__ or {}).get(name, MISSING)
        defaults = self.fn.__defaults__ or ()
        return defaults[-back] if back <= len(defaults) else MISSING


class Numbers:
    """A library object's attribute holding a list of numbers, as a binding's holder: read as
    a tuple, so it is watched by value (a scheduler's ``_last_lr``, a new list at each
    ``step()``: an unchanged lr is no change); a list holding anything else, by identity."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def read(self, name: str) -> Any:
        """The attribute ``name`` of the object now (a tuple of its numbers)."""
        value = vars(self.obj).get(name, MISSING)
        return tuple(value) if isinstance(value, list) and all(
            type(x) in (int, float) for x in value) else value


def own_call(obj: Any) -> bool:
    """Whether ``obj``'s ``__call__`` is the user's code (followed; a library's is not, so
    all the object holds is then watched)."""
    method = member(type(obj), "__call__")
    return isinstance(method, types.FunctionType) and not library_code(method)


def wrapped_by_library(fn: Any) -> Any:
    """What ``fn`` calls where it is a library's wrapper made by ``functools.wraps``
    (``autocast("cpu")(model)``): it copied the ``__module__`` of what it wraps, so a wrapper
    of a built-in module looks like library code, yet what it wraps is the user's state.
    None for any other ``fn``."""
    if isinstance(fn, types.FunctionType) and library_code(fn):
        return getattr(fn, "__wrapped__", None)
    return None
