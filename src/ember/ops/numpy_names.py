"""NumPy's names ``axis=`` and ``keepdims=`` for ``dim`` and ``keepdim``, as PyTorch's argument
parser takes them on its native functions and methods (``x.sum(axis=0, keepdims=True)``,
``ember.cat(xs, axis=1)``).

:func:`add_numpy_names` replaces, where a namespace is assembled, each public function with a
``dim`` or ``keepdim`` parameter by a generated one with its parameters plus the aliases
(:func:`ember.ops.forwarding.forwarder`; ~0.1 µs a call, one frame). An ``out=`` form
(:mod:`ember.ops.out_arg`) takes them in its own frame. The functions PyTorch writes in Python
(``norm``, ``split``, ``unique``, ``unique_consecutive``, ``unflatten``) and ``nn.functional``
take no aliases there, and none here; nor do ``Tensor.size`` and ``Tensor.stride``, whose
~0.2 µs a frame would slow by a fifth for a spelling no one uses there.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from ember.ops.forwarding import NUMPY_NAMES, forwarder

__all__ = ["add_numpy_names", "takes_numpy_names"]

#: functions and methods (``Tensor.…``) with a ``dim`` that take no aliases: PyTorch's Python
#: ones, and the accessors a frame would slow by a fifth
WITHOUT = frozenset({"norm", "split", "unique", "unique_consecutive", "Tensor.norm",
                     "Tensor.split", "Tensor.unique", "Tensor.unique_consecutive",
                     "Tensor.unflatten", "Tensor.size", "Tensor.stride"})


def takes_numpy_names(name: str, fn: Any) -> bool:
    """Whether PyTorch's function or method ``name`` (qualified below ``torch``:
    ``linalg.norm``, ``Tensor.sum``; Ember's ``fn``) takes NumPy's names."""
    if name.rpartition(".")[2].startswith("_") or name in WITHOUT \
            or not isinstance(fn, types.FunctionType):
        return False
    code = fn.__code__
    named = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if not any(p in named for p in NUMPY_NAMES) and "__wrapped__" not in vars(fn) \
            and "__signature__" not in vars(fn):
        return False  # (read off its code: half the time of inspect.signature at import)
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return any(name in parameters for name in NUMPY_NAMES)


def add_numpy_names(owner: dict[str, Any] | type) -> None:
    """Gives every public function of ``owner`` (a module's ``globals()``, or a class for its
    methods) that has ``dim`` or ``keepdim`` the aliases ``axis`` and ``keepdims``; an alias of
    a function (``ember.swapaxes``/``transpose``) stays one object.

    Example:
        >>> ember.ones(2, 3).sum(axis=1, keepdims=True).shape
        ember.Size([2, 1])
    """
    names = dict(vars(owner)) if isinstance(owner, type) else owner
    prefix = owner.__name__ if isinstance(owner, type) else \
        owner["__name__"].removeprefix("ember").lstrip(".")
    for name, fn in list(names.items()):
        qualified = f"{prefix}.{name}" if prefix else name
        if takes_numpy_names(qualified, fn) and not getattr(fn, "_numpy_names", False):
            if fn not in _FORMS:
                form = _FORMS[fn] = functools.update_wrapper(
                    forwarder(fn, inspect.signature(fn), numpy_names=True), fn)
                form._numpy_names = True
            if isinstance(owner, type):
                setattr(owner, name, _FORMS[fn])
            else:
                owner[name] = _FORMS[fn]


_FORMS: dict[Callable[..., Any], Callable[..., Any]] = {}  # function -> its form with aliases
