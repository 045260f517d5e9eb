"""Custom Functions in PyTorch 2's style: ``forward(*args)`` without ctx and a
``setup_context(ctx, inputs, output)``, under backward, ember.func transforms and forward
mode, against the same Function written for torch."""

import numpy as np
import torch

import ember
from ember.autograd import gradcheck

rng = np.random.default_rng(11)
X = rng.standard_normal(5)


def make(lib):
    """The same Function for ember and torch: y = x**3 and the sign of x (no gradient)."""

    class CubeSign(lib.autograd.Function):
        generate_vmap_rule = True  # torch's request to batch forward's ops; Ember needs none

        @staticmethod
        def forward(x):
            return x ** 3, lib.sign(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, g, _):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * t, None

    return CubeSign


ECube, TCube = make(ember), make(torch)


def test_backward_and_non_differentiable_outputs():
    x, tx = ember.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (y, s), (ty, ts) = ECube.apply(x), TCube.apply(tx)
    assert not s.requires_grad and not ts.requires_grad
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert gradcheck(lambda a: ECube.apply(a)[0], (ember.tensor(X, requires_grad=True),))


def test_func_transforms_and_forward_mode():
    x, tx = ember.tensor(X), torch.tensor(X)
    grad = ember.func.grad(lambda a: ECube.apply(a)[0].sum())(x)
    np.testing.assert_allclose(grad.numpy(), torch.func.grad(
        lambda a: TCube.apply(a)[0].sum())(tx).numpy(), rtol=1e-12)
    batched = ember.func.vmap(lambda a: ECube.apply(a)[0])(x.reshape(5, 1))
    np.testing.assert_allclose(batched.numpy(), torch.func.vmap(
        lambda a: TCube.apply(a)[0])(tx.reshape(5, 1)).numpy(), rtol=1e-12)
    ones = np.ones(5)
    _, tangent = ember.func.jvp(lambda a: ECube.apply(a)[0], (x,), (ember.tensor(ones),))
    _, ttangent = torch.func.jvp(lambda a: TCube.apply(a)[0], (tx,), (torch.tensor(ones),))
    np.testing.assert_allclose(tangent.numpy(), ttangent.numpy(), rtol=1e-12)


def test_mark_dirty_in_setup_context():
    class AddOneInPlace(ember.autograd.Function):
        @staticmethod
        def forward(x):
            return x.add_(1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g

    leaf = ember.tensor(X, requires_grad=True)
    x = leaf * 2
    y = AddOneInPlace.apply(x)
    assert y is x and y.grad_fn.name() == "AddOneInPlaceBackward"  # torch's name
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.full(5, 2.0))


def _exp_saving_its_output(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(output)
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def jvp(ctx, t):
            (y,) = ctx.saved_tensors  # (the output: it depends on x, so grad of jvp sees it)
            return t * y

    return Exp


def test_grad_of_a_jvp_that_reads_a_saved_output_matches_torch():
    def grad_of_tangent_sum(lib):
        exp = _exp_saving_its_output(lib)

        def tangent_sum(x):
            return lib.func.jvp(exp.apply, (x,), (lib.ones_like(x),))[1].sum()

        return lib.func.grad(tangent_sum)(lib.tensor(X, dtype=lib.float64)).numpy()

    results = [grad_of_tangent_sum(torch), grad_of_tangent_sum(ember)]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
    np.testing.assert_allclose(results[1], np.exp(X), rtol=1e-12)  # (not zeros)
