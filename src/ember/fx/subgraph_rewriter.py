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

__all__ = ["InternalMatch", "Match", "ReplacedPatterns", "replace_pattern",
           "replace_pattern_with_filters"]


class Match(NamedTuple):
    """One replaced match: the first pattern output that nothing else in the pattern uses
    (``anchor``, a key of ``nodes_map``, as torch.fx's) and, for each node of the pattern, the
    node of the module it matched (``nodes_map[anchor]`` is the matched output)."""

    anchor: Node
    nodes_map: dict[Node, Node]


class ReplacedPatterns(NamedTuple):
    """A :class:`Match` and the nodes the replacement put in its place."""

    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


class InternalMatch(NamedTuple):
    """A match before it is replaced, as the ``match_filters`` and ``replacement_callback``
    of :func:`replace_pattern_with_filters` see it: the pattern's output nodes that nothing
    else in the pattern uses (``anchors``, as torch.fx's), the module's nodes that produce the
    pattern's outputs (``returning_nodes``) and take its inputs (``placeholder_nodes``), and
    ``nodes_map`` (pattern node -> module node)."""

    anchors: list[Node]
    nodes_map: dict[Node, Node]
    placeholder_nodes: list[Node]
    returning_nodes: list[Node]


Pattern = Callable | Module | Graph


def replace_pattern(gm: GraphModule, pattern: Pattern, replacement: Pattern) -> list[Match]:
    """Replaces each non-overlapping match of ``pattern`` in ``gm`` by ``replacement`` (both
    are traced with :func:`~ember.fx.symbolic_trace`, or given as a Graph; their parameters
    are matched in order) and recompiles ``gm``. A match's inner values must be used only
    inside it; a pattern returning a tuple matches each of its values (the replacement
    returns as many).

    Example:
        >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x) + 1)
        >>> matches = ember.fx.replace_pattern(gm, lambda x: ember.relu(x),
        ...                                    lambda x: ember.nn.functional.gelu(x))
        >>> len(matches), "gelu" in gm.code
        (1, True)
    """
    return [Match(r.anchor, r.nodes_map) for r in _rewrite(gm, pattern, replacement)]


def replace_pattern_with_filters(
        gm: GraphModule, pattern: Pattern, replacement: Pattern | None = None,
        match_filters: list[Callable[[InternalMatch, Graph, Graph], bool]] | None = None,
        ignore_literals: bool = False,
        replacement_callback: Callable[[InternalMatch, Graph, Graph], Pattern] | None = None,
) -> list[ReplacedPatterns]:
    """:func:`replace_pattern` keeping only the matches every ``match_filters`` function
    accepts (called with the match, ``gm.graph`` and the pattern's graph); with
    ``ignore_literals`` a number or string in the pattern matches any; a
    ``replacement_callback`` gives the replacement per match (instead of ``replacement``).

    Example:
        >>> gm = ember.fx.symbolic_trace(lambda x: (x + 1) * (x + 2))
        >>> done = ember.fx.replace_pattern_with_filters(
        ...     gm, lambda x: x + 1, lambda x: x - 1, ignore_literals=True)
        >>> len(done), gm(ember.tensor(3.0)).item()
        (2, 4.0)
    """
    if (replacement is None) == (replacement_callback is None):
        raise ArgumentError("replace_pattern_with_filters: give one of replacement and "
                            "replacement_callback")
    return _rewrite(gm, pattern, replacement, match_filters or [], ignore_literals,
                    replacement_callback)


def _graph_of(fn: Pattern) -> Graph:
    from ember.fx.tracer import symbolic_trace

    if isinstance(fn, Graph):
        return fn
    return fn.graph if isinstance(fn, GraphModule) else symbolic_trace(fn).graph


def _outputs(graph: Graph, what: str) -> list[Node]:
    """The nodes ``graph`` returns (a pattern's computed ones, a replacement's any)."""
    out = next(n for n in graph.nodes if n.op == "output").args[0]
    outs = [out] if isinstance(out, Node) else list(out) if isinstance(out, (tuple, list)) \
        else []
    if not outs or not all(isinstance(n, Node) and (n.op != "placeholder" or what != "pattern")
                           for n in outs):
        raise ArgumentError(f"replace_pattern: the {what} must return a value it computes or "
                            f"a tuple of them, got {out!r}")
    return outs


def _rewrite(gm: GraphModule, pattern: Pattern, replacement: Pattern | None,
             filters: list[Callable] = (), ignore_literals: bool = False,
             callback: Callable | None = None) -> list[ReplacedPatterns]:
    pattern_graph = _graph_of(pattern)
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    p_outputs = _outputs(pattern_graph, "pattern")
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    p_anchors = [n for n in p_outputs if len(n.users) == 1] or p_outputs[:1]
    matches: list[InternalMatch] = []
    taken: set[Node] = set()
    for anchor in list(graph.nodes):
        nodes_map = _match_outputs(p_outputs, anchor, graph, ignore_literals)
        if nodes_map is None or taken & _inner(nodes_map) or not _self_contained(nodes_map,
                                                                                 p_outputs):
            continue
        returning = [nodes_map[p] for p in p_outputs]
        match = InternalMatch(p_anchors, nodes_map, [nodes_map[p] for p in p_inputs], returning)
        if all(f(match, graph, pattern_graph) for f in filters):
            taken |= _inner(nodes_map)
            matches.append(match)
    done: list[ReplacedPatterns] = []
    replaced: dict[Node, Node] = {}  # an earlier match's output -> its replacement's
    r_graph = None if callback else _graph_of(replacement)
    for match in matches:
        if callback:
            r_graph = _graph_of(callback(match, graph, pattern_graph))
        done.append(_replace(graph, match, p_inputs, r_graph, replaced, order))
    gm.recompile()
    return done


def _match_outputs(p_outputs: list[Node], anchor: Node, graph: Graph,
                   ignore_literals: bool) -> dict[Node, Node] | None:
    """The match of every pattern output whose first one is ``anchor``; each further one is
    the first node of the graph that matches it consistently."""
    nodes_map = _match(p_outputs[0], anchor, {}, ignore_literals)
    for p in p_outputs[1:]:
        if nodes_map is None or p in nodes_map:
            continue
        nodes_map = next((m for n in graph.nodes
                          if (m := _match(p, n, nodes_map, ignore_literals)) is not None), None)
    return nodes_map


def _inner(nodes_map: dict[Node, Node]) -> set[Node]:
    return {n for p, n in nodes_map.items() if p.op != "placeholder"}


def _match(p: Node, n: Any, nodes_map: dict[Node, Node],
           ignore_literals: bool) -> dict[Node, Node] | None:
    """``nodes_map`` extended so the pattern node ``p`` matches the module value ``n``."""
    if p in nodes_map:
        seen = nodes_map[p]
        same = seen is n or not isinstance(n, Node) and not isinstance(seen, Node) and \
            type(seen) is type(n) and seen == n
        return nodes_map if same else None
    if isinstance(n, Node) and any(v is n for v in nodes_map.values()):
        return None  # (each pattern node its own node, as torch's matcher)
    if p.op == "placeholder":  # (an input of the pattern takes a literal too, as torch's)
        return {**nodes_map, p: n}
    if not isinstance(n, Node) or (p.op, p.target) != (n.op, n.target):
        return None
    (p_args, p_kwargs), (n_args, n_kwargs) = _arguments(p), _arguments(n)
    if len(p_args) != len(n_args) or p_kwargs.keys() != n_kwargs.keys():
        return None
    nodes_map = {**nodes_map, p: n}
    for pa, na in zip((*p_args, *p_kwargs.values()), (*n_args, *n_kwargs.values())):
        nodes_map = _match_arg(pa, na, nodes_map, ignore_literals)
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


def _match_arg(pa: Any, na: Any, nodes_map: dict[Node, Node],
               ignore_literals: bool) -> dict[Node, Node] | None:
    if isinstance(pa, Node):
        return _match(pa, na, nodes_map, ignore_literals)
    if isinstance(pa, (tuple, list)):
        if type(pa) is not type(na) or len(pa) != len(na):
            return None
        for x, y in zip(pa, na):
            nodes_map = _match_arg(x, y, nodes_map, ignore_literals)
            if nodes_map is None:
                return None
        return nodes_map
    if ignore_literals and isinstance(pa, _LITERALS):  # (a wildcard, even for a node: torch's)
        return nodes_map
    return nodes_map if type(pa) is type(na) and pa == na else None


_LITERALS = (bool, int, float, complex, str)


def _self_contained(nodes_map: dict[Node, Node], p_outputs: list[Node]) -> bool:
    """Whether the match's inner values (all but its outputs) are used only inside it."""
    inner = _inner(nodes_map)
    return all(set(n.users) <= inner for p, n in nodes_map.items()
               if p.op != "placeholder" and p not in p_outputs)


def _replace(graph: Graph, match: InternalMatch, p_inputs: list[Node], replacement: Graph,
             replaced: dict[Node, Node], order: dict[Node, int]) -> ReplacedPatterns:
    """Puts ``replacement`` in the place of ``match`` (whose inputs may be outputs of earlier
    matches, now ``replaced``), before its first output, or, where an input comes after
    that, before the first node outside the match that uses an output (or the output node)."""
    r_inputs = [n for n in replacement.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ArgumentError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs but the "
                            f"replacement {len(r_inputs)}")
    outs = match.returning_nodes
    r_outputs = _outputs(replacement, "replacement")
    if len(r_outputs) != len(outs):
        raise ArgumentError(f"replace_pattern: the pattern returns {len(outs)} values but the "
                            f"replacement {len(r_outputs)}")
    env: dict[Node, Any] = {r: replaced.get(n, n) for n, r in zip(match.placeholder_nodes,
                                                                 r_inputs)}
    inner = _inner(match.nodes_map)
    where = min(outs, key=order.__getitem__)
    if any(order.get(n, -1) > order[where] for n in match.placeholder_nodes):
        # (no such user: the outputs are dead, so the output node is a place after all inputs)
        where = next(n for n in graph.nodes if n.op == "output" or
                     n not in inner and any(n in o.users for o in outs))
    before = set(graph.nodes)
    with graph.inserting_before(where):
        results = graph.graph_copy(replacement, env)
    results = [results] if isinstance(results, Node) else list(results)
    for out, result in zip(outs, results):
        out.replace_all_uses_with(result)
        replaced[out] = result
    for node in reversed(graph.nodes):
        if node in inner and not node.users:
            graph.erase_node(node)
    return ReplacedPatterns(match.anchors[0], match.nodes_map,
                            [n for n in graph.nodes if n not in before])
