"""The values a compiled function reaches: constants a trace reads (:func:`is_plain`), and
containers of tensors (:func:`held_tensors`, :func:`nested`), at most ``MAX_DEPTH`` levels
down."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

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
