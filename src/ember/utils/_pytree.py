"""Pytrees: nested tuples, lists, dicts (and named tuples, ordered and default dicts, deques,
``ember.Size`` and registered types) with tensors and other values at the leaves, as the
function transforms take and return them.

``tree_flatten`` gives the leaves in a fixed order and a :class:`TreeSpec` that
``tree_unflatten`` rebuilds the same structure from; dict keys keep insertion order (as
``torch.utils._pytree`` does).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError


class TreeSpec:
    """The structure of a pytree without its leaves.

    ``kind`` is None for a leaf, else the container type; ``context`` holds dict keys;
    ``children`` the specs of the items.
    """

    __slots__ = ("kind", "context", "children", "num_leaves", "_hash")

    def __init__(self, kind: type | None, context: Any, children: tuple) -> None:
        self.kind, self.context, self.children = kind, context, children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)
        self._hash: int | None = None  # (a compiled function's cache key hashes it per call)

    def is_leaf(self) -> bool:
        return self.kind is None

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, TreeSpec) and self.kind is other.kind
                                 and self.context == other.context
                                 and self.children == other.children)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.kind, self.context, self.children))
        return self._hash

    def __reduce__(self) -> tuple:
        return TreeSpec, (self.kind, self.context, self.children)  # (the hash is per process)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        keys = _keys(self.kind, self.context)
        if keys is not None:
            inner = ", ".join(f"{k}: {c!r}" for k, c in zip(keys, self.children))
            return ("{" + inner + "}" if self.kind is dict
                    else f"{self.kind.__name__}({{{inner}}})")
        return f"{self.kind.__name__}({inner})"


LEAF = TreeSpec(None, None, ())

Flatten = Callable[[Any], tuple[Any, Any]]
Unflatten = Callable[[list, Any], Any]
_NODES: dict[type, tuple[Flatten, Unflatten]] = {}
_KEYED: set[type] = set()          # kinds whose context is their keys, for paths and reprs


def register_pytree_node(kind: type, flatten_fn: Flatten, unflatten_fn: Unflatten) -> None:
    """Makes instances of ``kind`` pytree nodes: ``flatten_fn(x)`` gives ``(children,
    context)`` and ``unflatten_fn(children, context)`` rebuilds ``x``. Unregistered types are
    leaves (subclasses too, as in ``torch.utils._pytree``).

    Example:
        >>> @dataclasses.dataclass
        ... class Pair:
        ...     a: Any
        ...     b: Any
        >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda c, _: Pair(*c))
        >>> tree_flatten(Pair(1, [2, 3]))[0]
        [1, 2, 3]
    """
    if kind in _NODES:
        raise ArgumentError(f"register_pytree_node: {kind.__name__} is already a pytree node")
    _NODES[kind] = (flatten_fn, unflatten_fn)


def _keyed(kind: type, rebuild: Callable[[list, Any], Any]) -> None:
    """Registers a mapping type; its context is its keys (after any extra context)."""
    _NODES[kind] = (lambda d: (list(d.values()), tuple(d)), rebuild)
    _KEYED.add(kind)


def _register_builtins() -> None:
    from ember.size import Size

    _NODES[tuple] = (lambda t: (t, None), lambda c, _: tuple(c))
    _NODES[list] = (lambda t: (t, None), lambda c, _: list(c))
    _NODES[Size] = (lambda t: (tuple(t), None), lambda c, _: Size(c))
    _NODES[deque] = (lambda d: (list(d), d.maxlen), lambda c, n: deque(c, maxlen=n))
    _keyed(dict, lambda c, keys: dict(zip(keys, c)))
    _keyed(OrderedDict, lambda c, keys: OrderedDict(zip(keys, c)))
    _NODES[defaultdict] = (lambda d: (list(d.values()), (d.default_factory, tuple(d))),
                           lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)))


_register_builtins()


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node(tree: Any) -> tuple[Any, Any] | None:
    """``(children, context)`` when ``tree`` is a node, None for a leaf."""
    entry = _NODES.get(type(tree))
    if entry is not None:
        return entry[0](tree)
    if _is_namedtuple(tree):
        return tuple(tree), None
    return None


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
    node = _node(tree)
    if node is None:
        leaves.append(tree)
        return LEAF
    children, context = node
    return TreeSpec(type(tree), context, tuple(_flatten(x, leaves) for x in children))


def tree_paths(tree: Any) -> list[str]:
    """Where each leaf of ``tree`` sits, as an index path (``"[0]['w']"``; ``""`` for a tree
    that is one leaf), in :func:`tree_flatten`'s order.

    Example:
        >>> tree_paths({"w": 1, "b": (2, 3)})
        ["['w']", "['b'][0]", "['b'][1]"]
    """
    node = _node(tree)
    if node is None:
        return [""]
    children, context = node
    keys = _keys(type(tree), context) or [f"{i}" for i in range(len(children))]
    return [f"[{k}]{path}" for k, x in zip(keys, children) for path in tree_paths(x)]


def _keys(kind: type, context: Any) -> list[str] | None:
    """The printed keys of a mapping node, None for a sequence-like one."""
    if kind in _KEYED:
        return [repr(k) for k in context]
    if kind is defaultdict:
        return [repr(k) for k in context[1]]
    return None


def tree_unflatten(leaves: Any, spec: TreeSpec) -> Any:
    """Rebuilds the structure ``spec`` with ``leaves`` (in :func:`tree_flatten`'s order).

    Example:
        >>> leaves, spec = tree_flatten((1, [2, 3]))
        >>> tree_unflatten([4, 5, 6], spec)
        (4, [5, 6])
    """
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ArgumentError(f"tree_unflatten: {len(leaves)} leaves given for a structure with "
                            f"{spec.num_leaves}: {spec!r}")
    return _unflatten(iter(leaves), spec)


def _unflatten(it: Any, spec: TreeSpec) -> Any:
    kind = spec.kind
    if kind is None:
        return next(it)
    items = [_unflatten(it, c) for c in spec.children]
    entry = _NODES.get(kind)
    return kind(*items) if entry is None else entry[1](items, spec.context)  # or a named tuple


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
            raise ArgumentError(f"tree_map: structures differ: {spec!r} and {r_spec!r}")
        others.append(r_leaves)
    return tree_unflatten([fn(*xs) for xs in zip(leaves, *others)], spec)
