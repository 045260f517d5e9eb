"""A compiled model inside an eager training loop: the call is one autograd node whose forward
and backward are generated code; losses, gradients and parameters follow eager."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.models
import ember.nn.functional as F
from ember import jit
from ember.errors import GradError


def _loop(build, x, y, compiled, steps=6):
    ember.manual_seed(0)
    model = build()
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    forward = jit.compile(model) if compiled else model
    losses = []
    for _ in range(steps):
        out = forward(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}, forward


@pytest.mark.parametrize("name", ["mlp_bn_dropout", "cnn", "gpt"])
def test_compiled_forward_trains_like_eager(name):
    rng = np.random.default_rng(0)
    if name == "gpt":
        build = lambda: ember.models.gpt(n_layer=1, d_model=32, block_size=8,  # noqa: E731
                                         dropout=0.1)
        x = ember.from_numpy(rng.integers(0, 256, (2, 8)))
        y = ember.from_numpy(rng.integers(0, 256, (2, 8)))
    elif name == "cnn":
        build, x = ember.models.cnn, ember.from_numpy(rng.standard_normal((4, 1, 28, 28),
                                                                           dtype=np.float32))
        y = ember.from_numpy(rng.integers(0, 10, 4))
    else:
        def build():
            return ember.nn.Sequential(ember.nn.Linear(5, 16), ember.nn.BatchNorm1d(16),
                                       ember.nn.GELU(), ember.nn.Dropout(0.3),
                                       ember.nn.Linear(16, 3))
        x = ember.from_numpy(rng.standard_normal((8, 5), dtype=np.float32))
        y = ember.from_numpy(rng.integers(0, 3, 8))
    eager, eager_state, _ = _loop(build, x, y, compiled=False)
    losses, state, forward = _loop(build, x, y, compiled=True)
    assert len(forward.entries) == 1, jit.explain()
    np.testing.assert_allclose(losses, eager, rtol=1e-6)
    for key in state:
        np.testing.assert_allclose(state[key], eager_state[key], rtol=1e-5, atol=1e-7,
                                   err_msg=key)


def test_input_gradients_and_several_outputs():
    def f(x, w):
        h = x @ w
        return h.tanh(), h.argmax(dim=1), "tag"

    fast = jit.compile(f)
    for _ in range(2):  # trace, then the generated forward and backward
        x = ember.randn(3, 4, requires_grad=True)
        w = ember.randn(4, 2, requires_grad=True)
        y, idx, tag = fast(x, w)
        (y * ember.tensor([1.0, -2.0])).sum().backward()
        x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
        y2, idx2, _ = f(x2, w2)
        (y2 * ember.tensor([1.0, -2.0])).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-6)
        assert idx.tolist() == idx2.tolist() and tag == "tag" and not idx.requires_grad


def test_a_second_backward_needs_retain_graph_as_in_eager():
    lin = ember.nn.Linear(3, 2)
    fast = jit.compile(lin)
    x = ember.randn(2, 3)
    fast(x)
    loss = fast(x).sum()
    loss.backward(retain_graph=True)
    loss.backward()  # (the saved values were kept)
    with pytest.raises(GradError, match="a second time"):
        loss.backward()


def test_the_backward_graph_is_generated_code_with_source_lines():
    lin = ember.nn.Linear(3, 2)
    fast = jit.compile(lin)
    fast(ember.randn(2, 3))
    code = fast.last.backward.code
    assert code.startswith("def Linear_backward(") and "backward of matmul" in code


def test_a_parameter_changed_before_backward_is_reported_as_in_eager():
    lin = ember.nn.Linear(3, 2)
    fast = jit.compile(lin)
    x = ember.randn(2, 3)
    fast(x)
    loss = fast(x).sum()
    with ember.no_grad():
        lin.weight.mul_(2)
    with pytest.raises(GradError, match="modified in place after the call"):
        loss.backward()
