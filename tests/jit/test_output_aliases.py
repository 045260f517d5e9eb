"""Outputs of a compiled call that share memory with an argument (a view of it, the argument
written in place and returned, a ``detach()``), in calls whose outputs need no grad (under
``no_grad``, or from arguments that need none): they share its memory and version counter,
as eager's, so in-place writes through one are seen by the other and by autograd."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import jit

CALLS = 3  # the trace, then two cached calls


def _outcome(run):
    try:
        return run()
    except Exception as exc:  # (the same error, eager and compiled)
        return type(exc).__name__


@pytest.mark.parametrize("fn", [
    lambda a: a[1:],
    lambda a: a.t()[0:2] if a.ndim > 1 else a.view(2, 2)[0],
    lambda a: a.mul_(2),
    lambda a: a.detach()[1:],
    lambda a: (a[1:], a * 2),
], ids=["slice", "view", "inplace-returned", "detach-view", "view-and-new"])
def test_an_output_sharing_an_argument_shares_its_memory_and_version(fn):
    def scenario(f):
        a = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)
        with ember.no_grad():
            out = f(a)
        y = out[0] if isinstance(out, tuple) else out
        before = a._version
        y.add_(1)  # through the output: the argument sees it, its counter moves
        return a.tolist(), a._version - before, y._version == a._version
    fast = jit.compile(fn)
    eager = scenario(fn)
    for _ in range(CALLS):
        assert scenario(fast) == eager


def test_a_write_into_the_argument_after_the_call_is_seen_by_backward_through_the_view():
    def scenario(f):
        w = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64, requires_grad=True)
        a = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)
        y = f(a)  # (needs no grad: the plain graph, not a differentiable call)
        loss = (w[1:] * y).exp().sum()  # exp saves its output, mul saves y
        a.mul_(2)  # y's version moves: backward must refuse, as eager's
        return _outcome(lambda: (loss.backward(), w.grad.tolist())[1])
    fn = lambda a: a[1:]  # noqa: E731
    fast = jit.compile(fn)
    eager = scenario(fn)
    assert eager == "GradError"
    for _ in range(CALLS):
        assert scenario(fast) == eager


def test_the_values_of_an_argument_written_and_returned_stay_one_tensor():
    fn = lambda a: a.mul_(2)  # noqa: E731
    fast = jit.compile(fn)
    for _ in range(CALLS):
        a = ember.tensor([1.0, 2.0, 3.0])
        y = fast(a)
        assert y is a
        np.testing.assert_array_equal(a.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("fn", [
    lambda x: (x + 1, ember.zeros(3)),  # (a constant the graph keeps for every call)
    lambda x: (x + 1, x + 1),  # (two equal outputs, one after CSE)
    lambda x: (x * 2, x + 0.0),
], ids=["constant", "equal-outputs", "simplified"])
def test_writing_into_an_output_changes_nothing_else_nor_later_calls(fn):
    def scenario(f):
        x = ember.tensor([1.0, 2.0, 3.0])
        with ember.no_grad():
            outs = f(x)
        outs[-1].add_(10)
        return x.tolist(), [o.tolist() for o in outs]
    fast = jit.compile(fn)
    eager = scenario(fn)
    for _ in range(CALLS):
        assert scenario(fast) == eager


def test_an_argument_written_in_place_and_returned_with_grad_runs_as_eager():
    def fn(a):
        return a.mul_(2)

    def scenario(f):
        w = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
        a = w * 1.0
        y = f(a)
        (y * y).sum().backward()
        return y is a, a._version, w.grad.tolist()
    fast = jit.compile(fn)
    eager = scenario(fn)
    for _ in range(CALLS):
        assert scenario(fast) == eager
    assert "writes in place into argument a" in jit.explain()[-1]
    with pytest.raises(jit.TraceError, match="fullgraph=True.*argument a"):
        ember.compile(fn, fullgraph=True)(ember.ones(2, requires_grad=True) * 1.0)


def test_outputs_the_graph_surely_makes_afresh_are_not_checked_at_each_call():
    ember.manual_seed(0)
    mlp = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    fast, twice = jit.compile(mlp), jit.compile(lambda x: (x + 1, x + 1))
    with ember.no_grad():
        for _ in range(CALLS):
            fast(ember.ones(3, 4)), twice(ember.ones(3))
    assert fast.last.fresh_outputs is True  # (a matmul, an add: no memory to compare)
    assert twice.last.fresh_outputs is False  # (one variable twice: copied)


@pytest.mark.parametrize("fn", [
    lambda y: y[1:].detach(),
    lambda y: y.t()[1:].data,
    lambda y: (lambda z: (z, z[1:].detach()))(y * 2),
], ids=["detach-of-slice", "data-of-view", "detach-of-view-of-output"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "requires_grad"])
def test_a_detach_of_a_view_shares_memory_and_version_as_eager(fn, grad):
    def scenario(f):
        y = ember.arange(12.0, dtype=ember.float64).reshape(3, 4).requires_grad_(grad)
        out = f(y)
        d = out[-1] if isinstance(out, tuple) else out
        src = out[0] if isinstance(out, tuple) else y
        with ember.no_grad():
            d.add_(100)  # through the detach: what it views sees it
        return (d.requires_grad, d._base is None, d.stride(), d._vc is src._vc,
                src.tolist(), d.tolist())
    fast = jit.compile(fn)
    eager = scenario(fn)
    for _ in range(CALLS):
        assert scenario(fast) == eager


@pytest.mark.parametrize("fn", [
    lambda y: y[1:].detach().mul_(2),
    lambda y: (y[1:].data.mul_(2), y * 1)[1],
    lambda y: (y[1:].detach()[1:].clamp_(0, 3), y[1:] + 0)[1],
    lambda y: _written_after_its_base_is_gone(y),
], ids=["returned", "base-read-after", "view-of-detach-of-view", "base-gone"])
def test_a_write_through_a_detach_of_a_view_reaches_the_argument(fn):
    def scenario(f):
        y = ember.arange(6.0, dtype=ember.float64).reshape(3, 2)
        out = f(y)
        return y.tolist(), out.tolist(), np.shares_memory(out.numpy(), y.numpy())
    fast = jit.compile(fn)
    eager = scenario(fn)
    for _ in range(CALLS):
        assert scenario(fast) == eager


def _written_after_its_base_is_gone(y):
    d = (y * 2).view(-1)[:4].data  # (the product is dropped: only d holds its memory)
    d[1:].detach().mul_(3)
    return d
