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


def test_shape_prop_tells_per_channel_by_the_qscheme_not_its_repr(monkeypatch):
    from ember.fx.passes.shape_prop import ShapeProp
    from ember.quant.qtypes import QScheme

    monkeypatch.setattr(QScheme, "__repr__", lambda self: f"QScheme({len(self.name)})")
    gm = ember.fx.symbolic_trace(lambda x: x)
    q = ember.quantize_per_channel(ember.ones(2, 3), ember.tensor([0.5, 0.25]),
                                   ember.tensor([0, 1]), 0, ember.qint8)
    ShapeProp(gm).propagate(q)
    qparams = next(iter(gm.graph.nodes)).meta["tensor_meta"].qparams
    assert qparams["scale"] == [0.5, 0.25] and qparams["zero_point"] == [0, 1]
    assert qparams["axis"] == 0


def _method_node_names(lib):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    names = [g.call_method(t, (x,)).name for t in
             ("conv2D", "__add__", "fooBar", "x2Y", "__len__", "__x", "a.bC", "relu_")]

    def myFunc2D(a):
        return a

    return names + [g.call_function(myFunc2D, (x,)).name]


def test_target_names_are_snake_cased_as_torch():
    assert _method_node_names(ember) == _method_node_names(torch)



def _get_attr_warns(lib, make_graph, name):
    graph = make_graph(lib)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph.get_attr(name)
    return any("get_attr" in str(w.message) for w in caught)


def _owned_by_linear(lib):
    return lib.fx.Graph(owning_module=lib.nn.Linear(2, 2))


def _traced(lib):
    return lib.fx.symbolic_trace(lib.nn.Sequential(lib.nn.ReLU())).graph


def _unowned(lib):
    return lib.fx.Graph()


def test_get_attr_of_a_missing_name_warns_for_any_owning_module_as_torch():
    # rm59df item 1: a plain module as owner warns too (only a running trace is quiet)
    for make, name, warns in ((_owned_by_linear, "missing", True),
                              (_owned_by_linear, "weight", False),
                              (_traced, "missing", True), (_traced, "0", False),
                              (_unowned, "missing", False)):
        assert _get_attr_warns(ember, make, name) == _get_attr_warns(torch, make, name) == warns
