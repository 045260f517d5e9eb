"""Compiled calls against eager ones: wrong answers found by the session-66 sweep."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _copy_then_write(x):
    y = ember.zeros(3)
    y.copy_(x)  # (in the graph y holds x's value: the argument's own array)
    x.mul_(2)
    return y


def _copy_view_then_write(x, z):
    y = ember.zeros(2)
    y.copy_(x[1:])
    x.copy_(z)
    return y, x[:1]


@pytest.mark.parametrize("grad", [False, True])
def test_output_copied_from_an_argument_keeps_its_value_when_the_argument_is_written(grad):
    compiled = ember.jit.compile(_copy_then_write)
    for _ in range(3):  # (the first call traces; later ones run the graph)
        x, ex = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 2.0, 3.0])
        with ember.set_grad_enabled(grad):
            y, ey = compiled(x), _copy_then_write(ex)
        np.testing.assert_array_equal(y.numpy(), ey.numpy())
        np.testing.assert_array_equal(x.numpy(), ex.numpy())
        assert not np.shares_memory(y.numpy(), x.numpy())


def test_output_copied_from_a_view_of_a_written_argument():
    compiled = ember.jit.compile(_copy_view_then_write)
    for _ in range(3):
        x, z = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([4.0, 5.0, 6.0])
        y, head = compiled(x, z)
        np.testing.assert_array_equal(y.numpy(), [2.0, 3.0])
        np.testing.assert_array_equal(head.numpy(), [4.0])  # (a view: sees the write)
        assert np.shares_memory(head.numpy(), x.numpy())


def test_output_copied_from_a_grad_that_backward_then_accumulates_into():
    w = ember.ones(3, requires_grad=True)

    def step(x, v):
        y, z = ember.zeros(3), ember.zeros(3)
        y.copy_(w.grad)  # (a .grad the call's backward then adds into, in place)
        z.copy_(v.grad)
        (x * w + x * v).sum().backward()
        return y, z

    compiled = ember.jit.compile(step)
    w.grad = ember.ones(3)
    for k in range(3):
        v = ember.ones(3, requires_grad=True)
        v.grad = ember.ones(3)
        y, z = compiled(ember.tensor([1.0, 2.0, 3.0]), v)
        np.testing.assert_array_equal(y.numpy(), 1 + k * np.array([1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(z.numpy(), [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(v.grad.numpy(), [2.0, 3.0, 4.0])


@pytest.mark.parametrize("differentiable", [False, True])
def test_output_copied_from_a_grad_owns_its_memory(differentiable):
    w = ember.ones(3, requires_grad=True)

    def f(x):
        y = ember.zeros(3)
        y.copy_(w.grad)
        return x * w, y

    compiled = ember.jit.compile(f)
    w.grad = ember.ones(3)
    for k in range(3):
        _, y = compiled(ember.ones(3, requires_grad=differentiable))
        np.testing.assert_array_equal(y.numpy(), [1.0 + 5 * k] * 3)
        w.grad.add_(5)  # (the caller's .grad, written after the call: y keeps its value)
        np.testing.assert_array_equal(y.numpy(), [1.0 + 5 * k] * 3)


def _copies_around_a_step(opt_class, compiled, **kwargs):
    """Four calls of a step returning copies (``copy_`` into new tensors) of a weight, its
    gradient and the optimizer's first state tensor, taken before the step and
    ``zero_grad`` write them in place, and a value computed from them after."""
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2)
    opt = opt_class(m.parameters(), lr=0.5, **kwargs)

    def step(x):
        before, g, s = ember.zeros(2, 3), ember.zeros(2, 3), ember.zeros(2, 3)
        before.copy_(m.weight.detach())
        (m(x) ** 2).sum().backward()
        g.copy_(m.weight.grad)
        if m.weight in opt.state:
            s.copy_(next(iter(opt.state[m.weight].values())))  # (Adam's: its step count)
        opt.step()
        opt.zero_grad(set_to_none=False)
        return before, g, s, before * 2 + g

    f = ember.jit.compile(step) if compiled else step
    return [[t.numpy().copy() for t in f(ember.ones(4, 3) * (i + 1))] for i in range(4)]


@pytest.mark.parametrize("opt_class, kwargs", [(ember.optim.SGD, {"momentum": 0.9}),
                                               (ember.optim.Adam, {"amsgrad": True})])
def test_copies_taken_before_an_optimizer_step_keep_their_values(opt_class, kwargs):
    eager = _copies_around_a_step(opt_class, False, **kwargs)
    compiled = _copies_around_a_step(opt_class, True, **kwargs)
    for e, c in zip(eager, compiled):
        for a, b in zip(e, c):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


def _accumulates(x, w):
    loss = (x * w).sum() ** 2
    loss.backward()
    return loss.detach(), x.grad


def test_a_returned_argument_grad_is_that_grad_when_backward_adds_into_it():
    compiled = ember.jit.compile(_accumulates)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    for _ in range(4):  # (from the second call on, x.grad exists: the sum goes into it)
        _, g = compiled(x, w)
        assert g is x.grad  # (as eager: a later accumulation shows in g)


def test_a_returned_grad_left_alone_is_that_grad():
    w = ember.ones(3, requires_grad=True)
    w.grad = ember.tensor([1.0, 2.0, 3.0])
    compiled = ember.jit.compile(lambda x: (x * w.grad.sum(), w.grad, x.grad))
    for _ in range(3):
        x = ember.ones(3, requires_grad=True)
        x.grad = ember.tensor([4.0, 5.0, 6.0])
        with ember.no_grad():
            _, g, h = compiled(x)
        assert g is w.grad and h is x.grad


def _copy_across(x, z):
    z.copy_(x)  # (z's new value: x's memory, which x's own write changes)
    x.add_(1)


def test_an_argument_written_from_another_written_argument():
    compiled = ember.jit.compile(_copy_across)
    for _ in range(3):
        x, z = ember.tensor([1.0, 2.0]), ember.tensor([10.0, 20.0])
        compiled(x, z)
        assert x.tolist() == [2.0, 3.0] and z.tolist() == [1.0, 2.0]


def _keeps_hidden_grad(x):
    h = x * 2
    h.retain_grad()
    return (h * h).sum(), h


def test_an_output_the_function_retains_the_grad_of_gets_it():
    compiled = ember.jit.compile(_keeps_hidden_grad)
    for _ in range(3):
        x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss, h = compiled(x)
        loss.backward()
        assert h.grad.tolist() == [4.0, 8.0, 12.0]  # (d loss / d h = 2h, as eager)
        assert x.grad.tolist() == [8.0, 16.0, 24.0]
    assert any("retain_grad" in r for r in ember.jit.explain())


def _momentum_copied_then_halved(compiled):
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2)
    opt = ember.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)

    def step(x):
        (m(x) ** 2).sum().backward()
        snap = ember.zeros(2, 3)
        if m.weight in opt.state:
            buf = opt.state[m.weight]["momentum_buffer"]
            snap.copy_(buf)
            buf.mul_(0.5)  # (written into its memory just before the step reads it)
        opt.step()
        opt.zero_grad()
        return snap

    f = ember.jit.compile(step) if compiled else step
    return [f(ember.ones(4, 3) * (i + 1)).numpy().copy() for i in range(4)]


def test_a_copy_of_optimizer_state_written_before_the_step_keeps_its_value():
    for e, c in zip(_momentum_copied_then_halved(False), _momentum_copied_then_halved(True)):
        np.testing.assert_allclose(c, e, rtol=1e-6)


def _writes_around_a_step(compiled, before, after):
    """Four calls of an SGD step on a Linear layer with the no-grad writes ``before(m)`` and
    ``after(m)`` (each returning the values to return) around ``opt.step()``."""
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2)
    opt = ember.optim.SGD(m.parameters(), lr=0.3, momentum=0.9)

    def step(x):
        (m(x) ** 2).sum().backward()
        with ember.no_grad():
            out = before(m)
        opt.step()
        opt.zero_grad()
        with ember.no_grad():
            out += after(m)
        return out

    f = ember.jit.compile(step) if compiled else step
    return [[t.numpy().copy() for t in f(ember.ones(4, 3) * (i + 1) / 4)] +
            [m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()] for i in range(4)]


def _nothing(m):
    return []


def _bias_from_weight(m):
    m.bias.copy_(m.weight[:, 0])  # (a view of the weight's memory)
    m.weight[0] += 0.1
    return []


def _snapshot_row(m):
    snap = ember.zeros(3)
    snap.copy_(m.weight[1])
    m.weight.mul_(0.9)
    return [snap]


@pytest.mark.parametrize("before, after", [(_nothing, _bias_from_weight),
                                           (_bias_from_weight, _nothing),
                                           (_bias_from_weight, _snapshot_row),
                                           (_nothing, _snapshot_row)])
def test_values_on_a_parameters_memory_around_a_step(before, after):
    eager = _writes_around_a_step(False, before, after)
    for e, c in zip(eager, _writes_around_a_step(True, before, after)):
        for a, b in zip(e, c):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def _equal_values_one_zeroed(compiled):
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        (m(x) ** 2).sum().backward()
        opt.step()
        with ember.no_grad():
            m.weight.grad.copy_(m.weight * 2)
            s = m.weight * 2  # (the same computation: CSE must not make it the .grad's)
        opt.zero_grad(set_to_none=False)  # (zeroes the .grad in place)
        return s

    f = ember.jit.compile(step) if compiled else step
    return [f(ember.ones(4, 3)).numpy().copy() for _ in range(4)]


def test_cse_keeps_apart_a_value_an_effect_writes_in_place():
    for e, c in zip(_equal_values_one_zeroed(False), _equal_values_one_zeroed(True)):
        np.testing.assert_allclose(c, e, rtol=1e-6)


def _grad_view_outputs(f, compiled: bool) -> list:
    w = ember.ones(3, requires_grad=True)
    w.grad = ember.ones(3)
    g = ember.jit.compile(lambda x: f(x, w)) if compiled else (lambda x: f(x, w))
    seen = []
    for _ in range(3):
        out = g(ember.ones(3))
        w.grad.add_(5)  # (a view of w.grad shows it, as eager's; a copy of it does not)
        seen.append(out[-1].tolist())
    return seen


def _copy_then_view(x, w):
    y = ember.empty(3)
    y.copy_(w.grad)
    return x * 2, y[1:]


@pytest.mark.parametrize("f", [
    lambda x, w: (x * w, w.grad[1:]),  # (a differentiable call)
    lambda x, w: (x * 2, w.grad[1:]),
    lambda x, w: (x[1:], w.grad[1:]),  # (an argument's view too: the outputs' plan)
    lambda x, w: (x * 2, w.grad),
    _copy_then_view,
])
def test_returned_views_of_a_grad_share_its_memory_as_eager(f):
    assert _grad_view_outputs(f, True) == _grad_view_outputs(f, False)
