"""Narrowing nested tensors, and ember.nested.narrow of a dense tensor, against torch."""

import numpy as np
import pytest
import torch

import ember
from tests.nested.helpers import assert_close, pair


@pytest.mark.parametrize("call", [lambda m, nt: nt.narrow(2, 1, 2),
                                  lambda m, nt: m.narrow(nt, -1, 0, 1),
                                  lambda m, nt: nt.narrow(2, -2, 2)])
def test_narrow_of_an_inner_dim_matches_torch(call):
    nt, tnt = pair()
    assert_close(call(ember, nt), call(torch, tnt))


def test_narrow_of_an_inner_dim_gradcheck():  # (torch has no derivative for it)
    nt, _ = pair(requires_grad=True)
    values = nt.values()
    assert ember.autograd.gradcheck(
        lambda v: ember.nested.nested_tensor_from_jagged(v, nt.offsets()).narrow(2, 1, 2)
        .values(), (values,))


@pytest.mark.parametrize("dim,match", [(0, "batch dimension"), (1, "ragged dimension")])
def test_narrow_of_the_batch_or_ragged_dim_raises(dim, match):
    nt, _ = pair()
    with pytest.raises(RuntimeError, match=match):
        nt.narrow(dim, 0, 1)


@pytest.mark.parametrize("start,length", [(1, 2), ([0, 2, 1], [3, 1, 0]), (0, [4, 2, 1])])
def test_nested_narrow_of_a_dense_tensor_matches_torch(start, length):
    base = np.arange(36.0).reshape(3, 4, 3)

    def args(module):
        return [module.tensor(x) if isinstance(x, list) else x for x in (start, length)]

    got = ember.nested.narrow(ember.tensor(base), 1, *args(ember), layout=ember.jagged)
    want = torch.nested.narrow(torch.tensor(base), 1, *args(torch), layout=torch.jagged)
    assert got.shape[0] == 3 and got.shape[2] == 3
    for g, w in zip(got.unbind(), want.unbind()):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_nested_narrow_gradients_reach_the_dense_tensor():
    x = ember.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)

    def fn(x):
        return ember.nested.narrow(x, 1, ember.tensor([0, 1, 3]), ember.tensor([2, 3, 1])).values()
    assert ember.autograd.gradcheck(fn, (x,))
    fn(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 1]])


@pytest.mark.parametrize("call,error,match", [
    (lambda x: ember.nested.narrow(x, 0, 0, 1), RuntimeError, "only supports dim=1"),
    (lambda x: ember.nested.narrow(x[0], 1, 0, 1), RuntimeError, "only supports dim=1"),
    (lambda x: ember.nested.narrow(x, 1, 3, 2), IndexError, r"start \+ length <= 4"),
    (lambda x: ember.nested.narrow(x, 1, ember.tensor([0, -1, 0]), 1), IndexError,
     "non-negative"),
    (lambda x: ember.nested.narrow(x, 1, 0, 1, layout=ember.strided), ValueError, "jagged"),
])
def test_nested_narrow_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ember.zeros(3, 4))
