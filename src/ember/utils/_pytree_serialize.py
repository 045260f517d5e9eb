"""A :class:`~ember.utils._pytree.TreeSpec` as text: :func:`treespec_dumps` and
:func:`treespec_loads` write and read ``torch.utils._pytree``'s JSON (protocol 1, so specs of
built-in containers cross between the two libraries), :func:`treespec_pprint` shows a spec
as its tree with ``*`` at the leaves.

A registered node type is serialized under the ``serialized_type_name`` it was registered
with (its context as JSON, or through ``to_dumpable_context``/``from_dumpable_context``); a
named tuple needs :func:`_register_namedtuple` first, as in PyTorch.

Example:
    >>> from ember.utils._pytree import tree_structure
    >>> spec = tree_structure({"a": [1, (2, 3)]})
    >>> treespec_loads(treespec_dumps(spec)) == spec
    True
    >>> treespec_pprint(spec)
    "{'a': [*, (*, *)]}"
"""

from __future__ import annotations

import importlib
import json
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError

_PROTOCOL = 1
_NAMEDTUPLE = "collections.namedtuple"  # (PyTorch's type name of every named tuple)
# kind -> (serialized type name, context to JSON-able, JSON-able to context)
_BY_KIND: dict[type, tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = {}
_BY_NAME: dict[str, type] = {}
_NAMED: dict[type, str] = {}  # named tuple class -> its registered name, and back
_NAMED_BY_NAME: dict[str, type] = {}


def _as_tuples(value: Any) -> Any:
    """JSON's lists back as tuples (Ember's contexts are hashable)."""
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list) else value


def _to_json(context: Any) -> str:
    try:
        return json.dumps(context)
    except TypeError as err:
        raise TypeError("treespec_dumps: unable to serialize context. Hint: make the context "
                        "JSON-serializable, or register the type with to_dumpable_context and "
                        "from_dumpable_context") from err


def _from_json(text: Any) -> Any:
    return _as_tuples(json.loads(text))


def record_serialization(kind: type, name: str | None, to_context: Callable | None = None,
                         from_context: Callable | None = None) -> None:
    """Lets specs holding ``kind`` be written under ``name`` (register_pytree_node's
    ``serialized_type_name``); nothing without a name."""
    if name is None:
        return
    _BY_KIND[kind] = (name, to_context or _to_json, from_context or _from_json)
    _BY_NAME[name] = kind


def _register_namedtuple(cls: type, *, serialized_type_name: str) -> None:
    """Names the named tuple class ``cls`` for :func:`treespec_dumps` (named tuples are
    nodes already; PyTorch needs this name to serialize them).

    Example:
        >>> import collections
        >>> from ember.utils._pytree import tree_structure
        >>> Point = collections.namedtuple("Point", "x y")
        >>> _register_namedtuple(Point, serialized_type_name="demo.Point")
        >>> treespec_loads(treespec_dumps(tree_structure(Point(1, 2)))).type is Point
        True
    """
    _NAMED[cls], _NAMED_BY_NAME[serialized_type_name] = serialized_type_name, cls


def _defaultdict_to(context: tuple) -> dict:
    factory, keys = context
    return {"default_factory_module": factory.__module__,
            "default_factory_name": factory.__qualname__, "dict_context": list(keys)}


def _defaultdict_from(context: dict) -> tuple:
    factory = getattr(importlib.import_module(context["default_factory_module"]),
                      context["default_factory_name"])
    return factory, tuple(context["dict_context"])


def _register_builtins() -> None:
    from ember.size import Size

    for kind, name in ((tuple, "builtins.tuple"), (list, "builtins.list"),
                       (dict, "builtins.dict"), (OrderedDict, "collections.OrderedDict"),
                       (deque, "collections.deque"), (Size, "torch.Size")):
        record_serialization(kind, name)
    record_serialization(defaultdict, "collections.defaultdict", _defaultdict_to,
                         _defaultdict_from)


_register_builtins()


def _check_spec(spec: Any, op: str) -> None:
    from ember.utils._pytree import TreeSpec

    if not isinstance(spec, TreeSpec):
        raise ArgumentTypeError(f"{op}: expected a TreeSpec, got {type(spec).__name__}. Hint: "
                                "take one from tree_flatten or tree_structure")


def _spec_to_json(spec: Any) -> dict:
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    kind = spec.type
    if kind in _BY_KIND:
        name, to_context, _ = _BY_KIND[kind]
        context = to_context(spec.context)
    elif kind in _NAMED:
        name, context = _NAMEDTUPLE, _NAMED[kind]
    elif isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        raise NotImplementedError(f"treespec_dumps: can't serialize a TreeSpec of the named "
                                  f"tuple class {kind.__name__}: it has no serialized type "
                                  "name. Hint: register one with _register_namedtuple(cls, "
                                  "serialized_type_name=...)")
    else:
        raise NotImplementedError(f"treespec_dumps: no serialized type name registered for "
                                  f"{kind.__name__}. Hint: pass serialized_type_name to "
                                  "register_pytree_node")
    return {"type": name, "context": context,
            "children_spec": [_spec_to_json(c) for c in spec.children()]}


def treespec_dumps(treespec: Any, protocol: int | None = None) -> str:
    """``treespec`` as JSON text (PyTorch's format; ``protocol`` 1, the only one).

    Example:
        >>> from ember.utils._pytree import tree_structure
        >>> treespec_dumps(tree_structure((1,)))[:34]
        '[1, {"type": "builtins.tuple", "co'
    """
    _check_spec(treespec, "treespec_dumps")
    protocol = _PROTOCOL if protocol is None else protocol
    if protocol != _PROTOCOL:
        raise ArgumentError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return json.dumps((protocol, _spec_to_json(treespec)))


def _json_to_spec(schema: dict) -> Any:
    from ember.utils._pytree import LEAF, TreeSpec

    name = schema["type"]
    if name is None and schema["context"] is None and not schema["children_spec"]:
        return LEAF
    children = tuple(_json_to_spec(c) for c in schema["children_spec"])
    if name == _NAMEDTUPLE:
        if schema["context"] not in _NAMED_BY_NAME:
            raise NotImplementedError(f"treespec_loads: no named tuple class is registered as "
                                      f"{schema['context']!r}. Hint: _register_namedtuple it "
                                      "before loading")
        return TreeSpec(_NAMED_BY_NAME[schema["context"]], None, children)
    if name not in _BY_NAME:
        raise NotImplementedError(f"treespec_loads: the type {name!r} is not registered for "
                                  "deserializing. Hint: register_pytree_node it with "
                                  "serialized_type_name")
    kind = _BY_NAME[name]
    return TreeSpec(kind, _BY_KIND[kind][2](schema["context"]), children)


def treespec_loads(serialized: str) -> Any:
    """The :class:`~ember.utils._pytree.TreeSpec` that :func:`treespec_dumps` wrote (or
    PyTorch's ``treespec_dumps``, for types registered here under the same names).

    Example:
        >>> treespec_loads('[1, {"type": null, "context": null, "children_spec": []}]')
        *
    """
    protocol, schema = json.loads(serialized)
    if protocol != _PROTOCOL:
        raise ArgumentError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return _json_to_spec(schema)


class _Star:
    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: Any) -> str:
    """``treespec`` shown as its tree, ``*`` at each leaf.

    Example:
        >>> from ember.utils._pytree import tree_structure
        >>> treespec_pprint(tree_structure([1, {"b": 2}]))
        "[*, {'b': *}]"
    """
    from ember.utils._pytree import tree_unflatten

    _check_spec(treespec, "treespec_pprint")
    return repr(tree_unflatten([_Star()] * treespec.num_leaves, treespec))
