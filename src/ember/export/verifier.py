"""``ExportedProgram.validate()``: checks that a program's graph and signature still agree, as
torch's verifier does (``torch._export.verifier``), so that a pass that edited the graph finds
out before running or saving it."""

from __future__ import annotations

import operator
from typing import Any

from ember.export.graph_signature import ConstantArgument, InputKind, OutputKind
from ember.export.prims import PrimitiveOp, sym_size
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
                and node.target not in (sym_size, operator.getitem):
            raise SpecViolationError(f"node {node.name} calls {node.target!r}, which is not a "
                                     "primitive of ember.export.prims")
        tensor = node.op == "placeholder" or isinstance(node.target, PrimitiveOp) and not (
            node.users and all(u.target is operator.getitem for u in node.users))
        if tensor and "val" not in node.meta:  # (of several outputs, the getitems' say)
            raise SpecViolationError(f"Node.meta {node.name} is missing val field.")
    _check_inputs(ep, [n.name for n in nodes if n.op == "placeholder"])
    if not nodes or nodes[-1].op != "output":
        raise SpecViolationError("the last node of an exported graph must be its output")
    _check_outputs(ep, nodes[-1].args[0])


def _check_inputs(ep: Any, placeholders: list[str]) -> None:
    sig = ep.graph_signature
    if len(placeholders) != len(sig.input_specs):
        named = {s.arg.name for s in sig.input_specs}
        raise SpecViolationError(
            f"Number of graph inputs ({len(placeholders)}) does not match number of inputs in "
            f"the graph signature ({len(sig.input_specs)})\nPlaceholders missing input_specs: "
            f"{set(placeholders) - named}\nInput_specs missing placeholders: "
            f"{named - set(placeholders)}")
    for spec, name in zip(sig.input_specs, placeholders):
        if spec.arg.name != name:
            raise SpecViolationError(f"Input spec name {spec.arg.name} does not match node "
                                     f"name {name}")
        target = spec.target
        if spec.kind is InputKind.PARAMETER:
            if target not in ep.state_dict:
                raise SpecViolationError(f"Parameter {target} is not in the state dict.")
            if not isinstance(ep.state_dict[target], Parameter):
                raise SpecViolationError(f"State dict entry for parameter {target} is not an "
                                         "instance of ember.nn.Parameter.")
        elif spec.kind is InputKind.BUFFER:
            if spec.persistent and target not in ep.state_dict:
                raise SpecViolationError(f"Buffer {target} is not in the state dict.")
            if not spec.persistent and target in ep.state_dict:
                raise SpecViolationError(f"Non-persistent buffer {target} is in the state "
                                         "dict, it should not be.")
            if not spec.persistent and target not in ep.constants:
                raise SpecViolationError(f"Non-persistent buffer {target} is not in the "
                                         "constants dictionary.")
        elif spec.kind is InputKind.CONSTANT_TENSOR and target not in ep.constants:
            raise SpecViolationError(f"Constant tensor {target} is not in the constants "
                                     "dictionary.")


def _check_outputs(ep: Any, returned: Any) -> None:
    sig = ep.graph_signature
    names = [getattr(v, "name", v) for v in returned]
    if len(names) != len(sig.output_specs):
        named = {str(s.arg.name) for s in sig.output_specs}
        raise SpecViolationError(
            f"Number of output nodes {len(names)} is different Than the number of outputs "
            f"specified by the graph signature: {len(sig.output_specs)}\nNodes missing "
            f"output_specs: {set(map(str, names)) - named}\nOutput_specs missing nodes: "
            f"{named - set(map(str, names))}")
    for spec, name in zip(sig.output_specs, names):
        expected = spec.arg.value if isinstance(spec.arg, ConstantArgument) else spec.arg.name
        if spec.kind is OutputKind.BUFFER_MUTATION and spec.target not in sig.buffers:
            raise SpecViolationError(f"Buffer output {name} does not point to a buffer that "
                                     f"exists. \nDict of buffers that are mutated, in order: "
                                     f"{sig.buffers_to_mutate} \nBuffer nodes available: "
                                     f"{sig.buffers} \n")
        if name != expected:
            raise SpecViolationError(f"Output {name} is not in the correct order or is not "
                                     f"found in the graph signature's outputs: "
                                     f"{[str(s.arg.name) for s in sig.output_specs]}")
