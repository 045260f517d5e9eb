"""Key paths of :mod:`ember.utils._pytree`: the entries that say where a leaf sits in a tree
(:class:`SequenceKey`, :class:`MappingKey`, :class:`GetAttrKey`), :func:`keystr` to print a
path and :func:`key_get` to follow one, as in ``torch.utils._pytree``.

Example:
    >>> key_get({"a": [1, 2]}, (MappingKey("a"), SequenceKey(1)))
    2
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A key path entry: item ``idx`` of a sequence (printed ``[0]``)."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A key path entry: item ``key`` of a mapping (printed ``['key']``)."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A key path entry: attribute ``name`` (a named tuple's field; printed ``.name``)."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


def keystr(kp: tuple) -> str:
    """A key path as Python indexing text.

    Example:
        >>> keystr((MappingKey("a"), SequenceKey(0)))
        "['a'][0]"
    """
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: tuple) -> Any:
    """The part of ``obj`` at key path ``kp`` (as :func:`tree_flatten_with_path` gives).

    Example:
        >>> key_get([{"w": 5}], (SequenceKey(0), MappingKey("w")))
        5
    """
    for key in kp:
        obj = key.get(obj)
    return obj
