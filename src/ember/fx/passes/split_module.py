""":func:`split_module`: cut a GraphModule into submodules ``submod_<p>`` by a callback that
gives each node its partition, as ``torch.fx.passes.split_module`` does."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_arg
from ember.nn import Module

__all__ = ["split_module"]


class _Partition:
    """One partition: its nodes' new graph, the names of the values it takes and gives (in
    the order their first cross-partition use was seen) and the partitions it waits on."""

    def __init__(self, name: str) -> None:
        self.name, self.submod_name = name, f"submod_{name}"
        self.graph = Graph()
        self.inputs: dict[str, None] = {}
        self.outputs: dict[str, None] = {}
        self.dependencies: dict[str, None] = {}
        self.dependents: dict[str, None] = {}
        self.env: dict[Node, Node] = {}
        self.targets: dict[str, Any] = {}


def _attr(m: Module, qualname: str) -> Any:
    obj = m
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"split_module: the node target {qualname} is not an "
                                 f"attribute of {type(m).__name__} (no {part!r})")
        obj = getattr(obj, part)
    return obj


def split_module(m: GraphModule, root_m: Module | None, split_callback: Callable[[Node], Any],
                 qualname_map: dict[str, str] | None = None, keep_original_order: bool = False,
                 keep_original_node_name: bool = False, keep_original_input_name: bool = True,
                 partition_affix: str | None = None, tuple_return: bool = False) -> GraphModule:
    """A GraphModule calling one submodule ``submod_<p>`` per partition ``p`` that
    ``split_callback(node)`` gives the graph's call and output-feeding nodes (placeholders and
    ``get_attr`` stay in the outer graph and are passed in). Partitions run in dependency
    order (``keep_original_order``: in the order they first appear); a partition giving
    several values returns a tuple the outer graph indexes. ``qualname_map`` is filled with
    ``submod_<p>.<target>`` -> the original target. ``root_m`` is unused, as in torch.

    Example:
        >>> gm = ember.fx.symbolic_trace(lambda x: (x + 1).relu() * 2)
        >>> parts = split_module(gm, None, lambda n: 0 if n.name == "add" else 1)
        >>> [n.target for n in parts.graph.nodes if n.op == "call_module"]
        ['submod_0', 'submod_1']
    """
    partitions: dict[str, _Partition] = {}
    part_of: dict[Node, str] = {}
    by_name = {n.name: n for n in m.graph.nodes}

    def record_use(defined: Node, user: Node | None) -> None:
        src, dst = part_of.get(defined), part_of.get(user) if user is not None else None
        if src == dst:
            return
        if src is not None:
            partitions[src].outputs.setdefault(defined.name)
            if dst is not None:
                partitions[src].dependents.setdefault(dst)
        if dst is not None:
            partitions[dst].inputs.setdefault(defined.name)
            if src is not None:
                partitions[dst].dependencies.setdefault(src)

    for node in m.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            map_arg(node.args[0], lambda n: record_use(n, None))
            continue
        name = str(split_callback(node))
        if partition_affix is not None:
            name = f"{partition_affix}_{name}"
        partitions.setdefault(name, _Partition(name))
        part_of[node] = name
        map_arg((node.args, node.kwargs), lambda n, user=node: record_use(n, user))

    order = _dependency_order(partitions)
    for part in partitions.values():
        _add_inputs(m, part, by_name, keep_original_input_name)
    for node, name in part_of.items():
        _copy_node(m, partitions[name], node, qualname_map, keep_original_node_name)

    base, env, attrs = Graph(), {}, {}
    outer = [n for n in m.graph.nodes if n.op in ("placeholder", "get_attr")]
    if not keep_original_order:
        for node in outer:
            env[node.name] = _outer_node(m, base, node, attrs, keep_original_node_name)
    for name in (list(partitions) if keep_original_order else order):
        part = partitions[name]
        values = tuple(part.env[by_name[o]] for o in part.outputs)
        part.graph.output(values[0] if len(values) == 1 and not tuple_return else values)
        if keep_original_order:  # the placeholders first, then the attributes it reads
            for node in outer:
                if node.name not in env and (node.op == "placeholder" or node.name in part.inputs):
                    env[node.name] = _outer_node(m, base, node, attrs, keep_original_node_name)
        attrs[part.submod_name] = GraphModule(part.targets, part.graph)
        call = base.call_module(part.submod_name, tuple(env[i] for i in part.inputs))
        if len(part.outputs) > 1 or (part.outputs and tuple_return):
            for i, out in enumerate(part.outputs):
                env[out] = base.call_function(operator.getitem, (call, i))
        elif part.outputs:
            env[next(iter(part.outputs))] = call
    def outer_value(n: Node) -> Node:  # (an output may read an input no partition reads)
        if n.name not in env:
            env[n.name] = _outer_node(m, base, n, attrs, keep_original_node_name)
        return env[n.name]

    base.output(map_arg(m.graph.output_node().args[0], outer_value))
    result = GraphModule(attrs, base)
    result.meta["partition_names"] = {p.submod_name for p in partitions.values()}
    return result


def _dependency_order(partitions: dict[str, _Partition]) -> list[str]:
    """The partitions, each after those it reads (a stack of the ready ones, as torch's)."""
    waiting = {name: dict(p.dependencies) for name, p in partitions.items()}
    ready = [name for name, deps in waiting.items() if not deps]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for dependent in partitions[name].dependents:
            waiting[dependent].pop(name)
            if not waiting[dependent]:
                ready.append(dependent)
    if len(order) != len(partitions):
        raise RuntimeError("split_module: cycle exists between partitions! (a partition reads "
                           "a value of another that reads one of its own). Hint: give the "
                           "nodes partitions that increase along the graph")
    return order


def _add_inputs(m: GraphModule, part: _Partition, by_name: dict[str, Node],
                keep_name: bool) -> None:
    """Placeholders for the values the partition reads (a submodule read by get_attr is
    referenced as an attribute of the partition instead), values before modules."""
    modules = [i for i in part.inputs if by_name[i].op == "get_attr"
               and isinstance(_attr(m, by_name[i].target), Module)]
    values = [i for i in part.inputs if i not in modules]
    for count, name in enumerate(values):
        node = by_name[name]
        new = part.graph.placeholder(name if keep_name else f"arg_{count}", type_expr=node.type)
        new.meta = dict(node.meta)
        part.env[node] = new
    for name in modules:
        node = by_name[name]
        part.targets[node.target] = _attr(m, node.target)
        part.env[node] = part.graph.get_attr(node.target)
        part.env[node].meta = dict(node.meta)
    part.inputs = dict.fromkeys(values)


def _copy_node(m: GraphModule, part: _Partition, node: Node, qualname_map: dict | None,
               keep_name: bool) -> None:
    target = node.target
    if node.op in ("call_module", "get_attr"):
        target = node.target.replace(".", "_")
        part.targets[target] = _attr(m, node.target)
        if qualname_map is not None:
            qualname_map[f"{part.submod_name}.{target}"] = node.target
    args, kwargs = map_arg((node.args, node.kwargs), part.env.__getitem__)
    new = part.graph.create_node(node.op, target, args, kwargs,
                                 name=node.name if keep_name else None, type_expr=node.type)
    new.meta = dict(node.meta)
    part.env[node] = new


def _outer_node(m: GraphModule, base: Graph, node: Node, attrs: dict[str, Any],
                keep_name: bool) -> Node:
    """``node`` (a placeholder or get_attr of ``m``) again in the outer graph."""
    if node.op == "get_attr":
        attrs[node.target] = _attr(m, node.target)
        new = base.get_attr(node.target)
    else:
        default = node.args[0] if node.args else inspect.Signature.empty
        if keep_name:
            new = base.create_node("placeholder", node.name, () if default is
                                   inspect.Signature.empty else (default,), type_expr=node.type)
        else:
            new = base.placeholder(node.target, type_expr=node.type, default_value=default)
    new.meta = dict(node.meta)
    return new
