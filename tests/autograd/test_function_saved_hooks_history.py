"""A custom Function's saved tensors, packed by saved_tensors_hooks (and so by checkpoint),
come back with their history: double backward through them works, as in PyTorch."""

import pytest
import torch

import ember


def _second_derivative(lib, wrap):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    a = lib.tensor([2.0], requires_grad=True)
    y = wrap(lib, lambda: Cube.apply(a * 1))  # (a non-leaf input)
    (g,) = lib.autograd.grad(y.sum(), a, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), a)
    return g.item(), gg.item()


def _hooked(lib, f):
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return f()


def _checkpointed(lib, f):
    checkpoint = lib.utils.checkpoint.checkpoint
    return checkpoint(lambda: f(), use_reentrant=False)


@pytest.mark.parametrize("wrap", [_hooked, _checkpointed])
def test_double_backward_through_packed_function_saves_like_torch(wrap):
    assert _second_derivative(ember, wrap) == _second_derivative(torch, wrap) == (12.0, 12.0)
