"""The values a compiled function reaches: constants a trace reads (:func:`is_plain`), and
containers of tensors (:func:`held_tensors`, :func:`nested`), at most ``MAX_DEPTH`` levels
down."""

from __future__ import annotations

import array
from collections import ChainMap, UserDict, UserList, deque
from collections.abc import Iterator
from operator import is_
from types import MappingProxyType
from typing import Any

import numpy as np

from ember.jit.code_names import WHOLE
from ember.jit.user_objects import MISSING, plain_object
from ember.nn.module import Module
from ember.tensor import Tensor

MAX_DEPTH = 4


def is_plain(value: Any) -> bool:
    """A number (NumPy's too), string, None, or a tuple of them: a value a trace reads as a
    constant."""
    if isinstance(value, tuple):
        return all(map(is_plain, value))
    return isinstance(value, bool | int | float | str | bytes | complex | np.generic) or \
        value is None


def value_key(value: Any) -> Any:
    """A binding's or attribute's part of the layout: a plain value (:func:`is_plain`) by
    value (a float by its bits, so NaN equals itself), any other object by identity."""
    if isinstance(value, float):
        return ("float", value.hex())
    if is_plain(value):
        return ("value", value, type(value))  # (1 == True == 1.0, as values: not as keys)
    return ("object", id(value))


def held_tensors(value: Any, depth: int = 0) -> list[tuple[str, Tensor]]:
    """The tensors an attribute holds, each with what follows the attribute's name in its
    label: ``value`` itself (``""``), or the items of a tuple, list or dict of tensors, or of
    such containers (``"[0]"``, ``"['h']"``, ``"[1][0]"``); none for any other value.

    Example:
        >>> held_tensors((h, c))
        [('[0]', h), ('[1]', c)]
    """
    if isinstance(value, Tensor):
        return [("", value)]
    if depth == MAX_DEPTH or not isinstance(value, list | tuple | dict) or not value:
        return []
    items = [(f"[{key_label(key, i)}]", item) for i, (key, item) in enumerate(value.items())] \
        if isinstance(value, dict) else [(f"[{i}]", item) for i, item in enumerate(value)]
    held = []
    for where, item in items:
        inner = held_tensors(item, depth + 1)
        if not inner:
            return []
        held += [(where + rest, t) for rest, t in inner]
    return held


def nested(value: Any, depth: int = 0) -> Iterator[Any]:
    """``value`` and, for a tuple, list or dict, what it holds (keys and items), depth first,
    ``MAX_DEPTH`` levels down.

    Example:
        >>> list(nested((1, [2])))
        [(1, [2]), 1, [2], 2]
    """
    yield value
    if depth < MAX_DEPTH and isinstance(value, list | tuple | dict):
        for item in ([x for pair in value.items() for x in pair] if isinstance(value, dict)
                     else value):
            yield from nested(item, depth + 1)


def key_label(key: Any, i: int) -> str:
    """How a dict key shows in labels: its repr when short and one line (a tensor key, as in
    ``{param: optimizer}``, by its position instead)."""
    text = repr(key)
    return text if len(text) <= 40 and "\n" not in text and not isinstance(key, Tensor) \
        else f"<key {i}>"


# what a container read whole may be: its keys or items are watched (a set's in the order it
# gives them, an ``array.array``'s by value, a dict view's as its dict's)
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
WATCHED = (list, tuple, dict, set, frozenset, deque, array.array, MappingProxyType, ChainMap,
           UserDict, UserList, *_VIEWS)
WATCHED_ITEMS = 1 << 16  # a container's items (nested ones counted) watched whole, at most


class Contents:
    """What a dict, list or tuple (or another of :data:`WATCHED`) read whole holds
    (``len(cfg)``, ``'x' in cfg``, ``cfg[k]``, ``c = cfg``, ``helper(cfg)``), and what the
    containers in it hold, ``MAX_DEPTH`` levels
    down (and the attributes of the user's objects in them, as a dict): :meth:`holds` tells,
    by identity of keys and items, whether it still does.
    ``complete`` is False where there were more than :data:`WATCHED_ITEMS` items, or
    containers nested deeper.

    Example:
        >>> seen = Contents(cfg)
        >>> cfg["new"] = 1
        >>> seen.holds()
        False
    """

    __slots__ = ("root", "parts", "complete")

    def __init__(self, root: Any) -> None:
        self.root = root
        # (container, its keys (None for a list or tuple), its items, where: "['a'][0]")
        self.parts: list[tuple[Any, tuple | None, tuple, str]] = []
        self.complete = self._walk(root, "", 0, WATCHED_ITEMS, set()) >= 0

    def _walk(self, value: Any, where: str, depth: int, left: int, seen: set[int]) -> int:
        if isinstance(value, _VIEWS):  # (``D.values()``: what its dict holds)
            value = value.mapping
        elif isinstance(value, ChainMap):  # (what its maps hold)
            value, where = value.maps, f"{where}.maps"
        elif isinstance(value, UserDict | UserList):  # (what its dict or list holds, and
            value, where = vars(value), f"{where}.__dict__"  # which: ``.data`` rebound)
        elif plain_object(value) and not isinstance(value, (Module, *WATCHED)):  # (L[0].s)
            value, where = vars(value), f"{where}.__dict__"
        if not isinstance(value, WATCHED) or left < 0 or id(value) in seen:
            return left  # (one it holds again, or itself: watched already)
        if depth > MAX_DEPTH:
            return -1
        seen.add(id(value))
        keys = tuple(value) if isinstance(value, dict | MappingProxyType) else None
        items = tuple(value.values()) if keys is not None else tuple(value)
        if len(items) > left:
            return -1
        self.parts.append((value, keys, items, where))
        left -= len(items)
        for i, item in enumerate(items):
            left = self._walk(item, f"{where}[{_place(keys, i)}]", depth + 1, left, seen)
        if plain_object(value):  # (a dict subclass of the user's: its attributes too)
            left = self._walk(vars(value), f"{where}.__dict__", depth, left, seen)
        return left

    def holds(self) -> bool:
        """Whether each container still holds the same keys, in order, and items: by
        identity, or for a number or string rebound to an equal one, by value (then the new
        ones are kept: the next call compares identities again)."""
        for n, (c, keys, items, where) in enumerate(self.parts):
            if len(c) != len(items):
                return False
            same_items = all(map(is_, c, items) if keys is None else map(is_, c.values(), items))
            same_keys = keys is None or all(map(is_, c, keys))
            if not (same_items and same_keys):
                now = (tuple(c) if keys is not None else None,
                       tuple(c.values()) if keys is not None else tuple(c))
                if not (_equal(keys, now[0]) and _equal(items, now[1])):
                    return False
                self.parts[n] = (c, *now, where)
        return True

    def entries(self, label: str) -> Iterator[tuple[str, Any]]:
        """The layout's entries, ``label`` naming the root: each container's length and each
        item (:func:`value_key`), as ``len(cfg['a'])`` and ``cfg['a'][0]``."""
        for _, keys, items, where in self.parts:
            yield f"len({label}{where})", ("length", len(items))
            if keys is not None:  # (their order: what iterating it gives first)
                yield f"keys of {label}{where}", ("order", tuple(map(value_key, keys)))
            for i, item in enumerate(items):
                yield f"{label}{where}[{_place(keys, i)}]", value_key(item)


def _equal(seen: tuple | None, now: tuple | None) -> bool:
    """Whether ``now`` holds what ``seen`` held: each the same object, or an equal number
    or string (:func:`value_key`)."""
    if seen is None or now is None:
        return seen is now
    return len(seen) == len(now) and all(
        a is b or type(a) is type(b) and isinstance(a, int | float | str | bytes | complex) and
        value_key(a) == value_key(b) for a, b in zip(seen, now))


def _place(keys: tuple | None, i: int) -> str:
    return str(i) if keys is None else key_label(keys[i], i)


def known_keys(links: tuple, roots: dict[str, dict], stored: set[str]) -> tuple:
    """``links`` with each key a global or closure name holds (``cfg[K]``) made an item
    read of its value (the name is watched as a binding), or a whole read from there where
    the name is assigned by the function or holds no plain key; a function passed to
    (``("passed", ...)``) resolved the same way."""
    out = []
    for kind, key in links:
        if kind == "passed":  # (the function called: watched as a binding)
            fn = roots[key[0]].get(key[1], MISSING) if key[1] not in stored else MISSING
            key = (fn, key[2])
        if kind == "key":
            value = roots[key[0]].get(key[1], MISSING) if key[1] not in stored else MISSING
            if not is_plain(value):
                return (*out, WHOLE)
            kind, key = "item", value
        out.append((kind, key))
    return tuple(out)
