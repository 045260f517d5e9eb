"""Pytrees: nested tuples, lists, dicts (and named tuples) with tensors and other values at
the leaves, as the function transforms take and return them.

``tree_flatten`` gives the leaves in a fixed order and a :class:`TreeSpec` that
``tree_unflatten`` rebuilds the same structure from; dict keys keep insertion order (as
``torch.utils._pytree`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class TreeSpec:
    """The structure of a pytree without its leaves.

    ``kind`` is None for a leaf, else the container type; ``context`` holds dict keys;
    ``children`` the specs of the items.
    """

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind: type | None, context: Any, children: tuple) -> None:
        self.kind, self.context, self.children = kind, context, children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def is_leaf(self) -> bool:
        return self.kind is None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and self.kind is other.kind
                and self.context == other.context and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.context, self.children))

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        return f"{self.kind.__name__}({inner})"


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (depth first) and its structure.

    Example:
        >>> leaves, spec = tree_flatten({"w": 1, "b": (2, 3)})
        >>> leaves
        [1, 2, 3]
    """
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list) -> TreeSpec:
    kind = type(tree)
    if kind is tuple or kind is list or _is_namedtuple(tree):
        return TreeSpec(kind, None, tuple(_flatten(x, leaves) for x in tree))
    if isinstance(tree, dict):
        keys = tuple(tree)
        return TreeSpec(dict, keys, tuple(_flatten(tree[k], leaves) for k in keys))
    leaves.append(tree)
    return LEAF


def tree_paths(tree: Any) -> list[str]:
    """Where each leaf of ``tree`` sits, as an index path (``"[0]['w']"``; ``""`` for a tree
    that is one leaf), in :func:`tree_flatten`'s order.

    Example:
        >>> tree_paths({"w": 1, "b": (2, 3)})
        ["['w']", "['b'][0]", "['b'][1]"]
    """
    if type(tree) is tuple or type(tree) is list or _is_namedtuple(tree):
        return [f"[{i}]{path}" for i, x in enumerate(tree) for path in tree_paths(x)]
    if isinstance(tree, dict):
        return [f"[{k!r}]{path}" for k, x in tree.items() for path in tree_paths(x)]
    return [""]


def tree_unflatten(leaves: Any, spec: TreeSpec) -> Any:
    """Rebuilds the structure ``spec`` with ``leaves`` (in :func:`tree_flatten`'s order).

    Example:
        >>> leaves, spec = tree_flatten((1, [2, 3]))
        >>> tree_unflatten([4, 5, 6], spec)
        (4, [5, 6])
    """
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: {len(leaves)} leaves given for a structure with "
                         f"{spec.num_leaves}: {spec!r}")
    return _unflatten(iter(leaves), spec)


def _unflatten(it: Any, spec: TreeSpec) -> Any:
    kind = spec.kind
    if kind is None:
        return next(it)
    items = [_unflatten(it, c) for c in spec.children]
    if kind is dict:
        return dict(zip(spec.context, items))
    if kind is list:
        return items
    if kind is tuple:
        return tuple(items)
    return kind(*items)  # a named tuple


def tree_map(fn: Callable, tree: Any, *rest: Any) -> Any:
    """``tree`` with ``fn(leaf, *matching leaves of rest)`` at each leaf.

    Example:
        >>> tree_map(lambda x: x * 2, {"a": 1, "b": [2]})
        {'a': 2, 'b': [4]}
    """
    leaves, spec = tree_flatten(tree)
    others = []
    for r in rest:
        r_leaves, r_spec = tree_flatten(r)
        if r_spec != spec:
            raise ValueError(f"tree_map: structures differ: {spec!r} and {r_spec!r}")
        others.append(r_leaves)
    return tree_unflatten([fn(*xs) for xs in zip(leaves, *others)], spec)
