"""Layouts around convolutions: leaves' gradients laid out as PyTorch lays them out, in-place
ops on pooled values keep their backward, and a view that cannot share the channels-last
memory a convolution leaves says why."""

import pytest
import torch
import torch.nn.functional as tF

import ember
import ember.nn.functional as F
from ember.errors import OpError


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_input_gradient_takes_the_inputs_strides(groups):
    def strides(lib, functional):
        x = lib.randn(2, 4, 6, 6).contiguous(memory_format=lib.channels_last).requires_grad_()
        y = functional.conv2d(x, lib.randn(4, 4 // groups, 3, 3), padding=1, groups=groups)
        y.backward(lib.ones_like(y))
        return x.grad.stride()

    assert strides(ember, F) == strides(torch, tF)


def test_leaf_gradient_takes_the_leafs_strides():
    w = ember.randn(3, 4).t().requires_grad_()  # dense, column-major
    (w * ember.arange(12.0).reshape(4, 3)).sum().backward()
    assert w.grad.stride() == w.stride()
    b = ember.randn(1, 3).expand(4, 3).detach().requires_grad_()  # overlapping: C order
    (b * 2).sum().backward()
    assert b.grad.is_contiguous()


@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool2d(x, 2),
    lambda x: ember.max(x, dim=1).values,
    lambda x: ember.min(x, dim=-1)[0],
])
def test_in_place_op_on_pooled_values_keeps_backward(pool):
    # max pooling and max/min over a dim keep the winners' positions, not the values, for
    # backward (as PyTorch's do), so nn.MaxPool2d followed by nn.ReLU(inplace=True) trains
    # (shifted up: with all 24 minima negative, which a plain randn gave 1 run in 5, the
    # gradient is all zeros and the test says nothing)
    x = (ember.randn(2, 3, 4, 4, dtype=ember.float64) + 1.5).requires_grad_()
    F.relu(pool(x), inplace=True).sum().backward()
    twin = x.detach().clone().requires_grad_()
    F.relu(pool(twin)).sum().backward()
    assert ember.equal(x.grad, twin.grad) and float(x.grad.abs().sum()) > 0


def test_flattening_view_after_conv_explains_the_layout():
    y = F.max_pool2d(F.conv2d(ember.randn(2, 3, 8, 8), ember.randn(10, 3, 3, 3)), 2)
    with pytest.raises(OpError, match="channels-last in memory.*flatten"):
        y.view(2, -1)
    assert ember.equal(y.flatten(1), y.reshape(2, -1))
    assert y.view(2, 10, 9).shape == (2, 10, 9)  # a view that keeps channels apart works


def test_retained_gradient_of_a_non_leaf_is_not_laid_out_like_it():
    def strides(lib):
        x = lib.randn(3, 4).t().detach().requires_grad_()
        y = x * 2
        y.retain_grad()
        (y * 3).sum().backward()
        return y.grad.stride(), x.grad.stride()

    assert strides(ember) == strides(torch)
