"""ember.fx against torch.fx where a differential sweep found them different."""

import numpy as np
import pytest
import torch
import torch.fx as tfx
import torch.nn.functional as TF

import ember
import ember.fx as fx
import ember.nn.functional as F
from ember import nn


def calls(gm, torch_kwargs=()):
    """(target name, args, kwargs) of the call_function nodes, nodes by name; the kwargs
    named in ``torch_kwargs`` (which torch's Python functions hand over too) left out."""
    def names(a):
        return tfx.node.map_aggregate(a, lambda x: x.name if hasattr(x, "op") else x)
    return [(n.target.__name__, names(n.args),
             {k: names(v) for k, v in n.kwargs.items() if k not in torch_kwargs})
            for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("ember_fn, torch_fn", [
    (lambda x: F.softmax(x, dim=-1), lambda x: TF.softmax(x, dim=-1)),
    (lambda x: ember.sum(x, dim=1, keepdim=True), lambda x: torch.sum(x, dim=1, keepdim=True)),
    (lambda x: ember.sum(x, 1, True), lambda x: torch.sum(x, 1, True)),
    (lambda x: ember.clamp(x, min=0.0), lambda x: torch.clamp(x, min=0.0)),
    (lambda x: ember.cat([x, x], dim=0), lambda x: torch.cat([x, x], dim=0)),
    (lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    (lambda x: ember.transpose(x, 0, 1), lambda x: torch.transpose(x, 0, 1)),
])
def test_keyword_arguments_are_recorded_as_written(ember_fn, torch_fn):
    gm, tgm = fx.symbolic_trace(ember_fn), tfx.symbolic_trace(torch_fn)
    assert calls(gm) == calls(tgm, ("_stacklevel", "dtype"))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(gm(ember.tensor(x)).numpy(), torch_fn(torch.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_keyword_argument_of_a_constant_tensor_call_keeps_its_get_attr():
    w = ember.ones(4)

    def f(x):
        return ember.mul(x, other=w)

    gm = fx.symbolic_trace(f)
    mul = gm.graph.find_nodes(op="call_function", target=ember.mul)[0]
    assert list(mul.kwargs) == ["other"] and mul.kwargs["other"].op == "get_attr"
    gm.graph.lint()
    x = ember.randn(2, 4)
    np.testing.assert_array_equal(gm(x).numpy(), (x * w).numpy())


@pytest.mark.parametrize("name, shape", [("ReflectionPad1d", (2, 3, 5)),
                                         ("ReflectionPad2d", (1, 2, 4, 5)),
                                         ("ReplicationPad1d", (3, 5)),
                                         ("ReplicationPad3d", (1, 1, 3, 4, 5))])
def test_edge_pad_modules_trace_as_roots_as_torch(name, shape):
    pad, tpad = getattr(nn, name)(2), getattr(torch.nn, name)(2)
    gm, tgm = fx.symbolic_trace(pad), tfx.symbolic_trace(tpad)
    assert [n.op for n in gm.graph.nodes] == [n.op for n in tgm.graph.nodes]
    assert calls(gm) == calls(tgm, ("value",))
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(gm(ember.tensor(x)).numpy(), tpad(torch.tensor(x)).numpy())


def test_edge_pad_module_still_refuses_a_wrong_rank_eagerly():
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
        nn.ReflectionPad1d(1)(ember.zeros(1, 2, 3, 4))


def test_placeholders_go_through_an_overridden_create_proxy():
    def tagged(fx_module):
        class Tagging(fx_module.Tracer):
            def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
                proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
                proxy.node.meta["kind"] = kind
                return proxy
        graph = Tagging().trace(lambda x, y=2: x.relu() + y)
        return [(n.name, n.meta.get("kind")) for n in graph.nodes]

    assert tagged(fx) == tagged(tfx) == [("x", "placeholder"), ("y", "placeholder"),
                                         ("relu", "call_method"), ("add", "call_function"),
                                         ("output", None)]


def test_a_tensor_default_stays_the_placeholders_default():
    w = ember.ones(2)

    def f(x, bias=w):
        return x + bias

    gm = fx.symbolic_trace(f)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "placeholder", "call_function",
                                             "output"]
    np.testing.assert_array_equal(gm(ember.zeros(2)).numpy(), [1.0, 1.0])


def test_insert_arg_as_torch():
    for fx_module in (fx, tfx):
        gm = fx_module.symbolic_trace(lambda x: x.sum(1))
        node = list(gm.graph.nodes)[1]
        node.insert_arg(1, 0)
        node.insert_arg(3, True)
        assert [getattr(a, "name", a) for a in node.args] == ["x", 0, 1, True]
    with pytest.raises(ember.errors.ArgumentError, match="insert_arg: index 5"):
        node = list(fx.symbolic_trace(lambda x: x.sum(1)).graph.nodes)[1]
        node.insert_arg(5, 0)


def log_value(x):
    return None


def test_has_side_effect_keeps_calls_through_dead_code_elimination():
    fx.has_side_effect(log_value)
    tfx.has_side_effect(log_value)
    for fx_module in (fx, tfx):
        g = fx_module.Graph()
        x = g.placeholder("x")
        g.call_function(log_value, (x,))
        g.output(x)
        assert g.eliminate_dead_code() is False
        assert [n.op for n in g.nodes] == ["placeholder", "call_function", "output"]


def test_replace_pattern_matches_arguments_by_parameter_not_by_spelling():
    def f(x):
        return F.softmax(x + 1, dim=-1) * F.softmax(x, -1) + x.sum(1) + x.sum(dim=0)

    gm = fx.symbolic_trace(f)
    softmaxes = fx.replace_pattern(gm, lambda a: F.softmax(a, dim=-1),
                                   lambda a: F.log_softmax(a, dim=-1))
    sums = fx.replace_pattern(gm, lambda a: a.sum(dim=1), lambda a: a.mean(dim=1))
    assert (len(softmaxes), len(sums)) == (2, 1)  # (the sum over dim 0 is another call)
    x = ember.randn(4, 4)
    expected = F.log_softmax(x + 1, dim=-1) * F.log_softmax(x, -1) + x.mean(1) + x.sum(0)
    np.testing.assert_allclose(gm(x).numpy(), expected.numpy(), rtol=1e-6)


def test_deepcopy_and_pickle_keep_the_output_nodes_meta():
    import copy
    import pickle

    def tagged(fx_module):
        gm = fx_module.symbolic_trace(lambda x: x + 1)
        for node in gm.graph.nodes:
            node.meta["tag"] = node.name
        return gm

    gm = tagged(fx)
    # (torch.fx's pickle traces the generated code again, dropping meta; its deepcopy keeps it)
    for copied in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm)), copy.deepcopy(tagged(tfx))):
        assert [n.meta.get("tag") for n in copied.graph.nodes] == ["x", "add", "output"]
    assert float(copy.deepcopy(gm)(ember.ones(1))[0]) == 2.0


def test_annotations_are_the_placeholder_and_output_types():
    def f(x: ember.Tensor, n: int = 2) -> ember.Tensor:
        return x * n

    def g(x: torch.Tensor, n: int = 2) -> torch.Tensor:
        return x * n

    ours = [n.type for n in fx.symbolic_trace(f).graph.nodes]
    theirs = [n.type for n in tfx.symbolic_trace(g).graph.nodes]
    assert ours == [ember.Tensor, int, None, ember.Tensor]
    assert theirs == [torch.Tensor, int, None, torch.Tensor]
