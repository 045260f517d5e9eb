"""Graph and GraphModule helpers of passes (find_nodes, submodule editing, boxed_run, the
graph's text), each compared with torch.fx doing the same."""

import operator

import pytest
import torch
import torch.fx

import ember
from ember import fx


def traced(lib, fn):
    return lib.fx.symbolic_trace(fn)


def test_output_node_like_torch():
    for lib in (torch, ember):
        graph = traced(lib, lambda x: (x + 1, x)).graph
        assert graph.output_node() is list(graph.nodes)[-1]
        assert [n.name for n in graph.output_node().args[0]] == ["add", "x"]
    with pytest.raises(RuntimeError, match="does not end in an output node"):
        fx.Graph().output_node()


def test_find_nodes_like_torch():
    for lib in (torch, ember):
        relu = lib.relu
        gm = traced(lib, lambda x: lib.relu(x) + lib.relu(x * 2))  # noqa: B023
        assert [n.name for n in gm.graph.find_nodes(op="call_function", target=relu)] == \
            ["relu", "relu_1"]
        assert [n.name for n in gm.graph.find_nodes(op="placeholder")] == ["x"]
        assert gm.graph.find_nodes(op="call_module") == []


def submodule_edits(lib):
    nn = lib.nn
    gm = lib.fx.symbolic_trace(nn.Sequential(nn.Sequential(nn.ReLU()), nn.Linear(2, 2)))
    added = (gm.add_submodule("a.b", nn.ReLU()), gm.add_submodule("0.0.x", nn.ReLU()),
             gm.add_submodule("training.x", nn.ReLU()))
    before = [name for name, _ in gm.named_modules()]
    gm.delete_all_unused_submodules()
    after = [name for name, _ in gm.named_modules()]
    deleted = (gm.delete_submodule("1"), gm.delete_submodule("1"), gm.delete_submodule("a.y"))
    return added, before, after, deleted


def test_add_and_delete_submodules_like_torch():
    assert submodule_edits(ember) == submodule_edits(torch)


def test_boxed_run_empties_the_list():
    gm = fx.symbolic_trace(lambda x: x * 2)
    args = [ember.ones(2)]
    assert ember.equal(fx.Interpreter(gm).boxed_run(args), ember.full((2,), 2.0))
    assert args == []


def test_graph_text_and_stack_trace_like_torch():
    for lib in (torch, ember):
        gm = traced(lib, lambda x: (x + 1, x.relu()))
        lines = [n.format_node() for n in gm.graph.nodes]
        assert lines[1] == ("%add : [num_users=1] = call_function[target=operator.add]"
                            "(args = (%x, 1), kwargs = {})")
        assert lines[-1] == "return (add, relu)"
        node = next(iter(gm.graph.nodes))
        assert node.stack_trace is None
        node.stack_trace = "line 1"
        assert node.stack_trace == node.meta["stack_trace"] == "line 1"


def test_erasing_a_node_twice_warns_like_torch():
    for lib in (torch, ember):
        gm = traced(lib, lambda x: x)
        with gm.graph.inserting_after(next(iter(gm.graph.nodes))):
            unused = gm.graph.call_function(operator.neg, (next(iter(gm.graph.nodes)),))
        gm.graph.erase_node(unused)
        with pytest.warns(UserWarning, match="already erased"):
            gm.graph.erase_node(unused)


def test_unused_values_are_dropped_at_once_like_torch():
    def grow(x):
        y = x.clone()
        y.add_(1)
        return y

    line = "    add_ = clone.add_(1);  add_ = None\n"
    assert line in fx.symbolic_trace(grow).code
    assert line in torch.fx.symbolic_trace(grow).code


def test_call_function_name_and_propagate_meta_like_torch():
    for lib in (torch, ember):
        gm = traced(lib, lambda x: x + 1)
        add = gm.graph.find_nodes(op="call_function", target=operator.add)[0]
        add.meta["tag"] = "kept"
        with gm.graph.inserting_after(add):
            neg = gm.graph.call_function(operator.neg, (add.args[0],), name="negated")
        add.replace_all_uses_with(neg, propagate_meta=True)
        assert neg.name == "negated" and neg.meta == {"tag": "kept"}
        with pytest.raises((RuntimeError, AssertionError), match="propagate_meta=True"):
            add.replace_all_uses_with(neg, propagate_meta=True)
