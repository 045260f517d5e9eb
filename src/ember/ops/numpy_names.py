"""NumPy's names for PyTorch's parameters, as PyTorch's argument parser takes them on its native
functions (the table :data:`ember.ops.forwarding.NUMPY_NAMES`): ``axis=`` and ``keepdims=`` for
``dim`` and ``keepdim`` (``x.sum(axis=0, keepdims=True)``, ``ember.cat(xs, axis=1)``), ``x=``,
``a=`` or ``x1=`` for ``input`` and ``x2=`` for ``other`` (``ember.add(x1=a, x2=b)``,
``ember.erf(x=t)``); a parameter given by two of its names is refused with a ``TypeError``.

:func:`add_numpy_names` replaces, where a namespace is assembled, each public function with
such a parameter by a generated one with its parameters plus the aliases
(:func:`ember.ops.forwarding.forwarder`; ~0.1 µs a call, one frame). An ``out=`` form
(:mod:`ember.ops.out_arg`) takes them in its own frame, at no measurable cost. The functions
PyTorch writes in Python (``norm``, ``split``, ``stft``, ``unique``, ``unique_consecutive``,
``unflatten``) and ``nn.functional`` take no aliases there, and none here; nor do
``Tensor.size`` and ``Tensor.stride``, whose ~0.2 µs a frame would slow by a fifth for a
spelling no one uses there. Methods take ``axis``/``keepdims`` only: PyTorch's take ``x2=`` for
``other`` too (``t.add(x2=u)``), which would cost ``t.add(u)`` a frame here.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from ember.ops.forwarding import METHOD_NAMES, NUMPY_NAMES, forwarder

__all__ = ["add_numpy_names", "takes_numpy_names"]

#: functions and methods (``Tensor.…``) with a ``dim`` that take no aliases: PyTorch's Python
#: ones, and the accessors a frame would slow by a fifth
WITHOUT = frozenset({"norm", "split", "stft", "unique", "unique_consecutive", "Tensor.norm",
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
    aliased = METHOD_NAMES if name.startswith("Tensor.") else NUMPY_NAMES
    if not any(p in named for p in aliased) and "__wrapped__" not in vars(fn) \
            and "__signature__" not in vars(fn):
        return False  # (read off its code: half the time of inspect.signature at import)
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return any(name in parameters for name in aliased)


def add_numpy_names(owner: dict[str, Any] | type) -> None:
    """Gives every public function of ``owner`` (a module's ``globals()``, or a class for its
    methods) NumPy's names for its parameters (``axis`` for ``dim``, ``x`` for ``input``…;
    a method, those for ``dim`` and ``keepdim``); an alias of a function
    (``ember.swapaxes``/``transpose``) stays one object.

    Example:
        >>> ember.ones(2, 3).sum(axis=1, keepdims=True).shape
        ember.Size([2, 1])
        >>> ember.add(x1=ember.ones(2), x2=ember.ones(2))
        tensor([2., 2.])
    """
    names = dict(vars(owner)) if isinstance(owner, type) else owner
    prefix = owner.__name__ if isinstance(owner, type) else \
        owner["__name__"].removeprefix("ember").lstrip(".")
    method = isinstance(owner, type)
    for name, fn in list(names.items()):
        qualified = f"{prefix}.{name}" if prefix else name
        if takes_numpy_names(qualified, fn) and not getattr(fn, "_numpy_names", False):
            if (fn, method) not in _FORMS:
                form = _FORMS[fn, method] = functools.update_wrapper(forwarder(
                    fn, inspect.signature(fn), numpy_names=True, method=method), fn)
                form._numpy_names = True
            if method:
                setattr(owner, name, _FORMS[fn, method])
            else:
                owner[name] = _FORMS[fn, method]


#: (function, whether a method) -> its form with aliases
_FORMS: dict[tuple[Callable[..., Any], bool], Callable[..., Any]] = {}
