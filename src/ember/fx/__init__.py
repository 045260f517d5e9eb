"""``ember.fx``: capture a module's ``forward`` as a graph of Python-level calls, transform it
and run it again as Python, as ``torch.fx`` does (see ``docs/fx.md``).

Example:
    >>> gm = ember.fx.symbolic_trace(ember.models.mlp())
    >>> sorted({n.op for n in gm.graph.nodes})
    ['call_module', 'output', 'placeholder']
"""

from ember.fx import operator_schemas
from ember.fx.codegen import CodeGen
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter, Transformer
from ember.fx.node import Node, has_side_effect, map_arg
from ember.fx.placeholders import PH, PHBase
from ember.fx.proxy import Proxy, TraceError
from ember.fx.subgraph_rewriter import Match, replace_pattern, replace_pattern_with_filters
from ember.fx.tracer import Tracer, symbolic_trace, wrap

__all__ = ["CodeGen", "Graph", "GraphModule", "Interpreter", "Match", "Node", "PH", "PHBase",
           "Proxy", "TraceError", "Tracer", "Transformer", "has_side_effect", "map_arg",
           "replace_pattern", "operator_schemas", "replace_pattern_with_filters",
           "symbolic_trace", "wrap"]
