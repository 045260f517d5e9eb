"""Higher-order gradients under ``allow_mutation_on_saved_tensors``: the private copy of a
saved leaf leads back to the leaf, so a backward recorded with ``create_graph`` reaches it
(it reached a stray copy: parameters' second-order gradients were None). Against torch."""

import numpy as np
import torch

import ember


def _second_order(lib):
    w = lib.nn.Parameter(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64))
    x = lib.tensor([0.5, 1.5, 2.5], dtype=lib.float64)
    with lib.autograd.graph.allow_mutation_on_saved_tensors():
        (w * w * x).sum().backward(create_graph=True)
        first = w.grad.detach().numpy().copy()
        g = w.grad.sum()
        w.grad = None
        g.backward()
    return first, w.grad.numpy()


def test_backward_create_graph_gives_parameters_second_order_grads():
    for got, want in zip(_second_order(ember), _second_order(torch)):
        np.testing.assert_allclose(got, want)


def _mutated_leaves(lib):
    x = lib.tensor([0.5, 1.5, 2.5], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.allow_mutation_on_saved_tensors():
        gx, gw = lib.autograd.grad((w.sin() * x * x).sum(), (x, w), create_graph=True)
        with lib.no_grad():
            w.mul_(2)  # the saved values are the ones before
        hx, hw = lib.autograd.grad((gx * gw).sum(), (x, w))
    return [t.detach().numpy() for t in (gx, gw, hx, hw)]


def test_grad_create_graph_uses_saved_values_of_mutated_leaves():
    for got, want in zip(_mutated_leaves(ember), _mutated_leaves(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _function_saving_a_leaf(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.allow_mutation_on_saved_tensors():
        out = Square.apply(a).sum()
        with lib.no_grad():
            a.add_(10)  # a custom Function's saved leaf keeps its value too (it read 11, 12)
        (g,) = lib.autograd.grad(out, a, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), a)
    return g.detach().numpy(), gg.numpy()


def test_custom_function_saved_leaf_is_a_copy_that_leads_back_to_the_leaf():
    for got, want in zip(_function_saving_a_leaf(ember), _function_saving_a_leaf(torch)):
        np.testing.assert_allclose(got, want)
