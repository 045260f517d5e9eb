"""ember.autograd.graph's tools against torch.autograd.graph: gradient edges, multi-grad
hooks, save_on_cpu, disabling saved-tensor hooks, mutation of saved tensors, versions."""

import doctest
import importlib
import weakref

import numpy as np
import pytest
import torch
import torch.autograd.graph as tgraph

import ember
import ember.autograd.graph as graph
from tests.autograd.test_sweep_fixes import _wrong_jvp
from tests.gc_off import gc_off


def both(fn):
    """Runs ``fn(lib, graph_module)`` with torch and with Ember; returns both results as
    NumPy-friendly lists."""
    return fn(torch, tgraph), fn(ember, graph)


def as_lists(values):
    return [None if v is None else np.asarray(v.detach().numpy()).tolist() for v in values]


def test_gradient_edges_as_grad_inputs():
    def run(lib, g):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        edge = g.get_gradient_edge(y)
        y.mul_(3)  # the edge still names the gradient flowing into the old y
        return as_lists(lib.autograd.grad((y * 2).sum(), [edge, g.get_gradient_edge(x), x]))

    t, e = both(run)
    assert e == t
    x = ember.ones(2, requires_grad=True)
    edge = graph.get_gradient_edge(x)
    assert isinstance(edge, tuple) and edge.node.variable is x and edge.output_nr == 0
    with pytest.raises(RuntimeError, match="does not require gradients"):
        graph.get_gradient_edge(ember.ones(1))
    with pytest.raises(ember.errors.GradError, match="materialize_grads"):
        ember.autograd.grad((x * 2).sum(), graph.get_gradient_edge(x * 3), materialize_grads=True)


def test_multi_grad_hook_modes():
    def run(lib, g):
        a, b, c = (lib.ones(2, requires_grad=True) for _ in range(3))
        seen = []
        h = g.register_multi_grad_hook((a, b, c), lambda grads: seen.append(as_lists(grads)))
        (a * 2 + b).sum().backward()
        (c * 5).sum().backward()  # a pass reaching c only
        h.remove()
        (a * 2 + b).sum().backward()  # removed
        h = g.register_multi_grad_hook((a, b), lambda grad: seen.append("any"), mode="any")
        (a * 2 + b * 3).sum().backward()
        (a * 2).sum().backward()
        h.remove()
        return seen

    t, e = both(run)
    assert e == t == [[[2.0, 2.0], [1.0, 1.0], None], [None, None, [5.0, 5.0]], "any", "any"]
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        graph.register_multi_grad_hook((ember.ones(1, requires_grad=True),), print, mode="x")


def test_save_on_cpu_and_disable():
    def run(lib, g):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        with g.save_on_cpu(), g.save_on_cpu(pin_memory=True):
            y = (x.exp() * x).sum()
        y.backward()
        return as_lists([x.grad])

    t, e = both(run)
    np.testing.assert_allclose(e, t)
    assert issubclass(graph.save_on_cpu, graph.saved_tensors_hooks)
    for g in (tgraph, graph):
        with g.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                g.save_on_cpu().__enter__()
            with g.disable_saved_tensors_hooks("inner"):
                with pytest.raises(RuntimeError, match="inner"):
                    g.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
            with pytest.raises(RuntimeError, match="no hooks here"):
                g.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with g.save_on_cpu(), pytest.raises(RuntimeError, match="hooks active"):
            with g.disable_saved_tensors_hooks("hooks active"):
                pass
        with g.save_on_cpu():  # enabled again
            pass


def test_allow_mutation_on_saved_tensors():
    # (torch's side is written out: its context costs seconds to enter the first time; torch
    # 2.13 gives [5, 16, 33] here too, and the same two errors)
    w = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with graph.allow_mutation_on_saved_tensors():
        b = w.clone()
        out = (b ** 2).sum() + (w * w * b).sum()  # d/dw = 2w + 3w^2 at the saved w
        b.sin_()
        with ember.no_grad():
            w.mul_(10)  # a parameter updated before backward
        out.backward()
    assert w.grad.tolist() == [5.0, 16.0, 33.0]
    x = ember.ones(2, requires_grad=True)
    y = x.clone()
    out = (y * y).sum()
    y.add_(1)
    with pytest.raises(ember.errors.GradError, match="modified in place"):
        out.backward()  # outside the context: the usual error
    with graph.allow_mutation_on_saved_tensors():
        x = ember.ones(2, requires_grad=True)
        out = (x.clone() ** 2).sum()
    with pytest.raises(AssertionError, match="Trying to backward outside"):
        out.backward()
    with pytest.raises(RuntimeError, match="cannot be nested"):
        with graph.allow_mutation_on_saved_tensors(), graph.allow_mutation_on_saved_tensors():
            pass


def test_increment_version_and_variable():
    x = ember.ones(2, requires_grad=True)
    y = x.clone()
    out = (y * y).sum()
    graph.increment_version(y)
    with pytest.raises(ember.errors.GradError, match="version 0 and is now at version 1"):
        out.backward()
    graph.increment_version([y, y])
    assert y._version == 3
    base = ember.ones(2, requires_grad=True) * 2
    v = ember.autograd.Variable(base)
    assert not v.requires_grad and v.grad_fn is None and v.data_ptr() == base.data_ptr()
    assert ember.autograd.Variable(base, requires_grad=True).requires_grad
    assert isinstance(ember.ones(1), ember.autograd.Variable)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        ember.autograd.Variable([1, 2])


@pytest.mark.parametrize("arg", ["number", "list with a number"])
def test_increment_version_refuses_a_non_tensor_clearly(arg):
    # torch: RuntimeError naming increment_version; Ember raised "'int' object is not
    # iterable" or an AttributeError from inside (both move the tensors before the bad one on)
    def call(lib, g):
        t = lib.ones(1)
        with pytest.raises(RuntimeError, match="increment_version expect"):
            g.increment_version(3 if arg == "number" else [t, 3])
        return t._version

    assert call(ember, graph) == call(torch, tgraph) == (0 if arg == "number" else 1)


@pytest.mark.parametrize("name", ["saved_values", "multi_grad_hook", "variable"])
def test_docstring_examples(name):
    mod = importlib.import_module(f"ember.autograd.{name}")
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("obj", [graph.GradientEdge, graph.get_gradient_edge, graph.keep_saved])
def test_edge_docstring_examples(obj):
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, globs={"ember": ember}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_multi_grad_hook_with_a_tensor_that_gets_no_gradient():
    def run(lib, g):
        class DropsSecond(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 1 + b * 1

            @staticmethod
            def backward(ctx, grad):
                return grad, None  # q's node is reached but gets no gradient

        x = lib.ones(2, requires_grad=True)
        p, q = x * 2, x * 3
        seen = []
        g.register_multi_grad_hook((p, q), lambda grads: seen.append(as_lists(grads)))
        DropsSecond.apply(p, q).sum().backward(retain_graph=True)
        lib.autograd.grad(DropsSecond.apply(p, q).sum(), x)
        return seen

    t, e = both(run)
    assert e == t == [[[1.0, 1.0], None]] * 2


def test_multi_grad_hook_fires_when_a_node_runs_with_an_output_left_without_gradient():
    # svd's three outputs come from one node; only U's gradient is made. The hook ran only at
    # the pass's end (after x's gradient), so ModuleTracker attributed an LSTMCell's backward
    # (h and c from one node, c unused) to "Global" only
    def run(lib, g):
        x = lib.ones(3, 4, requires_grad=True)
        y = x * 2
        events = []
        u, s, v = lib.linalg.svd(y + lib.eye(3, 4), full_matrices=False)
        g.register_multi_grad_hook((u, s), lambda grads: events.append(
            ["multi"] + [grad is not None for grad in grads]))
        y.register_hook(lambda grad: events.append(["y"]))
        u.sum().backward()
        return events

    t, e = both(run)
    assert e == t == [["multi", True, False], ["y"]]


def test_keep_saved_leaves_a_tensor_changed_since_it_was_saved_to_the_version_check():
    x, h = ember.ones(2, requires_grad=True), ember.full((2,), 3.0)
    y = (x * h).sum()
    h.add_(1.0)  # (a real in-place op after the save: backward must still refuse)
    graph.keep_saved([y], [h])
    with pytest.raises(ember.errors.GradError, match="modified in place"):
        y.backward()


def test_multi_grad_hook_keeps_no_tensor_alive():
    # the hooks live on the tensors' nodes: they must not hold those tensors or nodes (a cycle
    # freed only by the gc), nor the finished backward pass
    with gc_off():
        x = ember.ones(3, requires_grad=True)
        a, b = x * 2, x * 3
        seen = []
        graph.register_multi_grad_hook((a, b), lambda grads: seen.append(len(grads)))
        (a + b).sum().backward()
        refs = [weakref.ref(t) for t in (a, b)] + [weakref.ref(a.grad_fn)]
        del a, b
        assert seen == [2] and all(r() is None for r in refs)


@pytest.mark.parametrize("lib, glib", [(torch, tgraph), (ember, graph)])
def test_every_node_is_a_graph_node(lib, glib):
    # (torch's graph.Node is an ABC: AccumulateGrad and a Function's nodes are registered)
    x = lib.ones(2, requires_grad=True)
    y = _wrong_jvp(lib).apply(x * 3).sum()  # (a custom Function; its jvp is not used)
    mul = y.grad_fn.next_functions[0][0].next_functions[0][0]
    acc = mul.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    for node in (y.grad_fn, y.grad_fn.next_functions[0][0], mul, acc):
        assert isinstance(node, glib.Node) and issubclass(type(node), glib.Node)
    assert not isinstance(x, glib.Node) and not isinstance(object(), glib.Node)

    class Mine:
        pass

    glib.Node.register(Mine)
    assert isinstance(Mine(), glib.Node)
