"""A :class:`Node`: one operation of an :class:`~ember.fx.Graph`, as in ``torch.fx.Node``."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ember.errors import ArgumentError

if TYPE_CHECKING:
    from ember.fx.graph import Graph

__all__ = ["Node", "has_side_effect", "map_arg", "map_aggregate"]

#: the kinds of node, as in torch.fx
OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied to every leaf of ``a``, through tuples, lists, dicts and slices."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(x, fn) for x in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped  # a namedtuple
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """``fn`` applied to every :class:`Node` in ``a`` (other leaves kept).

    Example:
        >>> map_arg((1, [2]), lambda n: n)
        (1, [2])
    """
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """One operation: ``op`` (one of placeholder, get_attr, call_function, call_method,
    call_module, output), its ``target``, ``args`` and ``kwargs`` (which may hold other nodes),
    and the nodes that use it (``users``). ``meta`` holds what passes attach (``ShapeProp``'s
    ``tensor_meta``).

    Example:
        >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.ReLU()))
        >>> [(n.op, n.target) for n in gm.graph.nodes]
        [('placeholder', 'input'), ('call_module', '0'), ('output', 'output')]
        >>> relu = list(gm.graph.nodes)[1]
        >>> relu.args, list(relu.users)
        ((input_1,), [output])
    """

    def __init__(self, graph: Graph, name: str, op: str, target: Any, args: tuple,
                 kwargs: dict, type_expr: Any = None) -> None:
        if op not in OPCODES:
            raise ArgumentError(f"Node: op must be one of {OPCODES}, got {op!r}")
        if not (callable(target) if op == "call_function" else isinstance(target, str)):
            wanted = "a callable" if op == "call_function" else "a str (a name)"
            raise ArgumentError(f"Node {name}: the target of a {op} node must be {wanted}, "
                                f"got {target!r} of type {type(target).__name__}. Hint: "
                                "call_function takes the function; call_method, call_module "
                                "and get_attr the method's, submodule's or attribute's name")
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.type = type_expr
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._prev = self._next = self  # the graph's doubly linked list
        self._erased = False
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- arguments -------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._update_args_kwargs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._update_args_kwargs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes among ``args`` and ``kwargs``, each once, in order."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, args: tuple, kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        self._input_nodes = {}
        map_arg((args, kwargs), self._input_nodes.setdefault)
        for new in self._input_nodes:
            new.users.setdefault(self)

    def insert_arg(self, idx: int, arg: Any) -> None:
        """Inserts ``arg`` into ``args`` before position ``idx`` (``idx == len(args)``
        appends)."""
        if not 0 <= idx <= len(self._args):
            raise ArgumentError(f"insert_arg: index {idx} is out of range for node {self}, "
                                f"which has {len(self._args)} arguments")
        self.args = (*self._args[:idx], arg, *self._args[idx:])

    def update_arg(self, idx: int, arg: Any) -> None:
        """Sets ``args[idx]``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Any) -> None:
        """Sets ``kwargs[key]``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Makes every user of this node (for which ``delete_user_cb`` answers True) use
        ``replace_with`` instead; returns those users. ``propagate_meta`` copies this node's
        ``meta`` to ``replace_with``, which must have none."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError(f"replace_all_uses_with: propagate_meta=True, but "
                                   f"{replace_with} already has meta keys "
                                   f"{sorted(replace_with.meta)}")
            replace_with.meta = dict(self.meta)
        changed = [user for user in self.users if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Uses ``new_input`` wherever this node's arguments hold ``old_input``."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def normalized_arguments(self, root: Any, arg_types: tuple | None = None,
                             kwarg_types: dict | None = None,
                             normalize_to_only_use_kwargs: bool = False) -> Any:
        """This call's arguments matched to its target's signature, defaults filled in, as
        an ``ArgsKwargsPair(args, kwargs)`` (only keywords with
        ``normalize_to_only_use_kwargs``); None for other ops, a method call, or a target
        without such a signature (see ``ember.fx.operator_schemas``). ``root`` holds the
        submodule of a ``call_module`` node.

        Example:
            >>> gm = ember.fx.symbolic_trace(lambda x: ember.nn.functional.relu(x))
            >>> [n.normalized_arguments(gm) for n in gm.graph.nodes][1]
            ArgsKwargsPair(args=(x,), kwargs={'inplace': False})
        """
        from ember.fx.operator_schemas import normalize_function, normalize_module

        if self.op == "call_function":
            return normalize_function(self.target, self.args, self.kwargs, arg_types,
                                      kwarg_types, normalize_to_only_use_kwargs)
        if self.op == "call_module":
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs)
        return None

    @property
    def stack_trace(self) -> str | None:
        """The user's source line(s) that made this node, where a pass recorded them
        (``meta["stack_trace"]``); None by default, as symbolic tracing records none."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # -- place in the graph ----------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Moves ``x`` just before this node (a node of the same graph; itself: no effect).

        Example:
            >>> g = ember.fx.symbolic_trace(lambda x: (x + 1, x * 2)).graph
            >>> x, add, mul, out = g.nodes
            >>> add.prepend(mul); [n.name for n in g.nodes]
            ['x', 'mul', 'add', 'output']
        """
        if x is self:
            return
        if x.graph is not self.graph:
            raise RuntimeError(f"Node.prepend/append: node {x.name} belongs to another graph. "
                               "Hint: copy it into this one with graph.node_copy(node)")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Moves ``x`` just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node although nothing uses it:
        placeholders, outputs, in-place methods (``add_``), calls passing ``inplace=True``,
        calls to random functions, ``operator.setitem`` (``x[i] = v``) and to functions
        marked with :func:`has_side_effect`."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op not in ("call_method", "call_function"):
            return False
        name = self.target if self.op == "call_method" else getattr(self.target, "__name__", "")
        in_place = name.endswith("_") and not name.endswith("__")
        return in_place or self._passes_inplace_true() or name in _RANDOM or \
            self.target is operator.setitem or \
            self.op == "call_function" and id(self.target) in _SIDE_EFFECTFUL

    def _passes_inplace_true(self) -> bool:
        """Whether the call passes ``inplace=True`` (by keyword, or by position to a
        function whose signature names it)."""
        if self.kwargs.get("inplace") is True:
            return True
        params = parameters_of(self.target) if self.op == "call_function" else None
        names = [p.name for p in params or ()][:len(self.args)]
        return "inplace" in names and self.args[names.index("inplace")] is True

    def format_node(self) -> str:
        """One line: ``%name : [num_users=k] = op[target=...](args = ..., kwargs = ...)``,
        or ``return ...`` for the output."""
        if self.op == "output":
            return f"return {self.args[0]}"
        if self.op == "placeholder":
            default = f"(default={self.args[0]!r})" if self.args else ""
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]{default}")
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target="
                f"{_target_str(self.target)}](args = {_fmt(self.args)}, kwargs = "
                f"{_fmt(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


def parameters_of(fn: Callable) -> list[inspect.Parameter] | None:
    """``fn``'s parameters, or None where it has no signature Python can read."""
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


#: the functions :func:`has_side_effect` marked, by id (a target may be unhashable)
_SIDE_EFFECTFUL: dict[int, Callable] = {}


def has_side_effect(fn: Callable) -> Callable:
    """Marks ``fn`` as having a side effect: dead-code elimination keeps its calls although
    nothing uses their results. Returns ``fn``, so it works as a decorator.

    Example:
        >>> log = []
        >>> @ember.fx.has_side_effect
        ... def record(x):
        ...     log.append(x)
        >>> g = ember.fx.Graph()
        >>> x = g.placeholder("x")
        >>> _ = g.call_function(record, (x,))
        >>> _ = g.output(x)
        >>> g.eliminate_dead_code()
        False
    """
    _SIDE_EFFECTFUL[id(fn)] = fn
    return fn


_RANDOM = {"dropout", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
           "bernoulli", "multinomial", "normal", "poisson", "randperm", "alpha_dropout",
           "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "rrelu"}


def _target_str(target: Any) -> str:
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or ""
    module = "operator" if module == "_operator" else module  # (as torch.fx prints it)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    return f"{module}.{name}" if module and module != "builtins" else name


def _fmt(a: Any) -> str:
    return repr(map_arg(a, lambda n: _Ref(n.name)))


class _Ref(str):
    def __repr__(self) -> str:
        return f"%{self}"
