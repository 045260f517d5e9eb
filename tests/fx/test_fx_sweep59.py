"""Graph-editing and GraphModule/Interpreter details found by sweep59d, each compared with
torch.fx doing the same."""

import operator

import pytest
import torch
import torch.fx

import ember


def small_graph(lib):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    add = g.call_function(operator.add, (x, 1))
    g.output(g.call_method("relu", (add,)))
    return g


def test_prepending_a_node_to_itself_keeps_it_as_torch():
    for lib in (torch, ember):
        g = small_graph(lib)
        add = list(g.nodes)[1]
        add.prepend(add)
        assert [n.name for n in g.nodes] == ["x", "add", "relu", "output"]
        g.lint()


def test_moving_a_node_of_another_graph_is_refused():
    with pytest.raises(AssertionError, match="different Graph"):
        list(small_graph(torch).nodes)[1].append(list(small_graph(torch).nodes)[1])
    g, other = small_graph(ember), small_graph(ember)
    for where in ("append", "prepend"):
        for anchor in (list(g.nodes)[1], g.output_node()):
            with pytest.raises(RuntimeError, match="another graph.*node_copy"):
                getattr(anchor, where)(list(other.nodes)[1])
    assert [n.name for n in other.nodes] == ["x", "add", "relu", "output"]
    g.lint()
    other.lint()


def test_interpreter_run_takes_enable_io_processing_as_torch():
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lambda x, y: x * y + 1)
        for flag in (True, False):
            out = lib.fx.Interpreter(gm).run(lib.ones(2), lib.ones(2), enable_io_processing=flag)
            assert out.tolist() == [2.0, 2.0]


def test_graph_copy_can_return_the_output_node_as_torch():
    for lib in (torch, ember):
        source = small_graph(lib)
        g, val_map = lib.fx.Graph(), {}
        value, out = g.graph_copy(source, val_map, return_output_node=True)
        assert out is source.output_node()
        assert value is val_map[list(source.nodes)[2]] and value.graph is g
        assert lib.fx.Graph().graph_copy(small_graph(lib), {}).name == "relu"


def test_a_graph_module_has_a_meta_dict_that_copies_keep_as_torch():
    import copy
    import pickle
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lambda x: x + 1)
        assert gm.meta == {}
        gm.meta["note"] = [1]
        deep = copy.deepcopy(gm)
        assert deep.meta == {"note": [1]} and deep.meta["note"] is not gm.meta["note"]
        if lib is ember:  # (torch cannot pickle a traced lambda)
            assert pickle.loads(pickle.dumps(gm)).meta == {"note": [1]}


@pytest.mark.parametrize("target, warns", [("nonexistent", True), ("0.nope", True),
                                           ("0.weight", False), ("0", False)])
def test_get_attr_of_a_missing_attribute_warns_as_torch(target, warns):
    import warnings
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lib.nn.Sequential(lib.nn.Linear(2, 2)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with gm.graph.inserting_before(gm.graph.output_node()):
                gm.graph.get_attr(target)
        assert any("get_attr" in str(w.message) for w in caught) == warns
    assert "add_submodule" in str(caught[0].message) if warns else True


def test_a_matchs_anchor_is_the_patterns_node_as_torch():
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters as torch_filters
    ember_filters = ember.fx.replace_pattern_with_filters
    for lib, with_filters in ((torch, torch_filters), (ember, ember_filters)):
        def pattern(x):
            return lib.relu(lib.exp(x))  # noqa: B023

        def replacement(x):
            return lib.sigmoid(x)  # noqa: B023

        seen = []

        def keep(match, graph, pattern_graph):
            seen.append((match.anchors, match.nodes_map))  # noqa: B023
            return True

        gm = lib.fx.symbolic_trace(lambda x: lib.relu(lib.exp(x)) + 1)  # noqa: B023
        relu = list(gm.graph.nodes)[2]
        match = lib.fx.replace_pattern(gm, pattern, replacement)[0]
        assert match.anchor.graph is not gm.graph and match.nodes_map[match.anchor] is relu
        gm = lib.fx.symbolic_trace(lambda x: lib.relu(lib.exp(x)) + 1)  # noqa: B023
        relu = list(gm.graph.nodes)[2]
        done = with_filters(gm, pattern, replacement, match_filters=[keep])[0]
        anchors, nodes_map = seen[0]
        assert [nodes_map[a] for a in anchors] == [relu] and nodes_map[done.anchor] is relu


def test_shape_prop_records_torchs_tensor_metadata_fields():
    import warnings

    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

    from ember.fx.passes.shape_prop import ShapeProp

    def metas(lib, prop, x):
        gm = lib.fx.symbolic_trace(lambda x: x)
        prop(gm).propagate(x)
        return list(gm.graph.nodes)[0].meta["tensor_meta"]

    def same(lib_x, prop, lib):
        meta = metas(lib, prop, lib_x)
        return (tuple(meta.shape), meta.stride, str(meta.memory_format).split(".")[-1],
                meta.is_quantized, {k: str(v).split(".")[-1] if k == "qscheme" else v
                                    for k, v in meta.qparams.items()})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda L: L.ones(2, 3), lambda L: L.ones(2, 3).t(),
                     lambda L: L.ones(1, 2, 3, 4).to(memory_format=L.channels_last),
                     lambda L: L.ones(1, 2, 1, 3, 4).to(memory_format=L.channels_last_3d),
                     lambda L: L.quantize_per_tensor(L.ones(3), 0.5, 2, L.quint8),
                     lambda L: L.quantize_per_channel(L.ones(2, 3), L.tensor([0.5, 0.25]),
                                                      L.tensor([0, 1]), 0, L.quint8)):
            assert same(make(ember), ShapeProp, ember) == same(make(torch), TorchShapeProp, torch)
    meta = metas(ember, ShapeProp, ember.ones(2, 3))
    assert meta._fields == metas(torch, TorchShapeProp, torch.ones(2, 3))._fields
    assert meta.is_contiguous and not metas(ember, ShapeProp, ember.ones(2, 3).t()).is_contiguous


def test_node_names_follow_torchs_namespace():
    names = []
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("myInput")
        made = [g.call_function(operator.add, (x, i)) for i in range(2)]
        made += [g.create_node("call_function", operator.add, (x, x), name=n)
                 for n in ("add_1", "add", "Foo", "foo.bar", "1abc", "if", "add_7", "add")]
        names.append([n.name for n in [x, *made]])
    assert names[1] == names[0] == ["my_input", "add", "add_1", "add_2", "add_3", "Foo",
                                    "foo_bar", "_1abc", "if_1", "add_7", "add_8"]


@pytest.mark.parametrize("op, target", [("call_function", "relu"), ("call_method", len),
                                        ("call_module", 0), ("get_attr", None)])
def test_a_target_of_the_wrong_kind_is_refused_when_the_node_is_made_as_torch(op, target):
    for lib, error in ((torch, (ValueError, AssertionError)), (ember, ValueError)):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        with pytest.raises(error, match="str|[Cc]allable"):
            g.create_node(op, target, (x,))


def test_param_shapes_constant_reads_a_parameters_shape_as_torch():
    def traced(lib, constant):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.ones(3, 2))

            def forward(self, x):
                return x.reshape(self.w.shape[0], -1) * self.w.size()[1] + self.w.dim() \
                    + self.w.ndim + self.w.numel() + self.w.sum()

        gm = lib.fx.GraphModule(M(), lib.fx.Tracer(param_shapes_constant=constant).trace(M()))
        return [n.op for n in gm.graph.nodes], gm(lib.ones(6)).tolist()

    for constant in (True, False):
        assert traced(ember, constant) == traced(torch, constant)
    assert traced(ember, True)[0].count("call_method") == 2  # (reshape and sum only)


def test_interpreter_exposes_submodules_and_last_uses_as_torch():
    seen = []
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lib.nn.Sequential(lib.nn.ReLU(), lib.nn.ReLU()))
        interp = lib.fx.Interpreter(gm)
        seen.append(({k.name: [v.name for v in vs] for k, vs in interp.user_to_last_uses.items()},
                     sorted(interp.submodules)))
    assert seen[1] == seen[0] == ({"output": ["_1"], "_1": ["_0"], "_0": ["input_1"]},
                                  ["", "0", "1"])
