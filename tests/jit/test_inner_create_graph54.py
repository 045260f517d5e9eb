"""A compiled function that runs ``autograd.grad(..., create_graph=True)`` inside (a gradient
penalty) and returns the result: it stays differentiable, as in eager code and under
``torch.compile``, so a loss outside that adds it gets its gradient; a training step with such a
penalty inside (``backward()``, ``optimizer.step()``) still returns its loss without history."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import jit

CALLS = 3  # the trace, then the generated code twice
X = np.random.default_rng(0).standard_normal((5, 3))
Y = np.random.default_rng(1).standard_normal((5, 1))


def _model(T):
    """The same small net in ``T`` (ember or torch), float64."""
    T.manual_seed(0)
    m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 1)).double()
    if T is torch:
        with torch.no_grad():
            for p, q in zip(m.parameters(), _model(ember).parameters()):
                p.copy_(torch.tensor(q.detach().numpy()))
    return m


def _penalty_of_input(T, m, x):
    """WGAN-GP's penalty: the gradient of the critic with respect to its input."""
    (g,) = T.autograd.grad(m(x).sum(), x, create_graph=True)
    return ((g.norm(dim=1) - 1) ** 2).mean()


def _penalty_of_params(T, m, x):
    """The loss and the squared norm of its gradient with respect to the parameters."""
    loss = (m(x) ** 2).mean()
    grads = T.autograd.grad(loss, list(m.parameters()), create_graph=True)
    return loss, sum((g ** 2).sum() for g in grads)


def _outer_step(T, fn, compiled):
    """Per call: the penalty (from ``fn``) added to a loss outside, backward; the total and
    every gradient."""
    m = _model(T)

    def penalty(m, x):
        return fn(T, m, x)

    f = jit.compile(penalty) if compiled else penalty
    seen = []
    for call in range(CALLS):
        x = T.tensor(X * (call + 1), requires_grad=True)
        out = f(m, x)
        out = out if isinstance(out, tuple) else (out,)
        assert all(o.requires_grad for o in out)
        total = ((m(x) - T.tensor(Y)) ** 2).mean() + sum(out)
        total.backward()
        seen.append([total.detach().numpy(), x.grad.numpy()] +
                    [p.grad.detach().numpy().copy() for p in m.parameters()])
        for p in m.parameters():
            p.grad = None
    return seen


def test_a_returned_create_graph_gradient_requires_grad_and_backpropagates():
    def g(x):
        (gx,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
        return gx.sum()

    fast = jit.compile(g)
    for _ in range(CALLS):
        x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        r = fast(x)
        assert r.requires_grad and float(r) == 15.0
        r.backward()
        np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])  # d/dx sum(3 x^2), as torch
    assert fast.last.joint is not None  # (one differentiable compiled node, not eager)


@pytest.mark.parametrize("fn", [_penalty_of_input, _penalty_of_params])
def test_a_gradient_penalty_added_to_a_loss_outside_matches_eager_and_torch(fn):
    compiled, eager, ref = (_outer_step(ember, fn, True), _outer_step(ember, fn, False),
                            _outer_step(torch, fn, False))
    for c, e, t in zip(compiled, eager, ref):
        for a, b, r in zip(c, e, t):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(a, r, rtol=1e-8, atol=1e-10)


def test_the_compiled_penalty_passes_a_finite_difference_check():
    m = _model(ember)
    fast = jit.compile(lambda x: _penalty_of_input(ember, m, x))
    x = ember.tensor(X, requires_grad=True)
    fast(x)  # (traced: gradcheck's calls run the generated code)
    assert ember.autograd.gradcheck(fast, (x,))


def test_a_training_step_with_a_penalty_inside_still_returns_its_loss_without_history():
    def run(compiled):
        m = _model(ember)
        opt = ember.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            penalty = _penalty_of_input(ember, m, x)
            loss = ((m(x) - y) ** 2).mean() + 10 * penalty
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        f = jit.compile(step) if compiled else step
        losses = [f(ember.tensor(X * (i + 1), requires_grad=True), ember.tensor(Y))
                  for i in range(CALLS)]
        return losses, [p.detach().numpy() for p in m.parameters()]

    (fast_losses, fast_params), (losses, params) = run(True), run(False)
    assert not any(loss.requires_grad for loss in fast_losses)  # (a training step's loss)
    np.testing.assert_allclose([float(v) for v in fast_losses], [float(v) for v in losses])
    for a, b in zip(fast_params, params):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_an_output_whose_graph_a_plain_grad_inside_freed_comes_back_without_history():
    def f(x):
        loss = (x ** 3).sum()
        (g,) = ember.autograd.grad(loss, x, create_graph=True)
        (ember.autograd.grad(loss, x))  # frees loss's graph (eager: its backward would raise)
        return loss, (g ** 2).sum()

    fast = jit.compile(f)
    for _ in range(CALLS):
        x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        loss, penalty = fast(x)
        assert not loss.requires_grad and float(loss) == 9.0
        penalty.backward()  # sum(9 x^4): 36 x^3
        np.testing.assert_allclose(x.grad.numpy(), [36.0, 288.0])


def test_a_functional_step_with_a_penalty_inside_stays_a_compiled_training_step():
    def step(w, x, y):  # (no .grad, no optimizer: the argument is updated in place)
        (g,) = ember.autograd.grad((x @ w).sum(), x, create_graph=True)
        loss = ((x @ w - y) ** 2).mean()
        (gw,) = ember.autograd.grad(loss + (g ** 2).sum(), w)  # frees what it differentiated
        with ember.no_grad():
            w -= 0.1 * gw
        return loss

    def run(f):
        w = ember.tensor([[0.5], [-0.2], [0.1]], dtype=ember.float64, requires_grad=True)
        losses = [f(w, ember.tensor(X * (i + 1), requires_grad=True), ember.tensor(Y))
                  for i in range(CALLS)]
        return losses, w.detach().numpy()

    fast = jit.compile(step)
    (fast_losses, fast_w), (losses, w) = run(fast), run(step)
    assert fast.last.eager is None and not any(loss.requires_grad for loss in fast_losses)
    np.testing.assert_allclose([float(v) for v in fast_losses], [float(v) for v in losses])
    np.testing.assert_allclose(fast_w, w, rtol=1e-12)


def test_a_loss_returned_with_its_graph_retained_keeps_its_gradient_as_torch():
    def f(T):
        def g(x):
            loss = (x ** 3).sum()
            (gx,) = T.autograd.grad(loss, x, retain_graph=True)
            return loss, gx
        return g

    fast = jit.compile(f(ember))
    for _ in range(CALLS):
        grads = []
        for T, g in ((ember, fast), (ember, f(ember)), (torch, f(torch))):
            x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
            loss, gx = g(x)
            assert loss.requires_grad and not gx.requires_grad
            (loss + (x ** 2).sum()).backward()  # (the loss's part was dropped: 2x)
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[2])  # 3x^2 + 2x
        np.testing.assert_allclose(grads[1], grads[2])
