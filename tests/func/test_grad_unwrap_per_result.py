"""torch.func unwraps each result of a reverse level on its own: with ``argnums=(0, 1)``, a
gradient that depends only on the other differentiated argument needs no grad, even where
its sibling depends on a tensor the caller differentiates (it required grad before)."""

import numpy as np
import torch
import torch.func as tf

import ember
import ember.func as ef

W = np.arange(6.0).reshape(2, 3) / 5
X = np.array([1.0, -2.0, 0.5])


def _grads(mod, func):
    b = mod.tensor(np.array([0.3, -0.7]), requires_grad=True)
    w = mod.tensor(W)

    def f(wa, wb):
        return (wb * (func(wa, mod.tensor(X)) + b[:, None])).sum()
    return mod.func.grad(f, argnums=(0, 1))(w, w * 2)


def test_each_gradient_needs_grad_only_if_its_own_tape_reaches_the_caller():
    got = _grads(ember, lambda wa, x: wa * x)
    want = _grads(torch, lambda wa, x: wa * x)
    assert [g.requires_grad for g in got] == [g.requires_grad for g in want] == [False, True]
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-12)


def test_functional_call_gradients_of_untied_layers_as_torch():
    def run(mod, fn):
        net = mod.nn.Sequential(mod.nn.Linear(3, 2, dtype=mod.float64),
                                mod.nn.Linear(2, 2, dtype=mod.float64))
        with mod.no_grad():
            net[0].bias.copy_(mod.tensor([0.3, -0.7]))
            net[1].bias.copy_(mod.tensor([1.5, 0.25]))
        params = {"0.weight": mod.tensor(W), "1.weight": mod.tensor(W[:, :2] * 2)}
        x = mod.tensor(X[None])
        return fn.grad(lambda p: fn.functional_call(net, p, (x,)).sum())(params)
    got, want = run(ember, ef), run(torch, tf)
    for k in want:
        assert got[k].requires_grad == want[k].requires_grad, k
        np.testing.assert_allclose(got[k].detach().numpy(), want[k].detach().numpy(),
                                   rtol=1e-12)


def test_grad_of_grad_keeps_the_inner_result_differentiable():
    x = ember.tensor([0.5, -1.0], dtype=ember.float64)
    g = ef.grad(lambda t: ef.grad(lambda s: (s ** 3).sum())(t).sum())(x)
    np.testing.assert_allclose(g.numpy(), 6 * x.numpy(), rtol=1e-12)


def test_jacrev_and_hessian_blocks_need_grad_as_torch():
    def run(mod):
        w = mod.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
        x = mod.tensor(X)
        jac = mod.func.jacrev(lambda a, b: a * w + b * b, argnums=(0, 1))(x, x)
        hes = mod.func.hessian(lambda a, b: (a * a * w).sum() + (b ** 3).sum(),
                               argnums=(0, 1))(x, x)
        return [jac[0], jac[1], hes[0][0], hes[0][1], hes[1][0], hes[1][1]]
    got, want = run(ember), run(torch)
    assert [g.requires_grad for g in got] == [t.requires_grad for t in want]
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-12)
