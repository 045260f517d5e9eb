"""A module's forward as TensorBoard's graph: the static graph ``ember.jit.trace`` makes (what
compiled code runs: fused kernels included), as a ``GraphDef`` whose nodes are the inputs, the
parameters and buffers (grouped by module path: ``fc1/weight``), the constants, each
equation (its primitive as the op, its params, output shapes and source line as attributes)
and the outputs."""

from __future__ import annotations

from typing import Any

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ember.utils.graph_tracer import traced_graph


def _shapes(vars: list[Any]) -> AttrValue:
    return AttrValue(list=AttrValue.ListValue(shape=[
        TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in v.shape]) for v in vars]))


def _text(value: str) -> AttrValue:
    return AttrValue(s=value.encode("utf-8"))


def _holds_graphs(value: Any) -> bool:
    """Whether an equation's param is a sub-graph (``cond``'s branches, a loop's body): the
    test of ``ember.jit.ir.sub_graphs``, which this layer, below the jit, does not import."""
    return any(hasattr(v, "eqns") for v in (value if isinstance(value, tuple) else (value,)))


def graph_def(graph: Any) -> GraphDef:
    """``graph`` (an ``ember.jit.ir.Graph``) as a ``GraphDef`` TensorBoard's graph dashboard
    draws."""
    names: dict[Any, str] = {}
    nodes: list[NodeDef] = []

    def node(name: str, op: str, outputs: list[Any], inputs: list[Any] = (),
             **attrs: AttrValue) -> None:
        for k, var in enumerate(outputs):
            names[var] = name if k == 0 else f"{name}:{k}"
        nodes.append(NodeDef(name=name, op=op, input=[names[v] for v in inputs],
                             attr={"_output_shapes": _shapes(outputs),
                                   "dtype": _text(", ".join(v.dtype.name for v in outputs)),
                                   **attrs}))

    for k, var in enumerate(graph.inputs):
        node(f"input/{k}", "Input", [var])
    for ref in graph.state:
        node(ref.label.replace(".", "/") + ("/grad" if ref.grad else ""), "Parameter",
             [ref.var])
    for var in graph.consts:
        node(f"constant/{var.name}", "Constant", [var])
    for i, eqn in enumerate(graph.eqns):
        if any(_holds_graphs(v) for v in eqn.params.values()):
            raise NotImplementedError(f"add_graph: the traced graph holds a "
                                      f"{eqn.prim.name} of sub-graphs, which this drawing "
                                      f"does not unfold")
        params = ", ".join(f"{k}={v!r}" for k, v in eqn.params.items())
        node(f"{eqn.prim.name}_{i}", eqn.prim.name, eqn.outputs, eqn.inputs,
             params=_text(params),
             source=_text(str(eqn.source or "")))
    for k, var in enumerate(graph.outputs):
        if var is not None:
            nodes.append(NodeDef(name=f"output/{k}", op="Output", input=[names[var]],
                                 attr={"_output_shapes": _shapes([var])}))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))


def trace_graph(model: Any, input_to_model: Any, strict: bool = True) -> GraphDef:
    """The ``GraphDef`` of ``model`` called on ``input_to_model`` (a tensor, or a tuple or
    list of arguments), traced without grad as ``ember.jit.trace`` traces it (``strict``:
    refusing list and dict outputs)."""
    return graph_def(traced_graph(model, input_to_model, strict))
