"""In-place changes of shape, strides or memory inside a compiled function: ``unsqueeze_``,
``squeeze_``, ``t_``, ``transpose_`` and ``as_strided_`` of a tensor the function made compile
as their view op (every call as eager); of a tensor the caller holds (an argument, a
parameter, a captured tensor) they raise a ``TraceError`` naming the line, as do ``resize_``
and ``set_``; a leaf that requires grad gets eager's own error."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import jit
from ember.jit import TraceError

CALLS = 3  # the trace, then two cached calls


def _made_inside(x):
    y = x * 2
    y.unsqueeze_(0)
    y.add_(1)  # (a write after the change: through the view it now is)
    y.t_()
    z = (x + 1).as_strided_((2, 2), (1, 2))
    w = (x[None] - 1).squeeze_(0).transpose_(0, 0)
    return y.sum(0), y, z * 1, w


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_a_shape_change_of_a_tensor_made_inside_runs_as_eager_on_every_call(grad):
    fast = jit.compile(_made_inside)
    for i in range(CALLS):
        x = ember.arange(6.0, dtype=ember.float64) + i
        with ember.set_grad_enabled(grad):
            want, got = _made_inside(x), fast(x)
        for w, g in zip(want, got):
            assert g.shape == w.shape and g.stride() == w.stride()
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert len(fast.entries) == 1  # (no trace again: the caller's tensors kept their shapes)


def test_gradients_flow_through_a_shape_change_made_inside():
    def f(x):
        y = x * x
        y.unsqueeze_(1)
        return (y * ember.arange(3.0, dtype=ember.float64)).sum()

    fast = jit.compile(f)
    for i in range(CALLS):
        x1 = (ember.arange(4.0, dtype=ember.float64) / (i + 1)).requires_grad_()
        x2 = x1.detach().clone().requires_grad_()
        f(x1).backward()
        fast(x2).backward()
        np.testing.assert_allclose(x2.grad.numpy(), x1.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("op", [
    lambda x: x.unsqueeze_(0), lambda x: x.squeeze_(), lambda x: x.t_(),
    lambda x: x.transpose_(0, 1), lambda x: x.as_strided_((2, 2), (1, 2)),
], ids=["unsqueeze_", "squeeze_", "t_", "transpose_", "as_strided_"])
def test_a_shape_change_of_an_argument_is_refused_naming_the_line(op):
    x = ember.ones(1, 3, dtype=ember.float64)
    with pytest.raises(TraceError, match=r"argument 0 .* in place at .*test_inplace_shape"):
        jit.compile(op)(x)
    assert x.shape == (1, 3) and x._version == 0  # (the failed trace put it back)


def test_a_shape_change_of_a_parameter_is_refused_naming_it():
    lin = ember.nn.Linear(3, 2)

    def f(x):
        with ember.no_grad():
            lin.bias.unsqueeze_(0)
        return x + 1

    with pytest.raises(TraceError, match="changes the shape of lin.bias"):
        jit.compile(f)(ember.ones(3))


@pytest.mark.parametrize("op", [
    lambda x, y: (x * 1).resize_(3, 2), lambda x, y: (x * 1).set_(y),
], ids=["resize_", "set_"])
def test_a_change_of_memory_is_refused_naming_the_line(op):
    x, y = ember.ones(2, 3), ember.ones(4)
    with pytest.raises(TraceError, match=r"cannot be compiled at .*test_inplace_shape"):
        jit.compile(op)(x, y)


def test_a_leaf_that_requires_grad_gets_eagers_error():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(ember.GradError, match="unsqueeze_: a leaf tensor that requires grad"):
        jit.compile(lambda x: x.unsqueeze_(0))(x)


def test_the_profiler_follows():
    # (vmap and forward mode follow: tests/func/test_vmap_inplace_shape.py,
    # tests/func/test_jvp_inplace_shape.py)
    with ember.profiler.profile():  # (a watcher: eager's values, eager's shape change)
        z = ember.ones(3)
        z.unsqueeze_(0)
    assert z.shape == (1, 3)
