"""A trace that fails leaves everything as it found it: the lines before the error ran for real
(an optimizer step, gradients, running statistics, random numbers), and are put back, so that
running the step eagerly after the error takes it once, not twice."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import jit
from ember.jit import TraceError


def _model(dropout: float = 0.0) -> ember.nn.Module:
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.BatchNorm1d(8), ember.nn.ReLU(),
                               ember.nn.Dropout(dropout), ember.nn.Linear(8, 3))


def _data():
    rng = np.random.default_rng(1)
    return (ember.from_numpy(rng.standard_normal((6, 4)).astype(np.float32)),
            ember.from_numpy(rng.integers(0, 3, 6)))


def _state(model, opt) -> list[np.ndarray]:
    """Every value the step changes: parameters, buffers, gradients, optimizer state."""
    out = [t.detach().numpy().copy() for t in model.state_dict().values()]
    out += [p.grad.numpy().copy() for p in model.parameters() if p.grad is not None]
    for state in opt.state.values():
        out += [v.numpy().copy() if isinstance(v, ember.Tensor) else np.array(v)
                for v in state.values()]
    return out


def _assert_same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("make_opt", [
    lambda p: ember.optim.Adam(p, lr=0.1),  # state made by the first step
    lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
])
def test_a_failed_trace_leaves_the_model_optimizer_and_generator_as_they_were(make_opt):
    model = _model(dropout=0.5)
    opt = make_opt(model.parameters())
    x, y = _data()
    warm = F.cross_entropy(model(x), y)  # an eager step first: state and gradients exist
    warm.backward()
    opt.step()

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # (accumulates into the gradients already there)
        opt.step()
        opt.zero_grad()
        if loss.item() > 0:  # the error, after the step
            pass
        return loss

    before, grads = _state(model, opt), [p.grad for p in model.parameters()]
    rng = ember.get_rng_state()
    with pytest.raises(TraceError, match="item"):
        jit.compile(step)(x, y)
    _assert_same(_state(model, opt), before)
    assert [p.grad for p in model.parameters()] == grads  # the same tensors, not copies
    assert ember.equal(ember.get_rng_state(), rng)


def test_after_a_failed_trace_an_eager_step_is_taken_once():
    def run(attempt_first: bool) -> list:
        model = _model()
        opt = ember.optim.AdamW(model.parameters(), lr=0.05)
        x, y = _data()

        def step(x, y, check: bool):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            if check and loss > 10:
                raise AssertionError("diverged")
            return loss

        if attempt_first:
            with pytest.raises(TraceError):
                jit.compile(step)(x, y, True)
        step(x, y, True)
        return _state(model, opt)

    _assert_same(run(True), run(False))


def test_module_attributes_and_the_users_objects_are_put_back():
    model = _model()

    class Log:
        def __init__(self) -> None:
            self.calls, self.seen = 0, []

    log = Log()
    x, _ = _data()

    def forward(x):
        log.calls += 1
        log.seen.append("forward")
        model.eval()
        out = model(x)
        print(out)  # the error
        return out

    with pytest.raises(TraceError, match="print"):
        jit.compile(forward)(x)
    assert (log.calls, log.seen, model.training) == (0, [], True)
    assert all(m.training for m in model.modules())


def test_an_input_written_in_place_is_put_back():
    x = ember.ones(3)

    def f(x):
        x.mul_(2)
        return x.sum().item()

    with pytest.raises(TraceError):
        jit.compile(f)(x)
    np.testing.assert_array_equal(x.numpy(), np.ones(3))


def test_a_grad_scaler_is_put_back():
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler(init_scale=2.0 ** 10, growth_interval=1)
    x, y = _data()

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        return loss.tolist()

    saved = scaler.state_dict()
    with pytest.raises(TraceError, match="tolist"):
        jit.compile(step)(x, y)
    assert scaler.state_dict() == saved
    assert scaler.get_scale() == 2.0 ** 10
