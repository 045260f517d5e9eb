"""ember.while_loop: eager values, errors and gradients against torch's while_loop; compiled
forward, generated code, compiled backward (first derivatives) and training steps."""

import numpy as np
import pytest
import torch
from torch._higher_order_ops import while_loop as torch_while_loop

import ember
from ember.errors import GradError, OpError

X = np.array([0.5, -1.0, 2.0])


def _cond(i, x):
    return i < 3


def _body(i, x):
    return i + 1, x.sin() * 2


def test_eager_values_and_gradients_match_torch():
    x = ember.tensor(X, requires_grad=True)
    i, y = ember.while_loop(_cond, _body, (ember.tensor(0), x))
    y.sum().backward()
    xt = torch.tensor(X, requires_grad=True)
    it, yt = torch_while_loop(_cond, _body, (torch.tensor(0), xt))
    yt.sum().backward()
    assert i.item() == it.item() == 3
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_no_iteration_returns_copies():
    x = ember.tensor(X)
    i, y = ember.while_loop(lambda i, x: i > 5, _body, [ember.tensor(0), x])
    assert i.item() == 0 and y.tolist() == X.tolist() and y._data is not x._data


@pytest.mark.parametrize("cond_fn, body_fn, carried, message", [
    (_cond, lambda i, x: (i + 1, x.sum()), "ok", "output 1 is f64"),
    (_cond, lambda i, x: (i + 1,), "ok", "returned 1 values for 2"),
    (_cond, lambda i, x: x * 2, "ok", "must return a tuple"),
    (lambda i, x: x > 0, _body, "ok", "boolean scalar"),
    (_cond, lambda i, x: (i + 1, x), "ok", "aliases"),
    (_cond, _body, "tensor", "tuple or list of tensors"),
    (3, _body, "ok", "callable"),
])
def test_errors(cond_fn, body_fn, carried, message):
    x = ember.tensor(X)
    carried = (ember.tensor(0), x) if carried == "ok" else x
    with pytest.raises(OpError, match=message):
        ember.while_loop(cond_fn, body_fn, carried)


def _count_to(n, x):
    return ember.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x.cos() + x),
                            (ember.tensor(0), x))


def test_compiled_loop_runs_a_data_dependent_trip_count():
    fast = ember.jit.compile(_count_to)
    x = ember.tensor(X)
    for n in (4, 0, 2):
        got, want = fast(ember.tensor(n), x), _count_to(ember.tensor(n), x)
        assert got[0].item() == n
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-12)
    assert "while_loop(" in str(fast.graph) and "graph body_fn(" in str(fast.graph)
    code = fast.code
    assert "while while_loop_cond(" in code and "def while_loop_body(" in code
    assert "test_while_loop.py" in code.splitlines()[
        next(i for i, line in enumerate(code.splitlines()) if "xp.array(" in line)]


def _layer_loop(layer):
    def run(n, x):
        return ember.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, layer(h).tanh()),
                                (ember.tensor(0), x))[1]
    return run


def test_compiled_loop_over_a_layer_runs_and_differentiates_as_eager():
    ember.manual_seed(0)
    layer = ember.nn.Linear(3, 3).double()  # (its parameters require grad: no no_grad here)
    eager = _layer_loop(layer)
    fast = ember.jit.compile(eager)
    x = ember.tensor(X, requires_grad=True)
    for n in (2, 0, 3):
        got, want = fast(ember.tensor(n), x), eager(ember.tensor(n), x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        grads = [ember.autograd.grad(y.sum(), [x, layer.weight], allow_unused=True)
                 for y in (got, want)]
        for g, h in zip(*grads):  # (no iteration: eager's None, the equation's zeros)
            h = ember.zeros_like(g) if h is None else h
            np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-10)


def test_compiled_training_step_with_a_loop_matches_eager():
    def make():
        ember.manual_seed(1)
        layer = ember.nn.Linear(3, 3).double()
        opt = ember.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        run = _layer_loop(layer)

        def step(n, x):
            loss = (run(n, x) ** 2).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step, layer

    (eager, eager_layer), (fast, fast_layer) = make(), make()
    fast = ember.jit.compile(fast)
    for n in (2, 3, 1, 2):
        np.testing.assert_allclose(fast(ember.tensor(n), ember.tensor(X)).item(),
                                   eager(ember.tensor(n), ember.tensor(X)).item(), rtol=1e-10)
    np.testing.assert_allclose(fast_layer.weight.detach().numpy(),
                               eager_layer.weight.detach().numpy(), rtol=1e-10)


def test_compiled_second_derivative_raises_clearly():
    def second(x):
        g, = ember.autograd.grad(_count_to(ember.tensor(2), x)[1].sum(), x, create_graph=True)
        return ember.autograd.grad(g.sum(), x)[0]

    with pytest.raises(GradError, match="while_loop: a second derivative"):
        ember.jit.compile(second)(ember.tensor(X, requires_grad=True))


def test_vmap_runs_each_sample_its_own_trip_count():
    n, x = ember.tensor([0, 2, 5]), ember.tensor(np.stack([X, -X, 2 * X]))
    i, y = ember.vmap(_count_to)(n, x)
    assert i.tolist() == [0, 2, 5]
    for k in range(3):
        np.testing.assert_allclose(y[k].numpy(), _count_to(n[k], x[k])[1].numpy(), rtol=1e-12)
    np.testing.assert_allclose(ember.jit.compile(ember.vmap(_count_to))(n, x)[1].numpy(),
                               y.numpy(), rtol=1e-12)


def test_writing_a_carried_value_in_the_body_raises():
    with pytest.raises(OpError, match="body_fn writes in place into its operand"):
        ember.while_loop(lambda x: x.sum() < 10, lambda x: (x.add_(1) * 1,), (ember.ones(2),))


def test_vmap_of_grad_gives_each_sample_its_gradient():
    def loss(n, x):
        return _count_to(n, x)[1].sum()

    n, x = ember.tensor([0, 2, 5]), ember.tensor(np.stack([X, -X, 2 * X]))
    got = ember.vmap(ember.func.grad(loss, argnums=1))(n, x)
    for k in range(3):
        want = ember.func.grad(loss, argnums=1)(n[k], x[k])
        np.testing.assert_allclose(got[k].numpy(), want.numpy(), rtol=1e-12)


def test_compiled_gradient_of_a_random_loop_raises_clearly():
    fast = ember.jit.compile(lambda x: ember.while_loop(
        lambda i, h: i < 2, lambda i, h: (i + 1, h * ember.rand(3)), (ember.tensor(0), x))[1])
    with pytest.raises(GradError, match="draws random numbers"):
        fast(ember.tensor(X, requires_grad=True))


def test_loop_gradient_never_returns_an_input_array():
    from ember.jit.control.loop_grad import Loop, loop_grad_primitive

    fast = ember.jit.compile(_count_to)
    fast(ember.tensor(0), ember.tensor(X))
    eqn = next(e for e in fast.graph.eqns if e.prim.name == "while_loop")
    loop = Loop(eqn.params["cond_graph"], eqn.params["body_graph"], 2, ember.tensor(X).device,
                (False, True, False))
    cotangent = np.ones(3)  # (no iteration: the gradient is the cotangent's value, copied)
    grad = loop_grad_primitive(1).forward(np, np.array(5), X.copy(), np.array(0), cotangent,
                                          loop=loop)
    assert grad.tolist() == [1.0, 1.0, 1.0] and not np.shares_memory(grad, cotangent)
