"""Reads of a compiled function that the cache key watches by kind of object, apart from the
rules of :mod:`ember.jit.discover`: a scheduler's ``get_last_lr()`` and a GradScaler's
``get_scale()`` (:func:`method_reads`), and
a callable stored as an attribute (``self.t(x)``, :func:`stored_callable`); Python's and
NumPy's random numbers are :mod:`ember.jit.random_reads`'s."""

from __future__ import annotations

from typing import Any

from ember.tensor import Tensor

# a library object's method that returns one of its attributes: method -> attribute
_RETURNS_ATTRIBUTE = {"get_last_lr": "_last_lr", "get_scale": "_scale"}


def method_reads(holder: Any, method: str) -> str | None:
    """The attribute a library object's ``method`` returns (a scheduler's ``get_last_lr()``
    its ``_last_lr``, a list of numbers each ``step()`` makes anew; a GradScaler's
    ``get_scale()`` its ``_scale``), to watch by value as a binding; else None."""
    name = _RETURNS_ATTRIBUTE.get(method)
    return name if name is not None and name in getattr(holder, "__dict__", ()) else None


def stored_callable(holder: Any, name: str) -> Any:
    """The callable that an object's own attribute ``name`` holds (``self.t = lambda x: …``,
    called as ``self.t(x)``: no method of its class), or None."""
    found = getattr(holder, "__dict__", {}).get(name)
    return found if callable(found) and not isinstance(found, Tensor | type) else None
