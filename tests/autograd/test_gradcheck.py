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


class WrongComplexScale(Function):
    """``z * c``, whose PyTorch-convention gradient is ``g * conj(c)``: this one forgets the
    conjugate, which only the imaginary parts reveal."""

    @staticmethod
    def forward(ctx, z):
        return z * (1 + 2j)

    @staticmethod
    def backward(ctx, g):
        return g * (1 + 2j)  # wrong on purpose: should be g * (1 - 2j)


def test_gradcheck_checks_complex_inputs_and_outputs_through_both_parts():
    z = ember.tensor([1 + 1j, -2 + 0.5j], dtype=ember.complex128, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(lambda t: WrongComplexScale.apply(t).real, (z,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongComplexScale.apply, (z,))
    a = ember.tensor([[1 + 2j, 0.5], [-1j, 3]], dtype=ember.complex128, requires_grad=True)
    assert gradcheck(lambda m: m * (1 + 2j), (z,))
    assert gradcheck(ember.linalg.eigvals, (a,))
    assert gradcheck(lambda m, r: ember.linalg.inv(m) * r, (a, ember.tensor(
        [2.0, -1.0], dtype=ember.float64, requires_grad=True)))
    assert gradgradcheck(lambda m: (m * m).sum(), (a,))
