""":class:`Interpreter` runs a :class:`~ember.fx.GraphModule` node by node (override a method
to change what one kind of node does); :class:`Transformer` does the same on proxies, making a
new GraphModule."""

from __future__ import annotations

from typing import Any

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_arg
from ember.fx.proxy import Proxy
from ember.fx.tracer import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module.graph``: :meth:`run_node` dispatches each node to the method named after
    its ``op`` (``placeholder``, ``call_function``, …), with its arguments' values.

    Example:
        >>> class NegRelu(ember.fx.Interpreter):
        ...     def call_function(self, target, args, kwargs):
        ...         out = super().call_function(target, args, kwargs)
        ...         return -out if target is ember.relu else out
        >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x))
        >>> NegRelu(gm).run(ember.tensor([1.0, -1.0]))
        tensor([-1., -0.])
    """

    def __init__(self, module: GraphModule, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module, self.graph = module, graph if graph is not None else module.graph
        self.garbage_collect_values = garbage_collect_values
        self.env: dict[Node, Any] = {}
        self.submodules = dict(module.named_modules())  # (path -> submodule, as torch's)
        # node -> the values whose last use it is (dropped from env after it runs)
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        seen: set[Node] = set()
        for node in reversed(self.graph.nodes):
            for used in node.all_input_nodes:
                if used not in seen:
                    seen.add(used)
                    self.user_to_last_uses.setdefault(node, []).append(used)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        """The graph's output for the inputs ``args`` (the nodes in ``initial_env`` take the
        values given there; with ``enable_io_processing`` the inputs and output go through
        the graph's ``process_inputs`` / ``process_outputs``, as a custom
        :class:`~ember.fx.CodeGen`'s ``forward`` takes and gives them)."""
        self.env = dict(initial_env or {})
        self.args_iter = iter(self.graph.process_inputs(*args) if enable_io_processing else args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:  # (the node in the traceback, as torch.fx's message)
                e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for used in self.user_to_last_uses.get(node, ()):
                    del self.env[used]
            if node.op == "output":
                out = self.env[node]
                return self.graph.process_outputs(out) if enable_io_processing else out
        return None

    def boxed_run(self, args_list: list) -> Any:
        """:meth:`run` on the values of ``args_list``, which is emptied first (so the caller
        holds no references to the inputs while the graph runs)."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n: Node) -> Any:
        """The value of ``n``: its ``op``'s method called on its arguments' values."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("**"):  # (run takes no keyword arguments)
            return {}
        if target.startswith("*"):
            return tuple(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Interpreter.run: expected a positional argument for the "
                               f"parameter {target!r} of the graph") from None

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        """The module's attribute at the dotted path ``target``."""
        obj = self.module
        for i, part in enumerate(target.split(".")):
            if not hasattr(obj, part):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, part)
        return obj

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """``n``'s arguments with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        def value(node: Node) -> Any:
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[node]
        return map_arg(args, value)


class Transformer(Interpreter):
    """An :class:`Interpreter` whose values are proxies of a new graph: :meth:`transform`
    returns that graph's GraphModule. Override ``call_function`` & co. to rewrite nodes.

    Example:
        >>> class ReluToGelu(ember.fx.Transformer):
        ...     def call_function(self, target, args, kwargs):
        ...         if target is ember.relu:
        ...             target = ember.nn.functional.gelu
        ...         return super().call_function(target, args, kwargs)
        >>> gm = ReluToGelu(ember.fx.symbolic_trace(lambda x: ember.relu(x))).transform()
        >>> print(gm.code)
        def forward(self, x):
            gelu = ember.gelu(x);  x = None
            return gelu
        <BLANKLINE>
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = Tracer()
        self.tracer.begin(module, self.new_graph)

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = args[0] if args else _NO_DEFAULT
        node = (self.new_graph.placeholder(target) if default is _NO_DEFAULT
                else self.new_graph.placeholder(target, default_value=default))
        return Proxy(node, self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The GraphModule of the rewritten graph."""
        result = super().run(enable_io_processing=False)
        self.new_graph._codegen = self.graph._codegen
        self.new_graph.output(self.tracer.create_arg(result))
        return GraphModule(self.module, self.new_graph)


_NO_DEFAULT = object()
