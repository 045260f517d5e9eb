"""mend59d: fixes from review59d of ember.fx, checked against torch 2.13's torch.fx."""
import operator
import warnings

import torch
import torch.fx
import torch.fx.subgraph_rewriter

import ember


def _trace_adding_a_buffer_late(lib):
    class T(lib.fx.Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            if kind == "output" and not hasattr(self.root, "extra"):
                c = self.graph.get_attr("extra")                  # the node first ...
                self.root.register_buffer("extra", lib.ones(1))   # ... then the tensor
                args = (self.graph.call_function(operator.add, (args[0], c)),)
            return super().create_node(kind, target, args, kwargs, name, type_expr)

    class M(lib.nn.Module):
        def forward(self, x):
            return x * 2

    m = M()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm = lib.fx.GraphModule(m, T().trace(m))
    warned = [str(w.message) for w in caught if "get_attr" in str(w.message)]
    return gm(lib.ones(1)).tolist(), warned


def test_a_tracer_adding_get_attr_before_its_buffer_does_not_warn_as_torch():
    assert _trace_adding_a_buffer_late(ember) == _trace_adding_a_buffer_late(torch) == ([3.0], [])


def _anchors(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            a = x + 1
            b = a * 2
            return a - b

    def pattern(x):
        a = x + 1
        b = a * 2
        return a, b

    def replacement(x):
        a = x - 1
        return a, a * 3

    gm = lib.fx.symbolic_trace(M())
    seen = []

    def keep(match, graph, pattern_graph):
        seen.append([n.name for n in match.anchors])
        return True

    lib.fx.subgraph_rewriter.replace_pattern_with_filters(gm, pattern, replacement, [keep])
    return seen


def test_the_anchor_is_the_pattern_output_nothing_else_uses_as_torch():
    # `b` (mul) is the second output, but `a` feeds `b`: the anchor is `b`, as torch.fx's
    assert _anchors(ember) == _anchors(torch) == [["mul"]]
