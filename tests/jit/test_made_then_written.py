"""A tensor made inside a compiled function and then written in place (``b = zeros(());
b.add_(1)``) is a constant of the graph only with the value it had when read: the graph keeps
a copy, so the write (replayed as an equation) never lands in the constant itself and every
call computes what eager does (it added again at each call: [1, 2, 2, ...]). Also through
views, after reads, in a training step, and in an ONNX export."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import jit, nn
from ember.jit.passes import PASSES

CALLS = 3  # the trace, then two cached calls


def _scalar(x):
    b = ember.zeros(())
    b.add_(1.0)
    return x * b


def _eye(x):
    b = ember.eye(3)
    b.mul_(2.0)
    return x @ b


def _through_view(x):
    b = ember.zeros(2, 3)
    b.view(6).add_(1.0)
    b[:, 1:].sub_(3.0)
    return x + b


def _read_before_and_after(x):
    b = ember.zeros(3)
    y = x * 0 + b
    b += 1.0
    return y + b


def _returned(x):
    b = ember.zeros(())
    b.add_(1.0)
    b.add_(1.0)
    return b


def _equal_twins(x):  # (equal small constants share one variable)
    b, c = ember.zeros(3), ember.zeros(3)
    b.add_(1.0)
    return x + b + c


def _big(x):
    b = ember.arange(20000, dtype=ember.float32)
    b.add_(1.0)
    return x.sum() + b.sum()


FUNCTIONS = [_scalar, _eye, _through_view, _read_before_and_after, _returned, _equal_twins, _big]
X = ember.arange(6, dtype=ember.float32).reshape(2, 3) + 1


def _calls(fn):
    return [fn(X).numpy().copy() for _ in range(CALLS)]


@pytest.mark.parametrize("passes", [None, False], ids=["passes", "no_passes"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_made_then_written_matches_eager_every_call(f, passes):
    options = {} if passes is None else {"passes": {p: False for p in PASSES}}
    want, got = _calls(f), _calls(jit.compile(f, **options))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w)


def test_state_written_in_place_stays_a_state_write():
    state = ember.zeros(3)

    def f(x):
        state.add_(1.0)
        return x + state

    got = _calls(jit.compile(f))
    np.testing.assert_allclose(state.numpy(), [3.0, 3.0, 3.0])
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, X.numpy() + i + 1)


def test_training_step_with_a_made_then_written_mask():
    def run(compiled):
        ember.manual_seed(0)
        m = nn.Linear(3, 1)

        def step(x):
            scale = ember.ones(())
            scale.mul_(0.5)
            mask = ember.zeros(2, 1)
            mask[0] = 1.0
            loss = (m(x) * mask * scale).sum()
            m.zero_grad()
            loss.backward()
            return loss

        fn = jit.compile(step) if compiled else step
        return [fn(X).item() for _ in range(CALLS)], m.weight.grad.numpy().copy()

    (want, want_grad), (got, got_grad) = run(False), run(True)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-6)


@pytest.mark.parametrize("f", [_scalar, _eye, _returned], ids=lambda f: f.__name__)
def test_onnx_export_keeps_the_value_before_the_write(f):
    from tests.export.onnx_helpers import run_onnx

    pytest.importorskip("onnxruntime")
    proto = ember.onnx.to_model(f, (X,))
    np.testing.assert_allclose(run_onnx(proto, X.numpy())[0], f(X).numpy())
