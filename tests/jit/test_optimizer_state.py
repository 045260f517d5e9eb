"""A compiled step that reads its optimizer's state (``opt.state``) sees what eager sees: the
state the step made, at every call, before and after the update."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import jit


def _model():
    return ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))


def _data():
    rng = np.random.default_rng(0)
    return (ember.from_numpy(rng.standard_normal((32, 8)).astype(np.float32)),
            ember.from_numpy(rng.integers(0, 3, 32)))


def _run(make, calls=4):
    """Each call's returned numbers, eagerly and compiled, on freshly seeded models."""
    out = []
    for compiled in (False, True):
        ember.manual_seed(0)
        step = make()
        fn = jit.compile(step) if compiled else step
        x, y = _data()
        out.append([[float(v) for v in fn(x, y)] for _ in range(calls)])
    return out


def _step_with(model, opt, read):
    """A step that returns ``(loss, read())``, ``read`` called between the backward and the
    update."""

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        seen = read()
        opt.step()
        opt.zero_grad()
        return loss, seen
    return step


def _step_reading_the_buffer(model, opt, key="momentum_buffer"):
    """A step that returns its first weight's momentum buffer's sum (state ``key``), read
    before the update (0 until the first step makes the buffer)."""
    weight = model[0].weight

    def read():
        has = weight in opt.state
        return opt.state[weight][key].sum() * 1 if has else ember.zeros(())
    return _step_with(model, opt, read)


def test_a_branch_on_state_made_by_the_first_step_is_traced_again_once_it_is_there():
    def make():
        model = _model()
        return _step_reading_the_buffer(
            model, ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    eager, compiled = _run(make)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert eager[0][1] == 0 and eager[1][1] != 0  # (the buffer the first step made)
    assert any("state of opt: empty -> 4 parameters' (momentum_buffer)" in reason
               for reason in jit.explain())


def test_state_read_before_and_after_the_update_in_one_call():
    def make():
        model = _model()
        opt = ember.optim.Adam(model.parameters(), lr=0.01)
        model(_data()[0]).sum().backward()
        opt.step()  # (the state exists before compiling)
        opt.zero_grad()
        exp_avg = opt.state[model[2].weight]["exp_avg"]

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            before = exp_avg.sum() * 1
            opt.step()
            opt.zero_grad()
            after = exp_avg.sum() * 1
            total = sum(s["exp_avg_sq"].sum() for s in opt.state.values())
            return loss, before, after, total
        return step

    eager, compiled = _run(make)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert all(before != after for _, before, after, _ in eager)


def test_state_reached_only_through_the_optimizer_is_read_at_every_call():
    def make():
        model = _model()
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model(_data()[0]).sum().backward()
        opt.step()
        opt.zero_grad()

        def buffers():  # (a helper's read: no `.state` in the step's own code)
            return sum(s["momentum_buffer"].sum() for s in opt.state.values())
        return _step_with(model, opt, buffers)

    eager, compiled = _run(make)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert len({seen for _, seen in eager}) == 4


def test_state_replaced_by_load_state_dict_is_traced_again():
    ember.manual_seed(0)
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    fn = jit.compile(_step_reading_the_buffer(model, opt))
    x, y = _data()
    for _ in range(3):
        fn(x, y)
    saved = opt.state_dict()
    doubled = saved["state"][0]["momentum_buffer"] * 2
    saved["state"][0]["momentum_buffer"] = doubled
    opt.load_state_dict(saved)
    assert float(fn(x, y)[1]) == pytest.approx(float(doubled.sum()), rel=1e-6)
    assert "other tensors or values in it" in jit.explain()[-1]


def test_the_graph_names_the_state_it_reads():
    ember.manual_seed(0)
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(_data()[0]).sum().backward()
    opt.step()

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        seen = opt.state[model[0].weight]["momentum_buffer"].sum()
        opt.step()
        opt.zero_grad()
        return loss, seen

    fn = jit.compile(step)
    fn(*_data())
    assert "state opt.state[model.0.weight]['momentum_buffer']" in str(fn.graph)


@pytest.mark.parametrize("make_opt, key", [
    (lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9), "momentum_buffer"),
    (lambda ps: ember.optim.Adam(ps, lr=0.01), "exp_avg"),
])
def test_state_written_in_place_before_the_step_is_what_the_step_reads(make_opt, key):
    def make():
        model = _model()
        opt = make_opt(model.parameters())
        weight = model[2].weight

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if weight in opt.state:
                opt.state[weight][key].mul_(0.5)
            opt.step()
            opt.zero_grad()
            return loss, weight.sum(), opt.state[weight][key].sum()
        return step

    eager, compiled = _run(make, calls=5)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def test_a_count_in_the_state_read_as_a_number_is_refused():
    # (Adam's step count, read with int(): frozen at its traced value, every later call would
    # see the same number)
    ember.manual_seed(0)
    model = _model()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    model(_data()[0]).sum().backward()
    opt.step()
    weight = model[0].weight

    def step(x, y):
        loss = F.cross_entropy(model(x), y) * (1 + int(opt.state[weight]["step"]) % 2)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    with pytest.raises(jit.TraceError, match="reads the value of opt.state\\[model.0.weight\\]"
                       "\\['step'\\] .* which this function also writes"):
        jit.compile(step)(*_data())
    assert int(opt.state[weight]["step"]) == 1  # (the failed trace took no step)


class _CountingSGD(ember.optim.Optimizer):
    """An optimizer whose state holds a Python number that moves every step."""

    def __init__(self, params):
        super().__init__(params, {"lr": 0.1})

    @ember.no_grad()
    def step(self, closure=None):
        for p in self.param_groups[0]["params"]:
            state = self.state[p]
            state["n"] = state.get("n", 0) + 1
            state.setdefault("buf", ember.zeros_like(p)).mul_(0.9).add_(p.grad)
            p.add_(state["buf"], alpha=-0.1)


def test_a_count_moving_in_the_state_leaves_its_keys_and_tensors_watched():
    # (clearing the state between calls traces again: the count is no part of the key, so
    # its moving does not turn the state into a side effect left out of the key)
    def make():
        model = _model()
        opt = _CountingSGD(model.parameters())
        return _step_reading_the_buffer(model, opt, "buf"), opt

    runs = []
    for compiled in (False, True):
        ember.manual_seed(0)
        step, opt = make()
        fn = jit.compile(step) if compiled else step
        x, y = _data()
        seen = []
        for i in range(6):
            seen.append([float(v) for v in fn(x, y)])
            if i in (2, 4):
                opt.state.clear()
        runs.append(seen)
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6)
    assert runs[0][3][1] == 0  # (the cleared state)


class _Trainer(ember.nn.Module):
    """A module that holds its optimizer and reads its state in its step."""

    def __init__(self):
        super().__init__()
        self.net = _model()
        self.opt = ember.optim.SGD(self.net.parameters(), lr=0.1, momentum=0.9)

    def step(self, x, y):
        loss = F.cross_entropy(self.net(x), y)
        loss.backward()
        seen = sum(s["momentum_buffer"].sum() for s in self.opt.state.values()) * 1
        self.opt.step()
        self.opt.zero_grad()
        return loss, seen


def test_the_state_of_an_optimizer_a_module_holds_is_read_at_every_call():
    eager, compiled = _run(lambda: _Trainer().step, calls=5)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def test_a_value_read_from_the_state_follows_steps_taken_elsewhere():
    # (the optimizer writes its state in place: its version counters move, so a compiled
    # function that read a value from it traces again)
    ember.manual_seed(0)
    model = _model()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    x, y = _data()

    def train():
        F.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()

    train()
    count = jit.compile(lambda: float(opt.state[model[0].weight]["step"]) * ember.ones(()))
    for expected in (1.0, 2.0, 3.0):
        assert float(count()) == expected
        train()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_returned_gradient_is_the_grad_also_when_it_accumulates(set_to_none):
    ember.manual_seed(0)
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    weight = model[0].weight

    def step(x, y):
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if not set_to_none:
            opt.zero_grad(set_to_none=False)
        return weight.grad

    fn = jit.compile(step)
    for _ in range(4):
        grad = fn(*_data())
        assert grad is weight.grad


def _buffer_sum(opt, weight):
    """A helper given the optimizer: the buffer's sum once the state has it, else 0."""
    state = opt.state  # (an alias of the dict)
    return state[weight]["momentum_buffer"].sum() * 1 if weight in state else ember.zeros(())


def test_a_branch_on_the_state_in_a_helper_given_the_optimizer_is_traced_again():
    def make():
        model = _model()
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return _step_with(model, opt, lambda: _buffer_sum(opt, model[0].weight))

    eager, compiled = _run(make)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert eager[1][1] != 0


class _DampingTrainer:
    """A plain object whose step calls another method that branches on the state."""

    def __init__(self):
        self.model = _model()
        self.opt = ember.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)

    def damp(self):
        for p in self.model.parameters():
            if p in self.opt.state:
                self.opt.state[p]["momentum_buffer"].mul_(0.5)

    def step(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.damp()
        self.opt.step()
        self.opt.zero_grad()
        return loss, self.model[0].weight.sum()


def test_a_branch_on_the_state_in_another_method_of_the_steps_object_is_traced_again():
    eager, compiled = _run(lambda: _DampingTrainer().step, calls=5)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


class _StepCountingSGD(ember.optim.SGD):
    """An optimizer that keeps a number of its own in ``state``, beside the parameters'."""

    def step(self, closure=None):
        self.state["n_steps"] = self.state.get("n_steps", 0) + 1
        return super().step(closure)


def test_an_optimizer_keeping_its_own_numbers_in_the_state_compiles():
    def make():
        model = _model()
        return _step_reading_the_buffer(
            model, _StepCountingSGD(model.parameters(), lr=0.1, momentum=0.9))

    eager, compiled = _run(make)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
