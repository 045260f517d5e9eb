"""Custom ``autograd.Function`` under ``ember.func.vmap``: the ``vmap`` static method (PyTorch's
``Function.vmap(info, in_dims, *args) -> (output, out_dims)``), checked against
``torch.func.vmap`` on equivalent ``torch.autograd.Function``s whose forward calls NumPy (which
only works batched through the rule), with gradients through it (``vmap(grad)``,
``grad(vmap)``, second order), and Functions without a rule (batched op by op)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef
from ember.errors import GradError, OpError, ShapeError

RNG = np.random.default_rng(0)
CALLS: list = []


def _pair(*shape):
    a = RNG.standard_normal(shape)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _close(e, t, tol=1e-10):
    np.testing.assert_allclose(np.asarray(e.detach()._data), t.detach().numpy(), rtol=tol,
                               atol=tol)


def _to_end(x, bdim):
    """The batch dim moved last, or a size-1 last dim for an unbatched input (both libs)."""
    return x.unsqueeze(-1) if bdim is None else x.movedim(bdim, -1)


# -- the same Functions in both libraries ------------------------------------------------------
class NumpyMul(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return ember.from_numpy(x.detach().numpy() * y.detach().numpy())

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return NumpyMul.apply(g, y), NumpyMul.apply(g, x)

    @staticmethod
    def vmap(info, in_dims, x, y):
        CALLS.append((info.batch_size, info.randomness, in_dims, tuple(x.shape), tuple(y.shape)))
        out = NumpyMul.apply(_to_end(x, in_dims[0]), _to_end(y, in_dims[1]))
        return out.movedim(-1, 0), 0


class TNumpyMul(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return torch.from_numpy(x.detach().numpy() * y.detach().numpy())

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return TNumpyMul.apply(g, y), TNumpyMul.apply(g, x)

    @staticmethod
    def vmap(info, in_dims, x, y):
        out = TNumpyMul.apply(_to_end(x, in_dims[0]), _to_end(y, in_dims[1]))
        return out.movedim(-1, 0), 0


class NumpySinCos(ember.autograd.Function):
    """Two outputs; the rule leaves the batch dim where it puts it (out_dims per output)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().numpy()
        return ember.from_numpy(np.sin(a)), ember.from_numpy(np.cos(a))

    @staticmethod
    def backward(ctx, gs, gc):
        (x,) = ctx.saved_tensors
        return gs * x.cos() - gc * x.sin()

    @staticmethod
    def vmap(info, in_dims, x):
        s, c = NumpySinCos.apply(x.movedim(in_dims[0], -1))
        return (s, c.movedim(-1, 0)), (-1, 0)


class TNumpySinCos(torch.autograd.Function):
    @staticmethod
    def forward(x):
        a = x.detach().numpy()
        return torch.from_numpy(np.sin(a)), torch.from_numpy(np.cos(a))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, gs, gc):
        (x,) = ctx.saved_tensors
        return gs * x.cos() - gc * x.sin()

    @staticmethod
    def vmap(info, in_dims, x):
        s, c = TNumpySinCos.apply(x.movedim(in_dims[0], -1))
        return (s, c.movedim(-1, 0)), (-1, 0)


class Cube(ember.autograd.Function):
    """No vmap rule: its forward's Ember ops are batched one by one."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class TCube(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


# -- forward -----------------------------------------------------------------------------------
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 1), (1, 0)])
def test_rule_runs_once_on_batched_args_as_torch(in_dims):
    shapes = {0: (4, 3), 1: (3, 4), None: (3,)}
    xe, xt = _pair(*shapes[in_dims[0]])
    ye, yt = _pair(*shapes[in_dims[1]])
    CALLS.clear()
    got = ef.vmap(lambda x, y: NumpyMul.apply(x, y).sin(), in_dims)(xe, ye)
    want = tf.vmap(lambda x, y: TNumpyMul.apply(x, y).sin(), in_dims)(xt, yt)
    _close(got, want)
    # one call, with the physical arguments: batch dim 0 (Ember's trace keeps it there)
    assert len(CALLS) == 1
    size, randomness, dims, xs, ys = CALLS[0]
    assert (size, randomness) == (4, "error")
    assert dims == tuple(None if d is None else 0 for d in in_dims)
    assert xs == ((4, 3) if in_dims[0] is not None else (3,))


def test_multiple_outputs_and_out_dims_per_output():
    xe, xt = _pair(5, 3)
    got = ef.vmap(lambda x: NumpySinCos.apply(x), randomness="same")(xe)
    want = tf.vmap(lambda x: TNumpySinCos.apply(x), randomness="same")(xt)
    for g, w in zip(got, want):
        _close(g, w)


def test_nested_vmap_runs_the_rule_at_each_level():
    xe, xt = _pair(2, 3, 4)
    ye, yt = _pair(4)
    CALLS.clear()
    got = ef.vmap(ef.vmap(NumpyMul.apply, (0, None)), (0, None))(xe, ye)
    want = tf.vmap(tf.vmap(TNumpyMul.apply, (0, None)), (0, None))(xt, yt)
    _close(got, want)
    assert [c[0] for c in CALLS] == [3, 2]


def test_unbatched_call_inside_vmap_runs_plainly():
    xe, _ = _pair(4, 3)
    we, _ = _pair(3)
    CALLS.clear()
    out = ef.vmap(lambda x: x + NumpyMul.apply(we, we))(xe)
    _close(out, torch.from_numpy(xe.numpy() + we.numpy() ** 2))
    assert CALLS == []


# -- gradients ---------------------------------------------------------------------------------
def test_per_sample_gradients_vmap_of_grad():
    xe, xt = _pair(6, 3)
    ye, yt = _pair(3)
    ge = ef.vmap(ef.grad(lambda x, y: NumpyMul.apply(x, y).sin().sum(), argnums=(0, 1)),
                 (0, None))(xe, ye)
    gt = tf.vmap(tf.grad(lambda x, y: TNumpyMul.apply(x, y).sin().sum(), argnums=(0, 1)),
                 (0, None))(xt, yt)
    _close(ge[0], gt[0])
    _close(ge[1], gt[1])  # per-sample gradient of the unbatched argument: shape (6, 3)


def test_grad_of_vmap_and_two_output_gradients():
    xe, xt = _pair(5, 3)
    ye, yt = _pair(5, 3)
    got = ef.grad(lambda x, y: ef.vmap(NumpyMul.apply)(x, y).tanh().sum(), (0, 1))(xe, ye)
    want = tf.grad(lambda x, y: tf.vmap(TNumpyMul.apply)(x, y).tanh().sum(), (0, 1))(xt, yt)
    for g, w in zip(got, want):
        _close(g, w)

    def f(lib, fn):
        return lambda x: (lambda sc: (sc[0] * sc[1].exp()).sum())(fn(x))
    got = ef.vmap(ef.grad(f(ember, NumpySinCos.apply)))(xe)
    want = tf.vmap(tf.grad(f(torch, TNumpySinCos.apply)))(xt)
    _close(got, want)


def test_second_order_through_the_rule():
    xe, xt = _pair(4, 3)
    ye, yt = _pair(4, 3)
    got = ef.vmap(ef.jacrev(ef.jacrev(
        lambda x, y: NumpyMul.apply(x, NumpyMul.apply(x, y)).sum())))(xe, ye)
    want = tf.vmap(tf.jacrev(tf.jacrev(
        lambda x, y: TNumpyMul.apply(x, TNumpyMul.apply(x, y)).sum())))(xt, yt)
    _close(got, want)
    # and an outer grad around vmap(grad): the physical graph reaches the outer level
    got = ef.grad(lambda y: ef.vmap(ef.grad(lambda x, y: NumpyMul.apply(x, y).sin().sum()),
                                    (0, None))(xe, y).sum())(ye[0])
    want = tf.grad(lambda y: tf.vmap(tf.grad(lambda x, y: TNumpyMul.apply(x, y).sin().sum()),
                                     (0, None))(xt, y).sum())(yt[0])
    _close(got, want)


def test_function_without_rule_is_batched_op_by_op():
    xe, xt = _pair(5, 3)
    _close(ef.vmap(Cube.apply)(xe), tf.vmap(TCube.apply)(xt))
    _close(ef.vmap(ef.grad(lambda x: Cube.apply(x).sin().sum()))(xe),
           tf.vmap(tf.grad(lambda x: TCube.apply(x).sin().sum()))(xt))


# -- errors ------------------------------------------------------------------------------------
class NumpyNoRule(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return ember.from_numpy(np.exp(x.detach().numpy()))

    @staticmethod
    def backward(ctx, g):
        return g


class NoGraphRule(NumpyNoRule):
    """A rule that computes without apply: no gradient can flow through it."""

    @staticmethod
    def vmap(info, in_dims, x):
        return ember.from_numpy(np.exp(x.detach().numpy())), in_dims[0]


class BadDims(NumpyNoRule):
    @staticmethod
    def vmap(info, in_dims, x):
        return NumpyNoRule.apply(x), 1


class NotAPair(NumpyNoRule):
    @staticmethod
    def vmap(info, in_dims, x):
        return NumpyNoRule.apply(x)


def test_clear_errors():
    xe, _ = _pair(4, 3)
    with pytest.raises(OpError, match=r"NumpyNoRule.forward.*vmap\(info, in_dims"):
        ef.vmap(NumpyNoRule.apply)(xe)
    _close(ef.vmap(NoGraphRule.apply)(xe), torch.from_numpy(np.exp(xe.numpy())))
    with pytest.raises(GradError, match="NoGraphRule.vmap: a gradient is needed"):
        ef.vmap(ef.grad(lambda x: NoGraphRule.apply(x).sum()))(xe)
    with pytest.raises(ShapeError, match="BadDims.vmap: out_dims 1 for output 0"):
        ef.vmap(BadDims.apply)(xe)
    with pytest.raises(OpError, match=r"NotAPair.vmap must return a pair \(output, out_dims\)"):
        ef.vmap(NotAPair.apply)(xe)
    with pytest.raises(OpError, match="keyword argument 'y'"):
        ef.vmap(lambda x: NumpyMul.apply(x, y=x))(xe)


class MulJvp(NumpyMul):
    """NumpyMul with a jvp and a rule that keeps the batch dims at 0."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_forward(x, y)
        return NumpyMul.forward(ctx, x, y)

    @staticmethod
    def jvp(ctx, dx, dy):
        x, y = ctx.saved_tensors
        return dx * y + x * dy

    @staticmethod
    def vmap(info, in_dims, x, y):
        return MulJvp.apply(x, y), 0


def test_forward_mode_around_and_inside_vmap():
    xe, _ = _pair(4, 3)
    ye, _ = _pair(4, 3)
    _, d = ef.jvp(ef.vmap(MulJvp.apply), (xe, ye), (ember.ones_like(xe), ember.zeros_like(ye)))
    _close(d, torch.from_numpy(ye.numpy()))
    with pytest.raises(GradError, match="MulJvp: forward mode \\(jvp\\) inside vmap"):
        ef.vmap(lambda a, b: ef.jvp(MulJvp.apply, (a, b), (a, b))[1])(xe, ye)
