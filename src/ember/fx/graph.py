"""A :class:`Graph`: the nodes of one traced ``forward`` in order, as ``torch.fx.Graph``."""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ember.errors import ArgumentError
from ember.fx.codegen import CodeGen, Namespace, PythonCode, python_code, snake_case
from ember.fx.node import Node, _target_str, map_arg
from ember.nn import Module
from ember.tensor import Tensor

__all__ = ["Graph"]


class _NodeList:
    """The graph's nodes, iterable (forwards or with ``reversed``) while nodes are erased."""

    def __init__(self, root: Node, forward: bool = True) -> None:
        self._root, self._forward = root, forward

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __iter__(self) -> Iterator[Node]:
        step = "_next" if self._forward else "_prev"
        node = getattr(self._root, step)
        while node is not self._root:
            following = getattr(node, step)
            if not node._erased:
                yield node
            node = following

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._root, not self._forward))


class Graph:
    """A list of :class:`~ember.fx.Node`: placeholders (the inputs), operations, one output.

    Build one by tracing (:func:`~ember.fx.symbolic_trace`) or by hand with
    :meth:`placeholder`, :meth:`call_function`, … and :meth:`output`.

    Example:
        >>> g = ember.fx.Graph()
        >>> x = g.placeholder("x")
        >>> g.output(g.call_function(ember.relu, (x,)))
        output
        >>> print(g.python_code("self").src)
        def forward(self, x):
            relu = ember.relu(x);  x = None
            return relu
        <BLANKLINE>
    """

    def __init__(self, owning_module: Any = None) -> None:
        # the list's sentinel, op 'root' and name '' (``first.prev``, ``last.next``), as torch.fx's
        self._root = root = Node.__new__(Node)
        root.graph, root.name, root.op, root.target, root.type = self, "", "root", "", None
        root.users, root.meta, root._input_nodes, root._args, root._kwargs = {}, {}, {}, (), {}
        root._prev = root._next = root
        root._erased = False
        self._insert: Callable[[Node], None] = self._root.prepend
        self._namespace = Namespace()
        self.owning_module = owning_module
        self._tracing = False  # (a Tracer records into it: its get_attr nodes may come first)
        self._codegen = CodeGen()

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self._root)

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list[Node]:
        """The nodes of kind ``op`` (and, unless None, of ``target``), in graph order
        (``sort`` is accepted for torch's signature; they always are).

        Example:
            >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x) + 1)
            >>> gm.graph.find_nodes(op="call_function", target=ember.relu)
            [relu]
        """
        return [n for n in self.nodes
                if n.op == op and (target is None or n.target == target)]

    def output_node(self) -> Node:
        """The graph's ``output`` node (the last node).

        Example:
            >>> ember.fx.symbolic_trace(lambda x: x + 1).graph.output_node().args
            (add,)
        """
        last = self._root._prev
        if last is self._root or last.op != "output":
            raise RuntimeError("output_node: the graph does not end in an output node. "
                               "Hint: add one with graph.output(value)")
        return last

    # -- making nodes ------------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """A new node, inserted at the current insertion point (the end by default)."""
        candidate = name or snake_case(_candidate_name(op, target))
        node = Node(self, self._namespace.create_name(candidate), op, target,
                    tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(node)
        return node

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph; with ``default_value``, an optional one."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Reads the owning module's attribute ``qualified_name`` (``"layer.weight"``); warns,
        as torch.fx, when the owning module has no submodule or tensor of that name (never
        while a Tracer records into this graph: it may register the attribute afterwards)."""
        if self.owning_module is not None and not self._tracing \
                and not _holds_attr(self.owning_module, qualified_name):
            warnings.warn(f"Graph.get_attr: the owning GraphModule has no submodule or tensor "
                          f"{qualified_name!r}. Hint: add it with gm.add_submodule, "
                          "register_parameter or register_buffer", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Calls the submodule ``module_name`` of the owning module."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Calls ``args[0].method_name(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None,
                      name: str | None = None) -> Node:
        """Calls ``the_function(*args, **kwargs)``; the node is named ``name`` if given."""
        return self.create_node("call_function", the_function, args, kwargs, name, type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        """The graph's result: a node, or tuples/lists/dicts of them."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda n: n) -> Node:
        """A copy of ``node`` (of any graph) in this one, its node arguments mapped through
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g: Graph, val_map: dict[Node, Any],
                   return_output_node: bool = False) -> Any:
        """Copies the nodes of ``g`` (but its output) into this graph, recording old -> new in
        ``val_map`` (pre-filled entries, placeholders for instance, are used as given);
        returns the value ``g`` outputs, in this graph's nodes (with ``return_output_node``,
        the pair of it and ``g``'s output node).

        Example:
            >>> g = ember.fx.Graph()
            >>> g.graph_copy(ember.fx.symbolic_trace(lambda x: x + 1).graph, {},
            ...              return_output_node=True)
            (add, output)
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                value = map_arg(node.args[0], lambda n: val_map[n])
                return (value, node) if return_output_node else value
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    # -- where new nodes go ------------------------------------------------------------------
    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None) -> Iterator[None]:
        """New nodes go just before ``n`` (the start of the graph if None)."""
        target = n if n is not None else self._root._next
        previous, self._insert = self._insert, target.prepend
        try:
            yield
        finally:
            self._insert = previous

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None) -> Iterator[None]:
        """New nodes go just after ``n`` (the end of the graph if None), in creation order."""
        anchor = [n if n is not None else self._root._prev]

        def insert(node: Node) -> None:
            anchor[0].append(node)
            anchor[0] = node

        previous, self._insert = self._insert, insert
        try:
            yield
        finally:
            self._insert = previous

    # -- removing ----------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Removes a node that nothing uses any more (warns, as torch, if it already went)."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: "
                               f"{list(to_erase.users)}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"erase_node: node {to_erase} is not in this graph")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._update_args_kwargs((), {})
        to_erase._remove_from_list()
        to_erase._erased = True  # (its name stays taken, as torch.fx's: relu, then relu_1)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None
                            ) -> bool:
        """Erases the nodes whose values nothing uses but those ``is_impure_node`` keeps
        (default :meth:`Node.is_impure`: in-place and random calls); returns whether any
        went."""
        impure = is_impure_node or Node.is_impure
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # -- checking and showing -----------------------------------------------------------------
    def lint(self) -> None:
        """Checks that every node belongs here, names are unique, arguments come before their
        users and targets exist on the owning module; raises RuntimeError naming the node."""
        seen: set[Node] = set()
        names: set[str] = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"lint: node {node} does not belong to this graph")
            if node.name in names:
                raise RuntimeError(f"lint: node name {node.name!r} is not unique")
            for used in node.all_input_nodes:
                if used not in seen:
                    raise RuntimeError(f"lint: argument {used} of node {node} is used before it "
                                       f"is defined (or is not in the graph)")
            if node.op in ("get_attr", "call_module") and self.owning_module is not None:
                _check_target(self.owning_module, node)
            seen.add(node)
            names.add(node.name)

    def python_code(self, root_module: str = "self") -> PythonCode:
        """The generated ``forward`` source and the globals it needs."""
        if root_module != "self":
            raise ArgumentError("python_code: Ember generates methods of a module; root_module "
                                f"must be 'self', got {root_module!r}")
        return python_code(list(self.nodes), self._codegen)

    def set_codegen(self, codegen: CodeGen) -> None:
        """Writes ``forward`` with ``codegen`` (see :class:`~ember.fx.CodeGen`) from the next
        ``recompile()`` of a GraphModule holding this graph."""
        self._codegen = codegen

    def on_generate_code(self, make_transformer: Callable[[Any], Callable[[list[str]], list[str]]]
                         ) -> contextlib.AbstractContextManager:
        r"""Registers ``make_transformer(previous)``, a function from the generated body's
        statements (unindented, each ending in a newline) to new ones, applied from the next
        ``recompile()``; used in a ``with``, the previous one is restored at its end.

        Example:
            >>> gm = ember.fx.symbolic_trace(lambda x: x + 1)
            >>> with gm.graph.on_generate_code(lambda _: lambda body: ["x = x * 2\n", *body]):
            ...     _ = gm.recompile()
            >>> gm(ember.ones(1))
            tensor([3.])
        """
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)

        @contextlib.contextmanager
        def restoring() -> Iterator[None]:
            try:
                yield
            finally:
                self._codegen._body_transformer = previous

        return restoring()

    def process_inputs(self, *args: Any) -> Any:
        """The placeholders' values for a call's inputs (the code generator's)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, outputs: Any) -> Any:
        """A call's result for the output node's value (the code generator's)."""
        return self._codegen.process_outputs(outputs)

    def print_tabular(self) -> None:
        """Prints one row per node: opcode, name, target, args, kwargs."""
        rows = [("opcode", "name", "target", "args", "kwargs")]
        rows += [(n.op, n.name, _target_str(n.target),
                  str(map_arg(n.args, lambda a: a.name)), str(n.kwargs)) for n in self.nodes]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        print("\n".join(lines))

    def __str__(self) -> str:
        params = ", ".join(n.name for n in self.nodes if n.op == "placeholder")
        return f"graph({params}):\n" + "\n".join("    " + n.format_node() for n in self.nodes)


def _candidate_name(op: str, target: Any) -> str:
    if op == "output":
        return "output"
    if isinstance(target, str):  # (a magic method's name without its underscores, as torch)
        if len(target) > 4 and target.startswith("__") and target.endswith("__"):
            target = target[2:-2]
        return target.replace(".", "_") or "self"
    path = getattr(target, "_qualified_name", None)  # (a custom op: its name, not its function's)
    if isinstance(path, str):
        return path.rpartition(".")[2]
    return getattr(target, "__name__", None) or type(target).__name__


def _check_target(module: Any, node: Node) -> None:
    obj = module
    for part in node.target.split("."):
        if not hasattr(obj, part):
            raise RuntimeError(f"lint: node {node} ({node.op}) names {node.target!r}, which "
                               f"the owning module does not have")
        obj = getattr(obj, part)


def _holds_attr(module: Any, qualified_name: str) -> bool:
    """Whether ``module`` has a submodule or tensor at the dotted path ``qualified_name``."""
    value = module
    for part in qualified_name.split("."):
        value = getattr(value, part, None)
    return isinstance(value, (Module, Tensor))

