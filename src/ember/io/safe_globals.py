"""The weights-only allow-list: classes and functions a file's pickles may name and
``ember.load`` then rebuilds with the default ``weights_only=True``, as
``torch.serialization.add_safe_globals`` lets ``torch.load`` rebuild them.

Without it, a checkpoint holding a pickled object (a dataclass, a whole module) loads only
with ``weights_only=False``, which runs whatever code the file names. With it, the pickle may
name only the listed globals (and ``OrderedDict``, ``Counter``, ``set``, ``frozenset``,
``bytearray``, ``complex``, Ember's layouts and memory formats (``ember.strided``), and
Ember's own data classes: :func:`allow_own`): anything else is
refused before any code runs, so a hostile file can call nothing but what the user trusted.
Such pickles are read from protocol 2 on (what ``ember.save`` and ``torch.save`` write).
"""

from __future__ import annotations

import pickle
import reprlib
from collections import Counter, OrderedDict
from types import SimpleNamespace, TracebackType
from typing import Any

from ember import layouts
from ember.errors import ArgumentTypeError, WeightsOnlyError
from ember.io.pickle_names import python3_name, without_extensions
from ember.tensor import Tensor

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

_BUILTINS = {("collections", "OrderedDict"): OrderedDict, ("collections", "Counter"): Counter,
             ("builtins", "set"): set,
             ("builtins", "frozenset"): frozenset, ("builtins", "bytearray"): bytearray,
             ("builtins", "complex"): complex,
             **{("ember.layouts", v.name): v for v in vars(layouts).values()  # (constants,
                if isinstance(v, (layouts.layout, layouts.memory_format))}}  # as torch's)
_ALLOWED: dict[tuple[str, str], Any] = {}  # (module, qualified name) -> the object
HINT = "ember.serialization.add_safe_globals([...])"


def _key(item: Any) -> tuple[tuple[str, str], Any]:
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
        obj, name = item
        module, _, qualname = name.rpartition(".")
    else:
        obj, module, qualname = item, getattr(item, "__module__", None), \
            getattr(item, "__qualname__", None)
    if not (isinstance(module, str) and module and isinstance(qualname, str) and qualname):
        raise ArgumentTypeError(f"add_safe_globals: {item!r} is not a class or function with a "
                                "module and name; pass it as (obj, 'module.Name')")
    return (module, qualname), obj


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Lets ``ember.load(..., weights_only=True)`` (the default) rebuild pickled objects that
    name these classes or functions (each an object, or ``(object, "module.Name")`` for one
    saved under another name), as ``torch.serialization.add_safe_globals``. Only list code
    you trust: the file may call it with arguments of its choosing.

    Example:
        >>> ember.serialization.add_safe_globals([MyConfig])
        >>> ember.load(path)["config"]  # a pickled MyConfig, read with weights_only=True
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise ArgumentTypeError(f"add_safe_globals: expected a list, got "
                                f"{type(safe_globals).__name__}")
    _ALLOWED.update(_key(item) for item in safe_globals)


def get_safe_globals() -> list[Any]:
    """The objects :func:`add_safe_globals` allowed (those given with a name as the pair).

    Example:
        >>> ember.serialization.get_safe_globals()
        []
    """
    return [obj if (getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)) == key
            else (obj, ".".join(key)) for key, obj in _ALLOWED.items()]


def clear_safe_globals() -> None:
    """Forgets every object :func:`add_safe_globals` allowed.

    Example:
        >>> ember.serialization.clear_safe_globals()
    """
    _ALLOWED.clear()


class safe_globals:  # noqa: N801 - torch.serialization's name
    """Allows ``safe_globals`` for the duration of a ``with`` block, as
    ``torch.serialization.safe_globals``.

    Example:
        >>> with ember.serialization.safe_globals([MyConfig]):
        ...     ckpt = ember.load(path)
    """

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals
        self.saved: dict[tuple[str, str], Any] = {}

    def __enter__(self) -> None:
        self.saved = dict(_ALLOWED)
        add_safe_globals(self.safe_globals)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        _ALLOWED.clear()
        _ALLOWED.update(self.saved)


def allow_own(cls: type) -> None:
    """Lets every ``ember.load`` rebuild ``cls``, a plain data class of Ember's own (the
    ``ShardedTensor`` pieces a sharded state dict holds), as ``torch.load`` rebuilds
    ``torch.Size``; :func:`clear_safe_globals` keeps it."""
    _BUILTINS[(cls.__module__, cls.__qualname__)] = cls


def allowed(module: str, name: str) -> Any | None:
    """The object a pickle may name as ``module.name``, or None."""
    return _BUILTINS.get((module, name), _ALLOWED.get((module, name)))


def may_build(inst: Any) -> bool:
    """Whether a pickle may set the state of ``inst``: an instance (not a class) of an allowed
    class, whatever name it was allowed under (``(cls, "old.Name")``: a renamed class)."""
    cls = type(inst)
    return not isinstance(inst, type) and any(obj is cls for obj in _ALLOWED.values())


def own_attribute(name: Any) -> bool:
    """Whether a file may set ``name`` on a tensor: a subclass's own attribute, not a dunder
    or a name Tensor defines: its slots (its data, device, history), a property (whose
    setter would run: ``real`` writes the data) or a method (``sum``, shadowed)."""
    return isinstance(name, str) and not name.startswith("__") and not hasattr(Tensor, name)


def check_state(inst: Any, state: Any, where: str) -> None:
    """Refuses a pickle's BUILD ``state`` for a tensor unless it is a dict, or pickle's
    ``(dict, slots)`` pair, of :func:`own_attribute` names: pickle would set Tensor's own
    slots (its data as a str, another device) past the checks of its rebuild."""
    parts = state if isinstance(state, tuple) and len(state) == 2 else (state,)
    if isinstance(inst, Tensor) and not all(part is None or (isinstance(part, dict) and all(
            own_attribute(k) for k in part)) for part in parts):
        raise WeightsOnlyError(f"{where}: the file sets the state {reprlib.repr(state)} of a "
                               f"{type(inst).__name__}; only a tensor subclass's own "
                               "attributes may be set, not Tensor's (its data, device, "
                               "history); the file is corrupted or crafted")


class Unpickler(pickle._Unpickler):  # noqa: SLF001 - the Python one: BUILD overridden
    """An unpickler that names only allowed globals and sets state only on instances of
    allowed classes (``where``/``what``: the file and object, for the refusal)."""

    where, what = "load", "object"
    dispatch = without_extensions(pickle._Unpickler.dispatch)  # noqa: SLF001

    def find_class(self, module: str, name: str) -> Any:
        if self.proto < 3 and self.fix_imports:  # (Python 2's names, as pickle's own)
            module, name = python3_name(module, name)
        found = allowed(module, name)
        if found is None:
            raise WeightsOnlyError(
                f"{self.where}: the checkpoint holds a pickled {self.what} naming "
                f"{module}.{name}; unpickling runs code named by the file, so ember.load "
                "refuses it by default, as torch.load does. Hint: pass weights_only=False if "
                f"you trust the file, allow that class with {HINT}, or save plain data "
                "(model.state_dict() instead of the model, t.as_subclass(ember.Tensor) for a "
                "tensor subclass)")
        return found

    def load_build(self) -> None:
        if not may_build(self.stack[-2]):
            raise WeightsOnlyError(f"{self.where}: the pickled {self.what} sets the state of a "
                                   f"{type(self.stack[-2]).__name__}, which is not an instance "
                                   f"of a class allowed by {HINT}")
        check_state(self.stack[-2], self.stack[-1], self.where)
        pickle._Unpickler.load_build(self)  # noqa: SLF001

    dispatch[pickle.BUILD[0]] = load_build


def restricted(where: str, what: str) -> Any:
    """A pickle module for :func:`ember.io.pickled.loads` whose ``Unpickler`` names only
    allowed globals; its refusal names the file ``where`` and the pickled ``what``."""
    return SimpleNamespace(Unpickler=type("Unpickler", (Unpickler,),
                                          {"where": where, "what": what}))
