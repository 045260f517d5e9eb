"""Reads of a compiled function that the cache key watches by kind of object, apart from the
rules of :mod:`ember.jit.discover`: Python's and NumPy's random numbers (:func:`draws_random`,
:func:`makes_unseeded`), a scheduler's ``get_last_lr()`` (:func:`method_reads`) and a
callable stored as an attribute (``self.t(x)``, :func:`stored_callable`)."""

from __future__ import annotations

import dis
import functools
import random
import types
import warnings
from typing import Any

import numpy as np

from ember.tensor import Tensor

_RANDOM_MODULES = ("random", "numpy.random")
# a generator or its class (seeded where it is called with arguments: no number drawn yet)
_MAKERS = frozenset({"default_rng", "Generator", "RandomState", "Random", "SeedSequence",
                     "BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"})
_NO_DRAW = _MAKERS | {"getstate", "get_state", "bit_generator"}
# a library object's method that returns one of its attributes: method -> attribute
_RETURNS_ATTRIBUTE = {"get_last_lr": "_last_lr"}


def _draws_from(holder: Any) -> bool:
    return isinstance(holder, types.ModuleType) and holder.__name__ in _RANDOM_MODULES or \
        isinstance(holder, random.Random | np.random.Generator | np.random.RandomState)


def draws_random(root: Any, links: tuple) -> bool:
    """Whether a chain (:func:`~ember.jit.code_names.item_chains`'s links from ``root``)
    reaches a function that draws (or seeds) Python's or NumPy's random numbers:
    ``random.random()``, ``np.random.rand()``, ``rng.normal()`` of a ``random.Random`` or NumPy
    generator, ``rand()`` imported from one; not a class (``np.random.Generator``) or a
    generator made (``np.random.default_rng(0)``: :func:`makes_unseeded` tells an unseeded
    one)."""
    holder = root
    for kind, key in links:
        if kind == "called":
            return _draws_from(getattr(holder, "__self__", None))
        if kind not in ("attr", "method"):
            return False
        if _draws_from(holder):
            found = getattr(holder, key, None)
            return callable(found) and not isinstance(found, type) and key not in _NO_DRAW
        if not isinstance(holder, types.ModuleType):  # (``np.random``: walked through modules)
            return False
        holder = getattr(holder, key, None)
    return False


@functools.lru_cache(maxsize=1024)
def makes_unseeded(code: types.CodeType) -> bool:
    """Whether ``code`` makes a NumPy or Python generator with no seed
    (``np.random.default_rng()``, ``random.Random()``), or code nested in it does: its
    numbers differ at every call."""
    ins = list(dis.get_instructions(code))
    return any(a.opname in ("LOAD_ATTR", "LOAD_METHOD") and a.argval in _MAKERS and
               b.opname == "PRECALL" and b.arg == 0 for a, b in zip(ins, ins[1:])) or \
        any(makes_unseeded(c) for c in code.co_consts if isinstance(c, types.CodeType))


def warn_random(label: str) -> None:
    """The warning for a draw of Python's or NumPy's random numbers (made once, at trace)."""
    warnings.warn(f"ember.jit: {label} draws Python's or NumPy's random numbers: "
                  "they are drawn once, while tracing, and the graph keeps them. "
                  "Hint: draw with ember.rand/ember.randn, or pass the number in",
                  stacklevel=4)


def method_reads(holder: Any, method: str) -> str | None:
    """The attribute a library object's ``method`` returns (a scheduler's ``get_last_lr()``
    its ``_last_lr``, a list of numbers each ``step()`` makes anew), to watch by value as a
    binding; else None."""
    name = _RETURNS_ATTRIBUTE.get(method)
    return name if name is not None and name in getattr(holder, "__dict__", ()) else None


def stored_callable(holder: Any, name: str) -> Any:
    """The callable that an object's own attribute ``name`` holds (``self.t = lambda x: …``,
    called as ``self.t(x)``: no method of its class), or None."""
    found = getattr(holder, "__dict__", {}).get(name)
    return found if callable(found) and not isinstance(found, Tensor | type) else None
