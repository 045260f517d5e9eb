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
