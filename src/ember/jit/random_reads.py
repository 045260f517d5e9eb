"""Python's and NumPy's random numbers in a compiled function: drawn once, while tracing, so
the graph keeps them. :func:`draws_random` tells a draw (``random.random()``,
``rng.normal()``), :func:`unseeded_line` a generator made without a seed
(``np.random.default_rng()`` or ``(None)``), and :func:`warn_random` says so at the user's
line."""

from __future__ import annotations

import dis
import functools
import random
import types
import warnings
from typing import Any

import numpy as np

_RANDOM_MODULES = ("random", "numpy.random")
# a generator or its class (seeded where it is called with arguments: no number drawn yet)
_MAKERS = frozenset({"default_rng", "Generator", "RandomState", "Random", "SeedSequence",
                     "BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"})
_NO_DRAW = _MAKERS | {"getstate", "get_state", "bit_generator"}
_MAKER_OBJECTS = tuple(getattr(m, n) for m in (random, np.random) for n in sorted(_MAKERS)
                       if hasattr(m, n))
_ROOTS = ("LOAD_GLOBAL", "LOAD_NAME")
_LINKS = ("LOAD_ATTR", "LOAD_METHOD")


def _draws_from(holder: Any) -> bool:
    return isinstance(holder, types.ModuleType) and holder.__name__ in _RANDOM_MODULES or \
        isinstance(holder, random.Random | np.random.Generator | np.random.RandomState)


def draws_random(root: Any, links: tuple) -> bool:
    """Whether a chain (:func:`~ember.jit.code_names.item_chains`'s links from ``root``)
    reaches a function that draws (or seeds) Python's or NumPy's random numbers:
    ``random.random()``, ``np.random.rand()``, ``rng.normal()`` of a ``random.Random`` or NumPy
    generator, ``rand()`` imported from one; not a class (``np.random.Generator``) or a
    generator made (``np.random.default_rng(0)``: :func:`unseeded_line` tells an unseeded
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
def _unseeded_calls(code: types.CodeType) -> tuple[tuple[tuple[str, ...], int], ...]:
    """Each call in ``code`` (and code nested in it) of a global name or a chain of its
    attributes (``np.random.default_rng``) with no argument or only ``None`` (by position or
    keyword): the chain of names and its line."""
    ins = list(dis.get_instructions(code))
    found = []
    for i, call in enumerate(ins):
        if call.opname != "PRECALL":
            continue
        j, nones = i - 1, 0
        while j >= 0 and (ins[j].opname == "KW_NAMES" or
                          ins[j].opname == "LOAD_CONST" and ins[j].argval is None):
            nones += ins[j].opname == "LOAD_CONST"
            j -= 1
        chain = []
        while j >= 0 and ins[j].opname in _LINKS:
            chain.append(ins[j].argval)
            j -= 1
        if nones == call.arg and j >= 0 and ins[j].opname in _ROOTS:
            found.append(((ins[j].argval, *reversed(chain)), ins[j].positions.lineno))
    found += [c for inner in code.co_consts if isinstance(inner, types.CodeType)
              for c in _unseeded_calls(inner)]
    return tuple(found)


def unseeded_line(fn: types.FunctionType, code: types.CodeType) -> int | None:
    """The line where ``fn`` (its ``code``) makes a NumPy or Python generator with no seed
    (``np.random.default_rng()``, ``default_rng(seed=None)``, ``random.Random(None)``): its
    numbers differ at every call. None where it makes none (``ember.Generator()``, a method
    of yours named ``Random``, are none)."""
    scope = getattr(fn, "__globals__", {})
    for (name, *attributes), line in _unseeded_calls(code):
        obj = scope.get(name)
        for attribute in attributes:
            obj = getattr(obj, attribute, None) if isinstance(obj, types.ModuleType) else None
        if obj is not None and any(obj is maker for maker in _MAKER_OBJECTS):
            return line
    return None


def draw_line(code: types.CodeType, links: tuple) -> int:
    """The first line of ``code`` that names the last attribute of a draw's chain."""
    name = next((key for kind, key in reversed(links) if kind in ("attr", "method")), None)
    return next((ins.positions.lineno for ins in dis.get_instructions(code)
                 if ins.argval == name and ins.positions.lineno), code.co_firstlineno)


def warn_random(label: str, fn: Any, code: types.CodeType, line: int) -> None:
    """The warning for a draw of Python's or NumPy's random numbers (made once, at trace),
    at the user's ``line`` of ``code`` (of function ``fn``: once per line, as ``warn``)."""
    scope = getattr(fn, "__globals__", {})
    warnings.warn_explicit(f"ember.jit: {label} draws Python's or NumPy's random numbers: "
                           "they are drawn once, while tracing, and the graph keeps them. "
                           "Hint: draw with ember.rand/ember.randn, or pass the number in",
                           UserWarning, code.co_filename, line, scope.get("__name__") or "<string>",
                           scope.setdefault("__warningregistry__", {}))
