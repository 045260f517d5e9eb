""":func:`replace_pattern`: find every copy of one traced subgraph in a GraphModule and put
another in its place, as ``torch.fx.replace_pattern`` does."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

from ember.errors import ArgumentError
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, parameters_of
from ember.nn import Module
from ember.tensor import Tensor

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced match: the node that produced the pattern's output (``anchor``) and, for
    each node of the pattern, the node of the module it matched."""

    anchor: Node
    nodes_map: dict[Node, Node]


def replace_pattern(gm: GraphModule, pattern: Callable | Module,
                    replacement: Callable | Module) -> list[Match]:
    """Replaces each non-overlapping match of ``pattern`` in ``gm`` by ``replacement`` (both
    are traced with :func:`~ember.fx.symbolic_trace`; their parameters are matched in order)
    and recompiles ``gm``. A match's inner values must be used only inside it.

    Example:
        >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x) + 1)
        >>> matches = ember.fx.replace_pattern(gm, lambda x: ember.relu(x),
        ...                                    lambda x: ember.nn.functional.gelu(x))
        >>> len(matches), "gelu" in gm.code
        (1, True)
    """
    from ember.fx.tracer import symbolic_trace

    pattern_graph = symbolic_trace(pattern).graph
    replacement_graph = symbolic_trace(replacement).graph
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ArgumentError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs but the "
                            f"replacement {len(r_inputs)}")
    p_output = next(n for n in pattern_graph.nodes if n.op == "output").args[0]
    if not isinstance(p_output, Node):
        raise ArgumentError("replace_pattern: the pattern must return a single value")
    graph = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for anchor in list(graph.nodes):
        nodes_map = _match(p_output, anchor, {})
        if nodes_map is None or taken & _inner(nodes_map) or not _self_contained(nodes_map,
                                                                                 p_output):
            continue
        taken |= _inner(nodes_map)
        matches.append(Match(anchor, nodes_map))
    replaced: dict[Node, Node] = {}  # an earlier match's output -> its replacement's
    for match in matches:
        replaced[match.anchor] = _replace(graph, match, p_inputs, r_inputs, replacement_graph,
                                          replaced)
    gm.recompile()
    return matches


def _inner(nodes_map: dict[Node, Node]) -> set[Node]:
    return {n for p, n in nodes_map.items() if p.op != "placeholder"}


def _match(p: Node, n: Any, nodes_map: dict[Node, Node]) -> dict[Node, Node] | None:
    """``nodes_map`` extended so the pattern node ``p`` matches the module value ``n``."""
    if p in nodes_map:
        return nodes_map if nodes_map[p] is n else None
    if n in nodes_map.values():  # (each pattern node its own node, as torch's matcher)
        return None
    if p.op == "placeholder":
        return {**nodes_map, p: n} if isinstance(n, Node) else None
    if not isinstance(n, Node) or (p.op, p.target) != (n.op, n.target):
        return None
    (p_args, p_kwargs), (n_args, n_kwargs) = _arguments(p), _arguments(n)
    if len(p_args) != len(n_args) or p_kwargs.keys() != n_kwargs.keys():
        return None
    nodes_map = {**nodes_map, p: n}
    for pa, na in zip((*p_args, *p_kwargs.values()), (*n_args, *n_kwargs.values())):
        nodes_map = _match_arg(pa, na, nodes_map)
        if nodes_map is None:
            return None
    return nodes_map


def _arguments(node: Node) -> tuple[tuple, dict]:
    """A call's arguments, by parameter name with the defaults filled in where its function
    (or Tensor method) has a signature Python can read, so ``softmax(x, -1)`` matches
    ``softmax(x, dim=-1)``; else as recorded."""
    fn = node.target if node.op == "call_function" else \
        getattr(Tensor, node.target, None) if node.op == "call_method" else None
    params = parameters_of(fn) if callable(fn) else None
    if params is None:
        return node.args, node.kwargs
    try:
        bound = inspect.Signature(params).bind(*node.args, **node.kwargs)
    except TypeError:
        return node.args, node.kwargs
    bound.apply_defaults()
    args: tuple = ()
    kwargs: dict = {}
    # (``*args`` and ``**kwargs`` spread, so they match value by value; a ``**kwargs`` key
    # kept apart from a positional-only parameter of the same name)
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            args = tuple(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            kwargs.update({("**", key): v for key, v in value.items()})
        else:
            kwargs[name] = value
    return args, kwargs


def _match_arg(pa: Any, na: Any, nodes_map: dict[Node, Node]) -> dict[Node, Node] | None:
    if isinstance(pa, Node):
        return _match(pa, na, nodes_map)
    if isinstance(pa, (tuple, list)):
        if type(pa) is not type(na) or len(pa) != len(na):
            return None
        for x, y in zip(pa, na):
            nodes_map = _match_arg(x, y, nodes_map)
            if nodes_map is None:
                return None
        return nodes_map
    return nodes_map if type(pa) is type(na) and pa == na else None


def _self_contained(nodes_map: dict[Node, Node], p_output: Node) -> bool:
    """Whether the match's inner values (all but its output) are used only inside it."""
    inner = _inner(nodes_map)
    return all(set(n.users) <= inner for p, n in nodes_map.items()
               if p.op != "placeholder" and p is not p_output)


def _replace(graph: Graph, match: Match, p_inputs: list[Node], r_inputs: list[Node],
             replacement: Graph, replaced: dict[Node, Node]) -> Node:
    """Puts ``replacement`` in the place of ``match`` (whose inputs may be outputs of earlier
    matches, now ``replaced``); returns the replacement's output node."""
    env: dict[Node, Any] = {r: replaced.get(match.nodes_map[p], match.nodes_map[p])
                            for p, r in zip(p_inputs, r_inputs)}
    with graph.inserting_before(match.anchor):
        result = graph.graph_copy(replacement, env)
    if not isinstance(result, Node):
        raise ArgumentError("replace_pattern: the replacement must return a single value")
    match.anchor.replace_all_uses_with(result)
    inner = _inner(match.nodes_map)
    for node in reversed(graph.nodes):
        if node in inner and not node.users:
            graph.erase_node(node)
    return result
