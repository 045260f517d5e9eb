"""ember.fx regressions a review found in the fx48 sweep's commits."""

import pickle

import numpy as np

import ember
import ember.fx as fx
from ember import nn


def test_a_default_holding_a_tensor_or_a_module_stays_the_placeholders_default():
    pair, linear = (1, ember.ones(2)), nn.Linear(2, 2)

    def pair_default(x, pair=pair):
        return x + pair[1]

    def module_default(x, m=linear):
        return x * 2

    for f in (pair_default, module_default):
        gm = fx.symbolic_trace(f)
        assert [n.op for n in gm.graph.nodes if n.op == "get_attr"] == []
        np.testing.assert_array_equal(gm(ember.ones(2)).numpy(), f(ember.ones(2)).numpy())


def myop(x, **kw):
    return x + kw["other"]


def myop_star(x, *rest):
    return x + rest[0]


fx.wrap("myop")
fx.wrap("myop_star")


def test_replace_pattern_matches_the_nodes_in_star_args_and_star_star_kwargs():
    def by_keyword(x, y):
        return myop(x, other=y.relu())

    def by_position(x, y):
        return myop_star(x, y.relu())

    x, y = ember.ones(2), ember.full((2,), 3.0)
    for f, pattern in ((by_keyword, lambda a, b: myop(a, other=b.relu())),
                       (by_position, lambda a, b: myop_star(a, b.relu()))):
        gm = fx.symbolic_trace(f)
        assert len(fx.replace_pattern(gm, pattern, lambda a, b: a - b)) == 1
        np.testing.assert_array_equal(gm(x, y).numpy(), [-2.0, -2.0])
    gm = fx.symbolic_trace(by_keyword)  # (another keyword is another call)
    assert fx.replace_pattern(gm, lambda a, b: myop(a, another=b.relu()), lambda a, b: a) == []


def test_create_node_sees_a_watched_call_as_written():
    seen = []

    class Watching(fx.Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            seen.append((kind, getattr(target, "__name__", target), args, kwargs))
            return super().create_node(kind, target, args, kwargs, name, type_expr)

    graph = Watching().trace(lambda x: ember.sum(x, dim=1, keepdim=True))
    node = [n for n in graph.nodes if n.op == "call_function"][0]
    assert (node.target, node.args, node.kwargs) == (ember.sum, (node.args[0],),
                                                     {"dim": 1, "keepdim": True})
    calls = [(t, kw) for kind, t, _, kw in seen if kind == "call_function"]
    assert calls == [("sum", {"dim": 1, "keepdim": True})]


def test_a_graph_module_annotated_with_a_local_class_pickles():
    class Local:
        pass

    def f(x: Local, n: int = 2) -> Local:
        return x * n

    gm = fx.symbolic_trace(f)
    loaded = pickle.loads(pickle.dumps(gm))
    assert [n.type for n in loaded.graph.nodes] == [Local.__qualname__, int, None,
                                                   Local.__qualname__]
    assert [n.type for n in gm.graph.nodes] == [Local, int, None, Local]  # (the original kept)
    np.testing.assert_array_equal(loaded(ember.ones(2)).numpy(), [2.0, 2.0])
