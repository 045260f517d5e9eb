"""A public function reached through a closure (not a global of the traced code) records the
same target as through a global: ``ember.sigmoid`` in a closure recorded the op it hands over
to (``ember.ops.unary.sigmoid``), so a pattern made one way found no match in a graph traced
the other way (torch.fx records ``torch.sigmoid`` both ways)."""

import functools
import inspect

import torch
import torch.fx

import ember
import ember.fx


def _pair(f, g):
    return lambda x, y: (f(x), g(y))


def _dead(lib):
    def dead(x):
        a = lib.relu(x)  # noqa: F841
        b = lib.sigmoid(x * 2)  # noqa: F841
        return x + 1
    return dead


def test_a_closure_s_function_records_the_public_target():
    through_global = ember.fx.symbolic_trace(lambda x: ember.sigmoid(x))
    through_closure = ember.fx.symbolic_trace(_pair(ember.relu, ember.sigmoid))
    targets = [{n.target for n in g.graph.nodes if n.op == "call_function"}
               for g in (through_global, through_closure)]
    assert targets[0] < targets[1]
    assert "ember.sigmoid(y)" in through_closure.code


def test_a_pattern_from_a_closure_matches_as_torch_fx():
    counts = []
    for lib, fx in ((ember, ember.fx), (torch, torch.fx)):
        gm = fx.symbolic_trace(_dead(lib))
        counts.append(len(fx.replace_pattern(gm, _pair(lib.relu, lib.sigmoid),
                                             _pair(lib.tanh, lib.exp))))
        x = lib.tensor([0.5, -1.0])
        assert gm(x).tolist() == [1.5, 0.0]
    assert counts == [1, 1]


def test_the_public_target_map_is_built_once_and_again_when_a_function_changes(monkeypatch):
    # (it was built on every trace: ~0.5 ms, a fifth of tracing a small function)
    tracers = [ember.fx.Tracer() for _ in range(3)]
    for t in tracers[:2]:
        t.trace(lambda x: ember.sigmoid(x))
    assert tracers[0]._public_by_op is tracers[1]._public_by_op
    op = inspect.unwrap(ember.sigmoid)

    @functools.wraps(op)
    def sigmoid(x):
        return op(x)
    monkeypatch.setattr(ember, "sigmoid", sigmoid)
    graph = tracers[2].trace(_pair(ember.relu, op))
    assert tracers[2]._public_by_op is not tracers[0]._public_by_op
    assert sigmoid in {n.target for n in graph.nodes if n.op == "call_function"}
