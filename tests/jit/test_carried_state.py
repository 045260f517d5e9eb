"""A tensor a compiled function stores on a module or object for the next call (an RNN's
carried hidden state, ``self.h = h.detach()``) moves on at every call, as in eager code."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import jit
from ember.jit import TraceError


class _Carry(ember.nn.Module):
    """A cell that adds the state its last call left (none at first, with ``h=None``)."""

    def __init__(self, h):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)
        self.h = h

    def forward(self, x):
        h = self.h if self.h is not None else ember.zeros(3)
        out = ember.tanh(self.lin(x) + h)
        self.h = out.detach()
        return out.sum()


def _calls(fn, calls=5):
    x = ember.from_numpy(np.array([1.0, -0.5, 2.0], np.float32))
    return [fn(x).item() for _ in range(calls)]


def _twins(h):
    ember.manual_seed(0)
    a = _Carry(h() if h else None)
    b = _Carry(h() if h else None)
    b.load_state_dict(a.state_dict())
    return a, b


def test_a_module_attribute_rebound_in_forward_carries_to_the_next_call():
    eager, model = _twins(lambda: ember.zeros(3))
    held = model.h
    compiled = jit.compile(model)
    np.testing.assert_allclose(_calls(compiled), _calls(eager), rtol=1e-6)
    assert len(compiled.entries) == 1
    assert model.h is held  # (written into, as a buffer rebound in forward is)
    np.testing.assert_allclose(model.h.numpy(), eager.h.numpy(), rtol=1e-6)


def test_a_state_that_starts_as_none_traces_twice_then_carries():
    eager, model = _twins(None)
    compiled = jit.compile(model)
    np.testing.assert_allclose(_calls(compiled), _calls(eager), rtol=1e-6)
    assert len(compiled.entries) == 2
    assert "self.h: None -> an object" in jit.explain()[-1]


def _train(compile_it):
    """Five SGD steps of the cell: the losses and the parameters after them."""
    _, model = _twins(lambda: ember.zeros(3))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        loss = model(x)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    losses = _calls(jit.compile(step) if compile_it else step)
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_a_training_step_with_carried_state_matches_eager():
    (eager_losses, eager_params), (losses, params) = _train(False), _train(True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for p, q in zip(params, eager_params):
        np.testing.assert_allclose(p, q, rtol=1e-6)


def test_a_state_that_grows_traces_at_every_call_and_stays_right():
    class Grow(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.seen = ember.zeros(0)

        def forward(self, x):
            self.seen = ember.cat([self.seen, x.sum().reshape(1)])
            return self.seen.sum()

    compiled = jit.compile(Grow())
    np.testing.assert_allclose(_calls(compiled, 3), [2.5, 5.0, 7.5], rtol=1e-6)
    assert len(compiled.entries) == 3


class _Holder:
    pass


def _with_holder(h):
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 3)

    def step(x, holder):
        out = F.relu(lin(x) + holder.h)
        holder.h = out.detach()
        return out.sum()

    holder = _Holder()
    holder.h = h
    return step, holder


def test_a_tensor_attribute_of_an_object_carries_to_the_next_call():
    step, eager = _with_holder(ember.zeros(3))
    _, held = _with_holder(ember.zeros(3))
    compiled = jit.compile(lambda x: step(x, held))
    np.testing.assert_allclose(_calls(compiled), _calls(lambda x: step(x, eager)), rtol=1e-6)
    np.testing.assert_allclose(held.h.numpy(), eager.h.numpy(), rtol=1e-6)


def test_a_new_tensor_stored_on_an_object_is_refused_and_nothing_moves():
    holder = _Holder()
    holder.h = None

    def first(x):
        out = ember.tanh(x)
        holder.h = out.detach()
        return out.sum()

    compiled = jit.compile(first)
    with pytest.raises(TraceError, match=r"stores a new tensor \(shape \(3,\)\) as _Holder\.h"):
        compiled(ember.ones(3))
    assert holder.h is None


def test_an_attribute_sharing_a_parameters_memory_stays_the_parameter():
    class Snapshot(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 3, bias=False)
            self.seen = None

        def forward(self, x):
            self.seen = self.lin.weight.detach()  # (the parameter's memory: not carried state)
            return (self.lin(x) ** 2).sum()

    model = Snapshot()
    weight = model.lin.weight.detach().numpy().copy()
    compiled = jit.compile(model)
    for _ in range(3):
        out = compiled(ember.ones(3))
    assert out.requires_grad
    np.testing.assert_array_equal(model.lin.weight.detach().numpy(), weight)


def test_a_table_python_reads_stays_a_constant():
    class Lengths(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lengths = ember.tensor([2, 5, 3])

        def forward(self, x):
            return x[: int(self.lengths.max())].sum()

    compiled = jit.compile(Lengths())
    assert [compiled(ember.arange(8.0)).item() for _ in range(2)] == [10.0, 10.0]


def test_an_object_may_hold_a_reached_tensor_or_a_constant():
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 3)
    holder = _Holder()
    holder.best, holder.mask = None, None

    def step(x):
        holder.best = lin.weight  # (a tensor the graph reads anyway)
        if holder.mask is None:  # (a constant made once: the graph keeps it)
            holder.mask = ember.ones(3)
        return (lin(x) * holder.mask).sum()

    compiled = jit.compile(step)
    assert compiled(ember.ones(3)).item() == pytest.approx(step(ember.ones(3)).item())
    assert holder.best is lin.weight
