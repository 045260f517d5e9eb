"""Pytrees: nested tuples, lists, dicts (and named tuples, ordered and default dicts, deques,
``ember.Size`` and registered types) with tensors and other values at the leaves, as the
function transforms take and return them.

``tree_flatten`` gives the leaves in a fixed order and a :class:`TreeSpec` that
``tree_unflatten`` rebuilds the same structure from; dict keys keep insertion order (as
``torch.utils._pytree`` does).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterator
from types import UnionType
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError
from ember.utils._pytree_dataclass import register_dataclass  # noqa: F401 - torch's name
from ember.utils._pytree_keys import (  # noqa: F401 - key_get: torch's name
    GetAttrKey,
    MappingKey,
    SequenceKey,
    key_get,
    keystr,
)
from ember.utils._pytree_serialize import (  # noqa: F401 - torch's names
    _register_namedtuple,
    record_serialization,
    treespec_dumps,
    treespec_loads,
    treespec_pprint,
)
from ember.utils._pytree_types import (  # noqa: F401 - torch's names
    is_namedtuple,
    is_namedtuple_class,
    is_namedtuple_instance,
    is_structseq,
    is_structseq_class,
    is_structseq_instance,
)


class TreeSpec:
    """The structure of a pytree without its leaves.

    ``kind`` is None for a leaf, else the container type; ``context`` holds dict keys;
    ``children()`` gives the specs of the items, ``child(i)`` one of them (as PyTorch 2.13).

    Example:
        >>> spec = tree_structure([1, (2, 3)])
        >>> spec.child(1), len(spec.children())
        (tuple(*, *), 2)
    """

    __slots__ = ("kind", "context", "_children", "num_leaves", "_hash")

    def __init__(self, kind: type | None, context: Any, children: tuple) -> None:
        self.kind, self.context, self._children = kind, context, children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)
        self._hash: int | None = None  # (a compiled function's cache key hashes it per call)

    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def type(self) -> type | None:
        """The container type (None for a leaf), under PyTorch's name."""
        return self.kind

    def children(self) -> list[TreeSpec]:
        """The specs of the items (a new list)."""
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        """The spec of item ``index``."""
        return self._children[index]

    @property
    def children_specs(self) -> list[TreeSpec]:
        """The specs of the items: PyTorch's name, deprecated there as here (FutureWarning)."""
        warnings.warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` to "
                      "access a single child, or `treespec.children()` to get all children.",
                      FutureWarning, stacklevel=2)
        return list(self._children)

    @property
    def num_children(self) -> int:
        return len(self._children)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self._children)

    def unflatten(self, leaves: Any) -> Any:
        """:func:`tree_unflatten` with this spec."""
        return tree_unflatten(leaves, self)

    def flatten_up_to(self, tree: Any) -> list:
        """The parts of ``tree`` at this spec's leaves (whole subtrees where ``tree`` goes
        deeper); an error when ``tree`` lacks this structure."""
        out: list = []
        _flatten_up_to(self, tree, out)
        return out

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, TreeSpec) and self.kind is other.kind
                                 and self.context == other.context
                                 and self._children == other._children)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.kind, self.context, self._children))
        return self._hash

    def __reduce__(self) -> tuple:
        return TreeSpec, (self.kind, self.context, self._children)  # (the hash is per process)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self._children)
        keys = _keys(self.kind, self.context)
        if keys is not None:
            inner = ", ".join(f"{k}: {c!r}" for k, c in zip(keys, self._children))
            return ("{" + inner + "}" if self.kind is dict
                    else f"{self.kind.__name__}({{{inner}}})")
        return f"{self.kind.__name__}({inner})"


LEAF = TreeSpec(None, None, ())

IsLeaf = Callable[[Any], bool]
Flatten = Callable[[Any], tuple[Any, Any]]
Unflatten = Callable[[list, Any], Any]
_NODES: dict[type, tuple[Flatten, Unflatten]] = {}
_KEYED: set[type] = set()          # kinds whose context is their keys, for paths and reprs
_SEQUENCES: set[type] = set()      # built-in kinds whose children are keyed by index
_KEY_FNS: dict[type, Callable] = {}  # registered kinds' flatten_with_keys_fn
_DICTS = (dict, OrderedDict, defaultdict)


def register_pytree_node(kind: type, flatten_fn: Flatten, unflatten_fn: Unflatten, *,
                         serialized_type_name: str | None = None,
                         to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Makes instances of ``kind`` pytree nodes: ``flatten_fn(x)`` gives ``(children,
    context)`` and ``unflatten_fn(children, context)`` rebuilds ``x``. Unregistered types are
    leaves (subclasses too, as in ``torch.utils._pytree``). PyTorch's keywords for
    serializing specs and for key paths work as there: ``serialized_type_name`` (with
    ``to_dumpable_context``/``from_dumpable_context``, else the context as JSON) lets
    :func:`treespec_dumps` write specs holding ``kind``; ``flatten_with_keys_fn(x)``
    (``([(key, child), ...], context)``) gives :func:`tree_flatten_with_path` its keys.

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
    record_serialization(kind, serialized_type_name, to_dumpable_context, from_dumpable_context)
    if flatten_with_keys_fn is not None:
        _KEY_FNS[kind] = flatten_with_keys_fn


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
    _SEQUENCES.update((tuple, list, Size, deque))
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


def tree_flatten(tree: Any, is_leaf: IsLeaf | None = None) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (depth first) and its structure; a node for which
    ``is_leaf(node)`` is true is kept whole as one leaf.

    Example:
        >>> leaves, spec = tree_flatten({"w": 1, "b": (2, 3)})
        >>> leaves
        [1, 2, 3]
        >>> tree_flatten([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple))[0]
        [1, (2, 3)]
    """
    leaves: list = []
    if is_leaf is None:
        return leaves, _flatten(tree, leaves)
    return leaves, _flatten_until(tree, leaves, is_leaf)


def _flatten(tree: Any, leaves: list) -> TreeSpec:
    node = _node(tree)
    if node is None:
        leaves.append(tree)
        return LEAF
    children, context = node
    return TreeSpec(type(tree), context, tuple(_flatten(x, leaves) for x in children))


def _flatten_until(tree: Any, leaves: list, is_leaf: IsLeaf) -> TreeSpec:
    node = None if is_leaf(tree) else _node(tree)
    if node is None:
        leaves.append(tree)
        return LEAF
    children, context = node
    return TreeSpec(type(tree), context,
                    tuple(_flatten_until(x, leaves, is_leaf) for x in children))


def tree_leaves(tree: Any, is_leaf: IsLeaf | None = None) -> list:
    """The leaves of ``tree``, in :func:`tree_flatten`'s order.

    Example:
        >>> tree_leaves({"w": 1, "b": (2, [3])})
        [1, 2, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree: Any, is_leaf: IsLeaf | None = None) -> Iterator:
    """An iterator over the leaves of ``tree``, in :func:`tree_flatten`'s order.

    Example:
        >>> list(tree_iter([1, (2, 3)]))
        [1, 2, 3]
    """
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree: Any, is_leaf: IsLeaf | None = None) -> TreeSpec:
    """The :class:`TreeSpec` of ``tree`` (its structure, without the leaves).

    Example:
        >>> tree_structure((1, [2, 3])).num_leaves
        3
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_paths(tree: Any) -> list[str]:
    """Where each leaf of ``tree`` sits, as an index path (``"[0]['w']"``; ``""`` for a tree
    that is one leaf), in :func:`tree_flatten`'s order.

    Example:
        >>> tree_paths({"w": 1, "b": (2, 3)})
        ["['w']", "['b'][0]", "['b'][1]"]
    """
    out: list = []
    _walk_paths(tree, (), out, None, "index")
    return [keystr(path) for path, _ in out]


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
    if not isinstance(spec, TreeSpec):
        raise ArgumentTypeError(f"tree_unflatten: expected a TreeSpec, got "
                                f"{type(spec).__name__}. Hint: tree_unflatten(leaves, spec)")
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ArgumentError(f"tree_unflatten: {len(leaves)} leaves given for a structure with "
                            f"{spec.num_leaves}: {spec!r}")
    return _unflatten(iter(leaves), spec)


def _unflatten(it: Any, spec: TreeSpec) -> Any:
    kind = spec.kind
    if kind is None:
        return next(it)
    items = [_unflatten(it, c) for c in spec._children]
    entry = _NODES.get(kind)
    return kind(*items) if entry is None else entry[1](items, spec.context)  # or a named tuple


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: IsLeaf | None = None) -> Any:
    """``tree`` with ``fn(leaf, *matching parts of rest)`` at each leaf. Each of ``rest`` has
    ``tree``'s structure down to its leaves and may go deeper there: the whole subtree is
    passed (as ``torch.utils._pytree.tree_map`` does); dict keys match in any order, a dict,
    ``OrderedDict`` or ``defaultdict`` matches any of them, and a deque's ``maxlen`` may
    differ (the result takes ``tree``'s).

    Example:
        >>> tree_map(lambda x: x * 2, {"a": 1, "b": [2]})
        {'a': 2, 'b': [4]}
        >>> tree_map(lambda x, y: (x, y), [1, 2], [(1, 2), 3])
        [(1, (1, 2)), (2, 3)]
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rest]
    return tree_unflatten([fn(*xs) for xs in zip(leaves, *others)], spec)


def _flatten_up_to(spec: TreeSpec, tree: Any, out: list) -> None:
    if spec.kind is None:
        out.append(tree)
        return
    node, kind = _node(tree), type(tree)
    dicts = spec.kind in _DICTS and kind in _DICTS  # (these match each other, as in torch)
    if node is None or (kind is not spec.kind and not dicts):
        got = "a leaf" if node is None else kind.__name__
        raise ArgumentError(f"tree_map: node type mismatch: expected {spec.kind.__name__}, "
                            f"got {got} ({tree!r:.60}); the trees must share the structure "
                            f"{spec!r}")
    children, context = node
    if len(children) != len(spec._children):
        raise ArgumentError(f"tree_map: node arity mismatch: expected {len(spec._children)} "
                            f"children of {spec.kind.__name__}, got {len(children)}")
    if dicts:
        mine, theirs = _key_list(spec.kind, spec.context), _key_list(kind, context)
        if set(mine) != set(theirs):
            raise ArgumentError(f"tree_map: node keys mismatch: missing key(s) "
                                f"{set(mine) - set(theirs)}, extra key(s) "
                                f"{set(theirs) - set(mine)}")
        by_key = dict(zip(theirs, children))
        children = [by_key[k] for k in mine]
    elif context != spec.context and kind is not deque:  # (a deque's maxlen may differ)
        raise ArgumentError(f"tree_map: node context mismatch for {spec.kind.__name__}: "
                            f"expected {spec.context!r}, got {context!r}")
    for c, x in zip(spec._children, children):
        _flatten_up_to(c, x, out)


def _key_list(kind: type, context: Any) -> tuple:
    return context[1] if kind is defaultdict else context


def _leaf_filter(types_or_pred: Any) -> Callable[[Any], bool]:
    if isinstance(types_or_pred, (type, tuple, UnionType)):
        return lambda x: isinstance(x, types_or_pred)
    if callable(types_or_pred):
        return types_or_pred
    raise ArgumentError(f"expected a type, a tuple of types or a predicate, got "
                        f"{types_or_pred!r}")


def tree_map_only(types_or_pred: Any, fn: Callable, tree: Any,
                  is_leaf: IsLeaf | None = None) -> Any:
    """``tree`` with ``fn`` applied to the leaves that are instances of ``types_or_pred`` (a
    type, a tuple of them, or a predicate); other leaves stay as they are.

    Example:
        >>> tree_map_only(int, lambda x: x * 10, [1, "a", (2,)])
        [10, 'a', (20,)]
    """
    keep = _leaf_filter(types_or_pred)
    return tree_map(lambda x: fn(x) if keep(x) else x, tree, is_leaf=is_leaf)


def tree_map_(fn: Callable, tree: Any, *rest: Any, is_leaf: IsLeaf | None = None) -> Any:
    """:func:`tree_map` for ``fn``'s side effects (an in-place op at each leaf): ``tree``
    itself is returned, as PyTorch's.

    Example:
        >>> seen = []
        >>> tree_map_(seen.append, [1, (2,)]) == [1, (2,)], seen
        (True, [1, 2])
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    for xs in zip(leaves, *(spec.flatten_up_to(r) for r in rest)):
        fn(*xs)
    return tree


def tree_map_only_(types_or_pred: Any, fn: Callable, tree: Any,
                   is_leaf: IsLeaf | None = None) -> Any:
    """:func:`tree_map_` on the leaves :func:`tree_map_only` would map; returns ``tree``.

    Example:
        >>> tree_map_only_(ember.Tensor, lambda t: t.zero_(), [ember.ones(2), 3])
        [tensor([0., 0.]), 3]
    """
    keep = _leaf_filter(types_or_pred)
    return tree_map_(lambda x: fn(x) if keep(x) else None, tree, is_leaf=is_leaf)


def tree_is_leaf(tree: Any, is_leaf: IsLeaf | None = None) -> bool:
    """Whether ``tree`` is a leaf (``is_leaf`` says so, or it is no pytree node).

    Example:
        >>> tree_is_leaf(1), tree_is_leaf([]), tree_is_leaf((1,), lambda x: True)
        (True, False, True)
    """
    return (is_leaf is not None and bool(is_leaf(tree))) or _node(tree) is None


def tree_any(pred: Callable[[Any], bool], tree: Any, is_leaf: IsLeaf | None = None) -> bool:
    """Whether ``pred`` is true of some leaf of ``tree``.

    Example:
        >>> tree_any(lambda x: x > 2, [1, (2, 3)])
        True
    """
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all(pred: Callable[[Any], bool], tree: Any, is_leaf: IsLeaf | None = None) -> bool:
    """Whether ``pred`` is true of every leaf of ``tree``.

    Example:
        >>> tree_all(lambda x: x > 0, [1, (2, 3)])
        True
    """
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any_only(types_or_pred: Any, pred: Callable[[Any], bool], tree: Any,
                  is_leaf: IsLeaf | None = None) -> bool:
    """Whether ``pred`` is true of some leaf of ``tree`` of the given types.

    Example:
        >>> tree_any_only(str, lambda s: s == "a", [1, "a"])
        True
    """
    keep = _leaf_filter(types_or_pred)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if keep(x))


def tree_all_only(types_or_pred: Any, pred: Callable[[Any], bool], tree: Any,
                  is_leaf: IsLeaf | None = None) -> bool:
    """Whether ``pred`` is true of every leaf of ``tree`` of the given types.

    Example:
        >>> tree_all_only(int, lambda x: x > 0, [1, "a"])
        True
    """
    keep = _leaf_filter(types_or_pred)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if keep(x))


def _keyed_children(tree: Any, node: tuple[Any, Any],
                    keys: str = "torch") -> list[tuple[Any, Any]]:
    """``(key, child)`` pairs of a node. ``keys="torch"``: as PyTorch's key paths (a
    registered kind without ``flatten_with_keys_fn`` is an error); ``"named"``: such a kind
    keyed by index; ``"index"``: all but mappings keyed by index (:func:`tree_paths`)."""
    kind = type(tree)
    children, context = node
    if kind in _KEYED or kind is defaultdict:
        return [(MappingKey(k), c) for k, c in zip(_key_list(kind, context), children)]
    if kind in _KEY_FNS and keys != "index":
        return list(_KEY_FNS[kind](tree)[0])
    if kind in _SEQUENCES or keys == "index" or (keys == "named" and kind in _NODES):
        return [(SequenceKey(i), c) for i, c in enumerate(children)]
    if kind not in _NODES:  # a named tuple
        return [(GetAttrKey(f), c) for f, c in zip(kind._fields, children)]
    raise ArgumentError(f"Did not find a flatten_with_keys_fn for type: {kind}. Hint: pass "
                        "flatten_with_keys_fn to register_pytree_node")


def _walk_paths(tree: Any, path: tuple, out: list, is_leaf: IsLeaf | None,
                keys: str = "torch") -> None:
    node = None if is_leaf is not None and is_leaf(tree) else _node(tree)
    if node is None:
        out.append((path, tree))
        return
    for key, child in _keyed_children(tree, node, keys):
        _walk_paths(child, (*path, key), out, is_leaf, keys)


def _leaves_with_path_where(tree: Any, keep: Callable[[Any], bool]) -> list[tuple[tuple, Any]]:
    """The ``(key path, leaf)`` pairs of the leaves for which ``keep(leaf)``: a walk that
    builds no :class:`TreeSpec` and makes keys only for those leaves (registered kinds without
    ``flatten_with_keys_fn`` are keyed by index), cheap where few leaves are kept.

    Example:
        >>> _leaves_with_path_where({"a": 1, "b": ["x", 2]}, lambda x: isinstance(x, int))
        [((MappingKey(key='a'),), 1), ((MappingKey(key='b'), SequenceKey(idx=1)), 2)]
    """
    found: list = []
    _find([tree], keep, (), found)
    return [(_key_path(tree, at[1:]), leaf) for at, leaf in found]


def _find(children: Any, keep: Callable[[Any], bool], at: tuple, found: list) -> None:
    for i, child in enumerate(children):
        if type(child) in _NODES or (isinstance(child, tuple) and hasattr(child, "_fields")):
            _find(_node(child)[0], keep, (*at, i), found)
        elif keep(child):
            found.append(((*at, i), child))


def _key_path(tree: Any, at: tuple) -> tuple:
    """The key path of the leaf at child indices ``at``."""
    path = []
    for i in at:
        key, tree = _keyed_children(tree, _node(tree), "named")[i]
        path.append(key)
    return tuple(path)


def tree_flatten_with_path(tree: Any, is_leaf: IsLeaf | None = None) -> tuple[list, TreeSpec]:
    """As :func:`tree_flatten`, each leaf paired with its key path (a tuple of
    :class:`SequenceKey`, :class:`MappingKey` and :class:`GetAttrKey`).

    Example:
        >>> pairs, spec = tree_flatten_with_path({"w": [1, 2]})
        >>> [(keystr(path), leaf) for path, leaf in pairs]
        [("['w'][0]", 1), ("['w'][1]", 2)]
    """
    out: list = []
    _walk_paths(tree, (), out, is_leaf)
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf: IsLeaf | None = None) -> list:
    """The ``(key path, leaf)`` pairs of :func:`tree_flatten_with_path`.

    Example:
        >>> tree_leaves_with_path([7])
        [((SequenceKey(idx=0),), 7)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(fn: Callable, tree: Any, *rest: Any,
                       is_leaf: IsLeaf | None = None) -> Any:
    """As :func:`tree_map`, ``fn`` taking each leaf's key path first.

    Example:
        >>> tree_map_with_path(lambda kp, x: keystr(kp), [1, {"a": 2}])
        ['[0]', {'a': "[1]['a']"}]
    """
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rest]
    return tree_unflatten([fn(path, x, *xs) for (path, x), *xs in zip(pairs, *others)], spec)
