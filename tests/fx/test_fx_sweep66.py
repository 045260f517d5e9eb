"""ember.fx against torch.fx 2.13: sweep 66's findings."""

import torch
import torch.fx

import ember
import ember.fx


def _first_and_last(fx, lib):
    graph = fx.symbolic_trace(lambda x: lib.relu(x) + 1).graph
    nodes = list(graph.nodes)
    return nodes[0], nodes[-1]


def test_the_sentinel_before_the_first_node_is_a_root_node_as_torch_fx():
    for fx, lib in ((torch.fx, torch), (ember.fx, ember)):
        first, last = _first_and_last(fx, lib)
        root = first.prev
        assert last.next is root and root.next is first
        assert (root.op, root.name, root.target, str(root)) == ("root", "", "", "")
        assert (root.args, root.kwargs, dict(root.users), root.all_input_nodes) == ((), {}, {}, [])
        # walking back until the root stops there, as code written for torch.fx does
        n, seen = last, []
        while n.op != "root":
            seen.append(n.op)
            n = n.prev
        assert seen == ["output", "call_function", "call_function", "placeholder"]


def _names_after_rewrite(lib, fx):
    class Net(lib.nn.Module):
        def forward(self, x):
            a, b = x + 1, x + 2
            return a * 3 + b * 3

    gm = fx.symbolic_trace(Net())
    matches = fx.replace_pattern(gm, lambda x, y: x * y, lambda x, y: y * x)
    x = lib.tensor([1.0, -2.0])
    return ([sorted(str(v) for v in m.nodes_map.values()) for m in matches],
            [(n.op, n.name, n.args) for n in gm.graph.nodes if n.op != "output"],
            gm(x).tolist())


def test_a_pattern_input_matches_a_literal_as_torch_fx():
    # (Ember matched no a * 3 with x * y: a pattern placeholder took nodes only)
    want = _names_after_rewrite(torch, torch.fx)
    got = _names_after_rewrite(ember, ember.fx)
    assert [sorted(m) for m in got[0]] == [sorted(m) for m in want[0]]
    assert str(got[1]) == str(want[1]) and got[2] == want[2]


def test_an_erased_node_keeps_its_name_taken_as_torch_fx():
    for fx, lib in ((torch.fx, torch), (ember.fx, ember)):
        g = fx.Graph()
        x = g.placeholder("x")
        g.erase_node(g.call_function(lib.relu, (x,)))
        assert g.call_function(lib.relu, (x,)).name == "relu_1"
