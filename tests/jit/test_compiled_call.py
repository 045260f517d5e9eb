"""A differentiable compiled call (one autograd node, ``ember.jit.autodiff``) against eager
code, on its tracing call and on later ones: in-place writes into its outputs and through
views among them, values saved for backward and then changed, ``retain_graph`` and
``create_graph``, arguments computed from one another, hooks."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import ember
from ember import jit
from ember.errors import GradError

CALLS = 3  # the trace, then the generated code twice


def _x(values=(1.0, 2.0, 3.0, 4.0)):
    return ember.tensor(list(values), dtype=ember.float64, requires_grad=True)


def _outcome(run):
    """What ``run()`` gives: its arrays, or the message of the GradError it raised."""
    try:
        result = run()
    except GradError as exc:
        return str(exc)
    return [np.asarray(r) for r in result]


def _compare(fn, scenario, raises=None):
    """``scenario(f)`` with ``f`` the eager function and the compiled one, for several calls:
    the same arrays, or both raise a GradError (matching ``raises`` when given)."""
    fast = jit.compile(fn)
    for call in range(CALLS):
        eager, compiled = _outcome(lambda: scenario(fn)), _outcome(lambda: scenario(fast))
        if isinstance(eager, str):
            assert isinstance(compiled, str), (call, eager, compiled)
            if raises:
                assert raises in compiled, (call, compiled)
            continue
        assert not isinstance(compiled, str), (call, compiled)
        assert len(eager) == len(compiled)
        for e, c in zip(eager, compiled):
            np.testing.assert_allclose(c, e, err_msg=f"call {call}")
    return fast


def _base_and_view(x):
    y = x * 2
    return y, y[1:]


def test_write_through_a_returned_view_then_backward_through_its_base():
    def scenario(f):
        x = _x()
        base, view = f(x)
        view.mul_(5)
        base.sum().backward()
        return base.detach().numpy(), x.grad.numpy()

    _compare(_base_and_view, scenario)


def test_write_into_a_returned_base_then_backward_through_its_view():
    def scenario(f):
        x = _x()
        base, view = f(x)
        base.mul_(5)
        view.sum().backward()
        return view.detach().numpy(), x.grad.numpy()

    _compare(_base_and_view, scenario)


def test_views_of_a_tensor_the_function_does_not_return():
    def fn(x):
        y = x * 2
        return y[1:], y[:3]

    def scenario(f):
        x = _x()
        right, left = f(x)
        right.mul_(5)  # (changes left[1:] too)
        (left * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
        return left.detach().numpy(), x.grad.numpy()

    _compare(fn, scenario)


def test_an_output_saved_for_backward_then_modified_raises_on_every_call():
    def scenario(f):
        x = _x()
        y = f(x)
        y.mul_(2)
        y.sum().backward()
        return (x.grad.numpy(),)

    _compare(lambda x: x.exp(), scenario, raises="modified in place")


def test_a_view_of_an_argument_shares_its_memory_and_version():
    def fn(x, w):
        return x[1:], (x * w).sum()

    def scenario(f):
        a = _x()
        x = a * 1  # (not a leaf: it may be written in place)
        w = _x((0.5, 1.5, 2.5, 3.5))
        view, loss = f(x, w)
        view.mul_(3)  # x changes, and x was saved to give w its gradient
        loss.backward()
        return w.grad.numpy(), x.detach().numpy()

    _compare(fn, scenario, raises="modified in place")

    def scenario2(f):
        a = _x()
        x = a * 1
        w = _x((0.5, 1.5, 2.5, 3.5))
        view, loss = f(x, w)
        view.mul_(3)
        (x.sum() + view.sum()).backward()
        return a.grad.numpy(), x.detach().numpy()

    _compare(fn, scenario2)


def test_a_detached_output_shares_the_argument_counter():
    def fn(x, w):
        return x.detach(), (x * w).sum()

    def scenario(f):
        x = _x() * 1
        w = _x((0.5, 1.5, 2.5, 3.5))
        d, loss = f(x, w)
        assert not d.requires_grad
        d.add_(1)
        loss.backward()
        return (w.grad.numpy(),)

    _compare(fn, scenario, raises="modified in place")


def test_outputs_are_the_same_tensors_as_in_eager_and_own_their_memory():
    lin = ember.nn.Linear(2, 2).double()

    def fn(x):
        y = x * 2
        return y, y, x * 3, x * 3, x, lin.weight

    fast = jit.compile(fn)
    for _ in range(CALLS):
        x = _x((1.0, 2.0))
        y1, y2, a, b, same, w = fast(x)
        assert y1 is y2 and same is x and w is lin.weight
        a.add_(1)  # (the passes make x * 3 once: each output still has its own memory)
        np.testing.assert_allclose(b.detach().numpy(), [3.0, 6.0])


def test_a_constant_output_is_a_fresh_tensor_each_call():
    fast = jit.compile(lambda x: (x * 2, ember.zeros(2)))
    for _ in range(CALLS):
        _, z = fast(_x((1.0, 2.0)))
        np.testing.assert_allclose(z.numpy(), [0.0, 0.0])
        z.add_(10)


def test_create_graph_through_a_compiled_call_is_refused_clearly_on_every_call():
    fast = jit.compile(lambda x: (x.sin() * x * x).sum())
    for _ in range(CALLS):
        x = _x((0.5, 1.0))
        (g,) = ember.autograd.grad(fast(x), x, create_graph=True)  # (first order: fine)
        np.testing.assert_allclose(g.detach().numpy(), (x.detach().cos() * x.detach() ** 2
                                                        + 2 * x.detach() * x.detach().sin()
                                                        ).numpy())
        with pytest.raises(GradError, match="cannot be differentiated again"):
            ember.autograd.grad(g.sum(), x)


def test_retain_graph_works_through_a_compiled_call_on_every_call():
    def scenario(f):
        x = _x((0.5, 1.0))
        y = f(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return (x.grad.numpy(),)

    _compare(lambda x: x.sin() * x, scenario)

    fast = jit.compile(lambda x: x.sin() * x)
    for _ in range(CALLS):
        y = fast(_x((0.5, 1.0))).sum()
        y.backward()
        with pytest.raises(GradError, match="a second time"):
            y.backward()


def test_the_saved_values_are_freed_by_backward_unless_retained():
    fast = jit.compile(lambda x: x.exp())
    for _ in range(CALLS):
        x = _x()
        y = fast(x)
        ctx = y.grad_fn.params["ctx"]
        y.sum().backward(retain_graph=True)
        kept = "roots" if hasattr(ctx, "roots") else "saved"  # (the trace's node, the others')
        assert getattr(ctx, kept) is not None
        y.sum().backward()
        assert getattr(ctx, kept) is None


def test_the_trace_call_lets_its_eager_graph_go_after_backward():
    fast = jit.compile(lambda x: x.exp())
    x = _x()
    y = fast(x)  # the trace
    inner = weakref.ref(y.grad_fn.params["ctx"].roots[0])
    y.sum().backward()
    gc.collect()
    assert inner() is None


def test_an_argument_computed_from_another_argument():
    def scenario(f):
        z = _x((1.0, 2.0))
        x = z * 2
        f(x, z).backward()
        return (z.grad.numpy(),)

    _compare(lambda x, z: (x * z).sum(), scenario)


def test_hooks_of_parameters_and_arguments_run_once():
    lin = ember.nn.Linear(2, 1).double()
    lin.weight.register_hook(lambda g: g * 7)
    fast = jit.compile(lin)
    x = ember.tensor([[1.0, 2.0]], dtype=ember.float64)
    lin(x).sum().backward()
    expected = lin.weight.grad.numpy().copy()
    for _ in range(CALLS):
        lin.weight.grad = None
        fast(x).sum().backward()
        np.testing.assert_allclose(lin.weight.grad.numpy(), expected)

    def scenario(f):
        a = _x((1.0, 2.0))
        h = a * 1
        h.register_hook(lambda g: g * 3)
        h.retain_grad()
        f(h).sum().backward()
        return a.grad.numpy(), h.grad.numpy()

    _compare(lambda h: h.exp(), scenario)


def test_a_buffer_changed_in_place_before_backward_raises():
    scale = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)

    def scenario(f):
        x = _x()
        y = f(x)
        with ember.no_grad():
            scale.add_(1)
        y.sum().backward()
        return (x.grad.numpy(),)

    _compare(lambda x: x * scale, scenario, raises="modified in place")


def test_a_captured_tensor_with_history_gets_its_gradient():
    a = _x((1.0, 2.0))
    h = a * 3  # (captured by the function: state, with a history of its own)

    def scenario(f):
        a.grad = None
        y = _x((1.0, 1.0))
        f(y).backward(retain_graph=True)  # (h's history is used again by the next call)
        return a.grad.numpy(), y.grad.numpy()

    _compare(lambda y: (y * h).sum(), scenario)
