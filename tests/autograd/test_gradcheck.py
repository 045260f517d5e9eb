"""gradcheck and gradgradcheck catch wrong rules."""

import pytest

import ember
from ember.autograd import Function, GradcheckError, gradcheck, gradgradcheck


class WrongDouble(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.5  # wrong on purpose


class WrongSecondOrder(Function):
    """Right first derivative of x**2, but written so its own derivative is wrong."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x.detach()  # detach hides the dependence on x


def test_gradcheck_detects_a_wrong_gradient():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="numerical 2, analytical 2.5"):
        gradcheck(WrongDouble.apply, (x,))
    assert gradcheck(WrongDouble.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_detects_a_wrong_second_derivative():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    assert gradcheck(WrongSecondOrder.apply, (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(WrongSecondOrder.apply, (x,))
