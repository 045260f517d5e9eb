"""``register_dataclass`` of :mod:`ember.utils._pytree` (PyTorch's): a dataclass, or a class
built from keyword fields, as a pytree node whose children are its fields."""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.errors import ArgumentError


def register_dataclass(cls: type, *, field_names: list[str] | None = None,
                       drop_field_names: list[str] | None = None,
                       serialized_type_name: str | None = None) -> None:
    """Makes ``cls`` a pytree node whose children are the fields ``field_names`` (default: all
    of a dataclass's ``init`` fields), rebuilt by ``cls(**fields)``. As in PyTorch,
    ``drop_field_names`` only tells which init fields a given ``field_names`` may leave out, a
    field that is None is no child (it comes back None), and a class that is not a dataclass
    must name its fields. ``serialized_type_name`` names the class for ``treespec_dumps``.

    Example:
        >>> from ember.utils._pytree import register_dataclass, tree_leaves
        >>> @dataclasses.dataclass
        ... class Point:
        ...     x: Any
        ...     y: Any = None
        >>> register_dataclass(Point)
        >>> tree_leaves([Point(1, 2), Point(3)])
        [1, 2, 3]
    """
    from ember.utils._pytree import GetAttrKey, register_pytree_node

    names = _field_names(cls, field_names, drop_field_names or [])

    def flatten(obj: Any) -> tuple[list, tuple[tuple, tuple]]:
        present = tuple(n for n in names if getattr(obj, n) is not None)
        return ([getattr(obj, n) for n in present],
                (present, tuple(n for n in names if n not in present)))

    def unflatten(values: list, context: tuple[tuple, tuple]) -> Any:
        present, absent = context
        return cls(**dict(zip(present, values, strict=True)), **dict.fromkeys(absent))

    def flatten_with_keys(obj: Any) -> tuple[list, tuple[tuple, tuple]]:
        values, context = flatten(obj)
        return [(GetAttrKey(n), v) for n, v in zip(context[0], values, strict=True)], context

    register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                         flatten_with_keys_fn=flatten_with_keys)


def _field_names(cls: type, given: list[str] | None, dropped: list[str]) -> list[str]:
    """The fields that are children: ``given`` (checked against a dataclass's init fields
    less ``dropped``) or, for a dataclass, all its init fields (``dropped`` is then unused,
    as in PyTorch)."""
    if not dataclasses.is_dataclass(cls):
        if given is None:
            raise ArgumentError(f"register_dataclass: field_names must be specified with a "
                                f"list of all fields used to initialize {cls.__name__}, as it "
                                "is not a dataclass")
        return list(given)
    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    if given is None:
        return fields
    fields = [name for name in fields if name not in dropped]
    missing, unexpected = set(fields) - set(given), set(given) - set(fields)
    if missing or unexpected:
        raise ArgumentError(f"register_dataclass: field_names does not match the init fields "
                            f"of {cls.__name__}: missing {sorted(missing)}, unexpected "
                            f"{sorted(unexpected)}. Hint: add a field to field_names to keep "
                            "it in the pytree, or to drop_field_names to leave it out")
    return list(given)
