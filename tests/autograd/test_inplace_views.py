"""In-place ops on views and on tensors other nodes already use: gradients as PyTorch's."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.forward import jvp


def _write_through_view(x, m):
    y = x * 1
    y.view(4)[0:2].mul_(3)
    return y * y


def _base_changed_after_view(x, m):
    y = x * 1
    v = y[0]
    y.mul_(2)
    return v * 5


def _setitem_on_view(x, m):
    y = x * 1
    y[0][1] = 7.0
    return y * x


def _view_of_plain_tensor_takes_grad(x, m):
    y = m.zeros(2, 2, dtype=x.dtype)
    y[1].add_(x[0])
    return y * 2


def _transposed_view(x, m):
    y = x * 1
    y.t().add_(x)
    return y * 3


def _earlier_consumer_keeps_its_history(x, m):
    y = x * 1
    z = y * 2  # recorded before y changes
    y.mul_(3)
    return z + y


def _sibling_view_used_after_write(x, m):
    y = x * 1
    a, b = y[0], y[1]
    a.mul_(4)
    return (a + b) * y[0]


CASES = [_write_through_view, _base_changed_after_view, _setitem_on_view,
         _view_of_plain_tensor_takes_grad, _transposed_view, _earlier_consumer_keeps_its_history,
         _sibling_view_used_after_write]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_values_and_gradients_match_torch(fn):
    data = [[1.0, 2.0], [3.0, 4.0]]
    x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    out, ref = fn(x, ember), fn(tx, torch)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_in_place_scaling_of_a_non_leaf_is_fine():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(3)  # mul by a constant does not need the old y
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_forward_mode_follows_in_place_ops():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)

    def f(t):
        y = t * 1
        y.add_(t)
        y[0:1].mul_(3)
        return y

    out, tangent = jvp(f, (x,), (ember.ones_like(x),))
    np.testing.assert_allclose(out.numpy(), [6.0, 4.0])
    np.testing.assert_allclose(tangent.numpy(), [6.0, 2.0])


@pytest.mark.parametrize("fn", [_write_through_view, _setitem_on_view, _transposed_view,
                                _sibling_view_used_after_write],
                         ids=lambda f: f.__name__.strip("_"))
def test_view_scatter_is_differentiable_twice(fn):
    x = ember.tensor([[0.5, -1.0], [2.0, 1.5]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: fn(t, ember), (x,))
    assert ember.autograd.gradgradcheck(lambda t: fn(t, ember), (x,))


@pytest.mark.parametrize("op", ["clamp_", "div_", "mul_", "pow_", "sin_", "view clamp_"])
def test_in_place_ops_whose_backward_reads_the_old_value_match_torch(op):
    run = {"clamp_": lambda y, v: y.clamp_(-1, 1), "div_": lambda y, v: y.div_(v),
           "mul_": lambda y, v: y.mul_(v), "pow_": lambda y, v: y.pow_(2),
           "sin_": lambda y, v: y.sin_(), "view clamp_": lambda y, v: y[0].clamp_(0, 1)}[op]
    grads = []
    for lib in (ember, torch):
        w = lib.tensor([[-1.5, 0.3, 2.0], [0.7, -0.2, 1.1]], dtype=lib.float64,
                       requires_grad=True)
        v = lib.tensor([0.5, 2.0, -3.0], dtype=lib.float64, requires_grad=True)
        y = w * 1.0
        run(y, v)
        (y * y).sum().backward()
        grads.append((w.grad.numpy(), None if v.grad is None else v.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    assert (grads[0][1] is None) == (grads[1][1] is None)
    if grads[0][1] is not None:
        np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


def test_a_view_taken_before_an_in_place_shape_change_writes_through_to_the_gradient():
    import torch

    def run(lib, reshape):
        a = lib.ones(2, 3, requires_grad=True)
        x = a * 1
        v = x[1]
        reshape(x)  # x changes shape in place; v still views its old rows
        v.mul_(a[0] * 3)
        (x * lib.arange(6.0).reshape(x.shape)).sum().backward()
        return a.grad.tolist(), x.detach().tolist()
    for reshape in (lambda x: x.unsqueeze_(0), lambda x: x.t_(),
                    lambda x: x.t_().unsqueeze_(0)):
        assert run(ember, reshape) == run(torch, reshape)


def test_an_in_place_op_on_a_view_written_through_another_view_uses_the_new_history():
    import torch

    def run(lib):
        w = lib.arange(4.0).requires_grad_()
        x = w * 1
        v = x[:3]
        v[::2].mul_(w[:2])  # (written through a view of v: v's own history is stale now)
        v.add_(1)
        (x * x).sum().backward()
        return w.grad.tolist()
    assert run(ember) == run(torch) == [0.0, 16.0, 6.0, 6.0]
