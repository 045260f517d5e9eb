"""A custom ``autograd.Function`` whose forward (or backward) leaves Ember (NumPy on
``.numpy()``) cannot be traced: the ``TraceError`` names the Function and the fix
(``ember.library.custom_op``, which compiles as one op: checked against eager here)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.func.test_jacobian_vmapped import NumpySin  # (NumPy in its forward)
from tests.library.ops_for_tests import define_sin

import ember
from ember import jit
from ember.jit import TraceError


class NumpyTwice(ember.autograd.Function):
    """2x, its backward through NumPy."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return ember.from_numpy(g.numpy() * 2)


def test_numpy_in_a_function_forward_names_the_function_and_custom_op():
    f = jit.compile(lambda x: NumpySin.apply(x * 2).sum())
    with pytest.raises(TraceError, match=r"in the forward of autograd.Function NumpySin.*"
                                         r"ember\.library\.custom_op"):
        f(ember.tensor([1.0, 2.0], requires_grad=True))


def test_numpy_in_a_function_backward_names_the_function():
    def step(x):
        loss = (NumpyTwice.apply(x) ** 2).sum()  # (its gradient: a traced value)
        loss.backward()
        return loss
    with pytest.raises(Exception, match=r"in the backward of autograd.Function NumpyTwice"):
        jit.compile(step)(ember.tensor([1.0, 2.0], requires_grad=True))


def test_a_value_read_outside_a_function_keeps_the_general_message():
    with pytest.raises(TraceError, match="Python control flow") as info:
        jit.compile(lambda x: (x * 2).numpy())(ember.tensor([1.0]))
    assert "autograd.Function" not in str(info.value)


def test_the_custom_op_fix_compiles_and_matches_eager():
    numpy_sin = define_sin(ember, ember.library, "jitleft55")

    def step(x, w):
        loss = numpy_sin(x * w).sum()
        loss.backward()
        return loss

    f = jit.compile(step)
    for i in range(3):
        x = ember.tensor([1.0, 2.0 + i], dtype=ember.float64)
        w1 = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
        w2 = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
        assert f(x, w1).item() == pytest.approx(step(x, w2).item(), rel=1e-15)
        np.testing.assert_allclose(w1.grad.numpy(), w2.grad.numpy(), rtol=1e-15)


class Branchy(ember.autograd.Function):
    """2x or 3x, by an ``if`` on the input's value in its forward."""

    @staticmethod
    def forward(ctx, x):
        return x * 2 if x.sum() > 0 else x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_an_if_on_a_value_in_a_function_keeps_the_cond_and_where_hint():
    """(mend55b) Control flow in a Function's forward is named as such, with the
    ember.cond / ember.where fix of the general message, besides the Function's own hints."""
    with pytest.raises(TraceError, match=r"bool\(\).*forward of autograd.Function Branchy") as info:
        jit.compile(lambda x: Branchy.apply(x))(ember.ones(2))
    message = str(info.value)
    assert "Python control flow" in message and "custom_op" in message
    assert "ember.cond(pred, true_fn, false_fn, operands)" in message
    assert "ember.where" in message
