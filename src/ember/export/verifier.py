"""``ExportedProgram.validate()``: checks that a program's graph and signature still agree, as
torch's verifier does (``torch._export.verifier``), so that a pass that edited the graph finds
out before running or saving it."""

from __future__ import annotations

import operator
from typing import Any

from ember.export.graph_signature import ConstantArgument, InputKind, OutputKind
from ember.export.prims import FUNCTIONS, PrimitiveOp
from ember.nn import Parameter

__all__ = ["SpecViolationError", "verify"]


class SpecViolationError(Exception):
    """An exported program whose graph breaks its rules or disagrees with its signature (the
    name and base class of torch's)."""


def verify(ep: Any) -> None:
    """Raises :class:`SpecViolationError` naming the first disagreement of ``ep``'s graph with
    the rules of an exported graph or with its signature and state."""
    nodes = list(ep.graph.nodes)
    for node in nodes:
        if node.op not in ("placeholder", "call_function", "output"):
            raise SpecViolationError(f"{node.op} is not valid in an exported graph (node "
                                     f"{node.name}): it holds placeholders, call_function "
                                     "nodes and one output")
        if node.op == "call_function" and not isinstance(node.target, PrimitiveOp) \
                and not any(node.target is f for f in FUNCTIONS.values()):
            raise SpecViolationError(f"node {node.name} calls {node.target!r}, which is not a "
                                     "primitive of ember.export.prims (nor sym_size, getitem, "
                                     "full, arange or the size arithmetic + - * /)")
        tensor = node.op == "placeholder" or isinstance(node.target, PrimitiveOp) and not (
            node.users and all(u.target is operator.getitem for u in node.users))
        if tensor and "val" not in node.meta:  # (of several outputs, the getitems' say)
            raise SpecViolationError(f"node {node.name} has no meta['val'] (its shape and "
                                     "dtype); a pass that adds a node must set it")
    _check_inputs(ep, [n.name for n in nodes if n.op == "placeholder"])
    if not nodes or nodes[-1].op != "output":
        raise SpecViolationError("the last node of an exported graph must be its output")
    _check_outputs(ep, nodes[-1].args[0])


def _check_inputs(ep: Any, placeholders: list[str]) -> None:
    sig = ep.graph_signature
    if len(placeholders) != len(sig.input_specs):
        raise _miscounted("input", placeholders, {s.arg.name for s in sig.input_specs})
    for spec, name in zip(sig.input_specs, placeholders):
        if spec.arg.name != name:
            raise SpecViolationError(f"the input spec {spec.arg.name} stands where the graph "
                                     f"has the placeholder {name}")
        target = spec.target
        if spec.kind is InputKind.PARAMETER:
            if target not in ep.state_dict:
                raise SpecViolationError(f"the parameter {target} is missing from the state "
                                         "dict")
            if not isinstance(ep.state_dict[target], Parameter):
                raise SpecViolationError(f"the state dict holds {target}, a parameter, as a "
                                         "plain tensor, not an ember.nn.Parameter")
        elif spec.kind is InputKind.BUFFER:
            if spec.persistent and target not in ep.state_dict:
                raise SpecViolationError(f"the buffer {target} is missing from the state "
                                         "dict")
            if not spec.persistent and target in ep.state_dict:
                raise SpecViolationError(f"the non-persistent buffer {target} is in the "
                                         "state dict; it belongs in the constants")
            if not spec.persistent and target not in ep.constants:
                raise SpecViolationError(f"the non-persistent buffer {target} is missing "
                                         "from the constants")
        elif spec.kind is InputKind.CONSTANT_TENSOR and target not in ep.constants:
            raise SpecViolationError(f"the constant tensor {target} is missing from the "
                                     "constants")


def _check_outputs(ep: Any, returned: Any) -> None:
    sig = ep.graph_signature
    names = [getattr(v, "name", v) for v in returned]
    if len(names) != len(sig.output_specs):
        raise _miscounted("output", list(map(str, names)),
                          {str(s.arg.name) for s in sig.output_specs})
    for spec, name in zip(sig.output_specs, names):
        expected = spec.arg.value if isinstance(spec.arg, ConstantArgument) else spec.arg.name
        if spec.kind is OutputKind.BUFFER_MUTATION and spec.target not in sig.buffers:
            raise SpecViolationError(f"the output {name} writes the buffer {spec.target}, "
                                     f"which the program does not have (its buffers: "
                                     f"{sig.buffers})")
        if name != expected:
            raise SpecViolationError(f"the graph returns {name} where the signature's outputs "
                                     f"{[str(s.arg.name) for s in sig.output_specs]} have "
                                     f"{expected}")


def _miscounted(kind: str, nodes: list[str], specs: set[str]) -> SpecViolationError:
    return SpecViolationError(
        f"the graph has {len(nodes)} {kind} nodes, its signature {len(specs)} {kind} specs: "
        f"nodes without a spec {sorted(set(nodes) - specs)}, specs without a node "
        f"{sorted(specs - set(nodes))}")
