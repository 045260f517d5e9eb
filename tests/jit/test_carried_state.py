"""A tensor a compiled function stores on a module or object for the next call (an RNN's
carried hidden state, ``self.h = h.detach()``) moves on at every call, as in eager code."""

from __future__ import annotations

import functools

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
    with pytest.raises(TraceError, match=r"computed from its inputs \(shape \(3,\)\) in holder\.h"):
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


class _KeepPrevious(ember.nn.Module):
    """Keeps the state before this call's as ``prev`` (read before ``h`` is rebound)."""

    def __init__(self):
        super().__init__()
        self.h, self.prev = ember.zeros(3), ember.zeros(3)

    def forward(self, x):
        new = self.h + x
        self.prev = self.h
        self.h = new.detach()
        return new.sum()


def test_keeping_the_previous_state_reads_it_before_it_is_overwritten():
    eager, model = _KeepPrevious(), _KeepPrevious()
    compiled = jit.compile(model)
    np.testing.assert_allclose(_calls(compiled), _calls(eager), rtol=1e-6)
    np.testing.assert_allclose(model.prev.numpy(), eager.prev.numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.h.numpy(), eager.h.numpy(), rtol=1e-6)
    assert "_store(self_prev, " in compiled.code.split("_store(self_h, ")[0]  # (prev first)


class _Rotate(ember.nn.Module):
    """Three states that swap places at every call (a cycle of writes)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = ember.ones(3), ember.zeros(3), ember.full((3,), 2.0)

    def forward(self, x):
        self.a, self.b, self.c = self.b, self.c, self.a
        return (self.a * x).sum()


def test_states_that_swap_places_each_get_the_others_old_value():
    eager, model = _Rotate(), _Rotate()
    compiled = jit.compile(model)
    np.testing.assert_allclose(_calls(compiled, 6), _calls(eager, 6), rtol=1e-6)
    for name in "abc":
        np.testing.assert_array_equal(getattr(model, name).numpy(), getattr(eager, name).numpy())
    assert compiled.code.count("copy=True)  # (written before read)") == 1


def test_state_reset_to_none_between_sequences_starts_again_each_time():
    eager, model = _twins(None)
    compiled = jit.compile(model)
    with pytest.warns(UserWarning, match="compiled 8 times"):
        for _ in range(5):
            eager.h = model.h = None
            np.testing.assert_allclose(_calls(compiled, 3), _calls(eager, 3), rtol=1e-6)
    assert "its last trace changed self.h: None -> an object" in "\n".join(jit.explain())


class _Cell(ember.nn.Module):
    """An LSTM-like cell whose state is a pair, held as ``kind`` (tuple, list or dict)."""

    def __init__(self, kind):
        super().__init__()
        self.lin, self.kind = ember.nn.Linear(3, 6), kind
        self.state = self.pack(ember.zeros(3), ember.zeros(3))

    def pack(self, h, c):
        return {"tuple": (h, c), "list": [h, c], "dict": {"h": h, "c": c}}[self.kind]

    def forward(self, x):
        h, c = self.state.values() if self.kind == "dict" else self.state
        g = self.lin(x + h)
        c = ember.tanh(g[:3]) + 0.5 * c
        h = ember.tanh(g[3:]) * c
        self.state = self.pack(h.detach(), c.detach())
        return h.sum()


@pytest.mark.parametrize("kind", ["tuple", "list", "dict"])
def test_a_pair_of_states_in_a_container_carries_to_the_next_call(kind):
    ember.manual_seed(0)
    eager, model = _Cell(kind), _Cell(kind)
    model.load_state_dict(eager.state_dict())
    held = model.state
    compiled = jit.compile(model)
    np.testing.assert_allclose(_calls(compiled), _calls(eager), rtol=1e-6)
    assert len(compiled.entries) == 1 and model.state is held
    for ours, theirs in zip(_tensors_of(model.state), _tensors_of(eager.state)):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def _tensors_of(state):
    return list(state.values()) if isinstance(state, dict) else list(state)


def test_a_module_attribute_the_compiled_function_rebinds_carries_to_the_next_call():
    def run(compile_it):
        ember.manual_seed(0)
        model = _Carry(ember.zeros(3))

        def step(x):
            out = model.lin(x) + model.h
            model.h = out.detach()  # (assigned here, not in a method of the module's class)
            return out.sum()

        return _calls(jit.compile(step) if compile_it else step)

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


class _Delay(ember.nn.Module):
    """A one-step delay line: returns what the last call was given."""

    def __init__(self):
        super().__init__()
        self.buf = ember.zeros(3)

    def forward(self, x):
        out = self.buf
        self.buf = x.clone()
        return out


def _streamed(fn, calls=4):
    with ember.no_grad():
        return [fn(ember.full((3,), float(i))).numpy().copy() for i in range(1, calls + 1)]


def test_returning_the_state_from_before_the_call_returns_its_old_value():
    model = _Delay()
    compiled = jit.compile(model)
    got, expected = _streamed(compiled), _streamed(_Delay())
    np.testing.assert_array_equal(np.stack(got), np.stack(expected))  # (the trace's call too)
    assert len(compiled.entries) == 1
    np.testing.assert_array_equal(model.buf.numpy(), np.full(3, 4.0))


class _ReturnPrevious(_KeepPrevious):
    """Keeps the previous state and returns it (the tensor ``self.h`` held before)."""

    def forward(self, x):
        super().forward(x)
        return self.prev


def test_returning_the_tensor_a_state_held_before_the_call_returns_its_old_value():
    eager, model = _ReturnPrevious(), _ReturnPrevious()
    compiled = jit.compile(model)
    np.testing.assert_allclose(np.stack(_streamed(compiled)), np.stack(_streamed(eager)))


def _carry_step(model, x):
    out = model.lin(x) + model.h
    model.h = out.detach()
    return out.sum()


def _parent_step(parent):
    return lambda x: parent(x)


class _Holds(ember.nn.Module):
    """A layer with a state none of its own methods assigns."""

    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)
        self.h = ember.zeros(3)


class _Parent(ember.nn.Module):
    """Rebinds its child's state in its own forward."""

    def __init__(self):
        super().__init__()
        self.cell = _Holds()

    def forward(self, x):
        out = self.cell.lin(x) + self.cell.h
        self.cell.h = out.detach()
        return out.sum()


class _Trainer:
    """A compiled method rebinding the state of the model it holds."""

    def __init__(self, model):
        self.model = model

    @jit.compile
    def step(self, x):
        out = self.model.lin(x) + self.model.h
        self.model.h = out.detach()
        return out.sum()


@pytest.mark.parametrize("how", ["argument", "method", "parent"])
def test_state_rebound_through_an_argument_a_method_or_a_parent_carries(how):
    ember.manual_seed(0)
    eager = _Holds()
    ember.manual_seed(0)
    model = _Parent() if how == "parent" else _Holds()
    if how == "parent":
        compiled = jit.compile(_parent_step(model))
    elif how == "method":
        compiled = _Trainer(model).step
    else:
        compiled = functools.partial(jit.compile(_carry_step), model)
    np.testing.assert_allclose(_calls(compiled), _calls(functools.partial(_carry_step, eager)),
                               rtol=1e-6)
    assert jit.explain()[-1].endswith("first call: traced")


class _TwoLayers(ember.nn.Module):
    """Two cells, each with its (h, c): the state is a tuple of pairs."""

    def __init__(self):
        super().__init__()
        self.cells = ember.nn.ModuleList([ember.nn.Linear(3, 3) for _ in range(2)])
        self.state = tuple((ember.zeros(3), ember.zeros(3)) for _ in range(2))

    def forward(self, x):
        new = []
        for lin, (h, c) in zip(self.cells, self.state):
            c = 0.5 * c + ember.tanh(lin(x) + h)
            x = ember.tanh(c)
            new.append((x.detach(), c.detach()))
        self.state = tuple(new)
        return x.sum()


def _matches_eager(kind):
    """A compiled ``kind()`` and an eager twin (same weights) give the same values for five
    calls; returns both modules and the compiled one."""
    ember.manual_seed(0)
    eager, model = kind(), kind()
    model.load_state_dict(eager.state_dict())
    compiled = jit.compile(model)
    np.testing.assert_allclose(_calls(compiled), _calls(eager), rtol=1e-6)
    return eager, model, compiled


def test_a_nested_tuple_of_states_carries_to_the_next_call():
    assert len(_matches_eager(_TwoLayers)[2].entries) == 1


class _Counted(_Holds):
    """Keeps a count beside its state in one tuple."""

    def __init__(self):
        super().__init__()
        self.state = (ember.zeros(3), 0)

    def forward(self, x):
        h, n = self.state
        h = ember.tanh(self.lin(x) + h)
        self.state = (h.detach(), n + 1)
        return h.sum()


class _Masked(_Holds):
    """Fills a dict that also holds None, in place."""

    def __init__(self):
        super().__init__()
        self.state = {"h": ember.zeros(3), "mask": None}

    def forward(self, x):
        h = ember.tanh(self.lin(x) + self.state["h"])
        self.state["h"] = h.detach()
        return h.sum()


class _Named(_Holds):
    """Sets its state with setattr, by a name it computes."""

    def forward(self, x):
        h = ember.tanh(self.lin(x) + self.h)
        setattr(self, "h"[:1], h.detach())
        return h.sum()


class _NestedFill(_Holds):
    """Fills a list inside a list in place."""

    def __init__(self):
        super().__init__()
        self.state = [[ember.zeros(3)]]

    def forward(self, x):
        h = ember.tanh(self.lin(x) + self.state[0][0])
        self.state[0][0] = h.detach()
        return h.sum()


@pytest.mark.parametrize("kind, where", [(_Counted, r"self\.state \(a tuple\)"),
                                         (_Masked, r"self\.state \(a dict\)"),
                                         (_NestedFill, r"self\.state \(a list\)"),
                                         (_Named, r"self\.h \(a Tensor\)")])
def test_state_no_graph_carries_is_refused_and_nothing_moves(kind, where):
    model = kind()
    before = dict(vars(model))
    inner = dict(model.state) if kind is _Masked else list(model.state[0]) \
        if kind is _NestedFill else None
    with pytest.raises(TraceError, match=rf"computed from its inputs \(shape \(3,\)\) in {where}"):
        jit.compile(model)(ember.ones(3))
    assert all(vars(model)[k] is v for k, v in before.items())
    if kind is _Masked:
        assert all(model.state[k] is v for k, v in inner.items())
    if kind is _NestedFill:
        assert model.state[0][0] is inner[0]


class _SharedStart(_KeepPrevious):
    def __init__(self):
        super().__init__()
        self.h = self.prev = ember.zeros(3)


def test_two_states_holding_one_tensor_are_refused():
    model = _SharedStart()
    held = model.h
    with pytest.raises(TraceError, match=r"self\.prev holds the tensor \(shape \(3,\)\) that the "
                                         r"function rebinds self\.h from"):
        jit.compile(model)(ember.ones(3))
    assert model.h is held and model.prev is held
    np.testing.assert_array_equal(held.numpy(), np.zeros(3))


class _Recurrent(ember.nn.Module):
    """An RNN cell whose matmul saves the carried state for backward."""

    def __init__(self, detach=True):
        super().__init__()
        self.wx, self.wh = ember.nn.Linear(3, 4), ember.nn.Linear(4, 4)
        self.h, self.detach = ember.zeros(1, 4), detach

    def forward(self, x):
        h = ember.tanh(self.wx(x) + self.wh(self.h))
        self.h = h.detach() if self.detach else h
        return h.sum()


def _recurrent_grads(fn, model):
    x = ember.from_numpy(np.array([[1.0, -0.5, 2.0]], np.float32))
    grads = []
    for _ in range(4):
        model.zero_grad()
        fn(x).backward()
        grads.append(model.wh.weight.grad.numpy().copy())
    return grads


def test_a_compiled_module_with_state_differentiates_as_eager_from_the_first_call():
    ember.manual_seed(0)
    eager, model = _Recurrent(), _Recurrent()
    model.load_state_dict(eager.state_dict())
    ours = _recurrent_grads(jit.compile(model), model)
    for got, expected in zip(ours, _recurrent_grads(eager, eager)):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_state_keeping_its_history_across_calls_is_refused():
    model = _Recurrent(detach=False)
    with pytest.raises(TraceError, match=r"rebinds self\.h to a tensor that requires grad"):
        jit.compile(model)(ember.ones(1, 3))
    np.testing.assert_array_equal(model.h.numpy(), np.zeros((1, 4)))


class _Inspected(_Holds):
    """Keeps, without .detach(), a running mean and its last output (for inspection): values
    nothing this call differentiates reads from."""

    def __init__(self):
        super().__init__()
        self.running, self.last = ember.zeros(3), ember.zeros(3)

    def forward(self, x):
        out = self.lin(x)
        self.running = 0.9 * self.running + 0.1 * out
        self.last = out
        return out.sum()


def test_state_kept_with_history_that_nothing_differentiates_through_is_its_value():
    eager, model, _ = _matches_eager(_Inspected)
    np.testing.assert_allclose(model.running.numpy(), eager.running.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.last.numpy(), eager.last.detach().numpy(), rtol=1e-6)


class _Stats(_Holds):
    """Starts with no statistics; its forward assigns a dict of them."""

    def __init__(self):
        super().__init__()
        self.stats = {}

    def forward(self, x):
        out = self.lin(x) + self.stats.get("mean", 0.0)
        self.stats = {"mean": out.mean().detach()}
        return out.sum()


def test_state_that_starts_as_an_empty_dict_carries_once_it_holds_tensors():
    assert len(_matches_eager(_Stats)[2].entries) == 2


class _ViewRead(_Holds):
    """Reads a view of its state in an op that saves it for backward."""

    def forward(self, x):
        out = self.lin(x) * self.h[None, :]
        self.h = out[0].detach()
        return out.sum()


def test_a_view_of_state_saved_for_backward_reads_the_old_value_on_the_first_call():
    ember.manual_seed(0)
    eager, model = _ViewRead(), _ViewRead()
    model.load_state_dict(eager.state_dict())
    eager.h, model.h = ember.full((3,), 0.5), ember.full((3,), 0.5)
    x = ember.ones(1, 3)
    compiled = jit.compile(model)
    for _ in range(3):
        eager.zero_grad(), model.zero_grad()
        eager(x).backward(), compiled(x).backward()
        np.testing.assert_allclose(model.lin.weight.grad.numpy(), eager.lin.weight.grad.numpy(),
                                   rtol=1e-6)


class _BranchFills(ember.nn.Module):
    """Fills its dict of state in place inside a branch of ember.cond."""

    def __init__(self):
        super().__init__()
        self.d = {"h": ember.zeros(3)}

    def forward(self, x):
        def fill(x):
            self.d["h"] = (x * 2).detach()
            return x * 2
        return ember.cond(x.sum() > 0, fill, lambda x: x * 3, (x,)) + self.d["h"]


def test_state_filled_in_place_inside_a_branch_is_refused():
    model = _BranchFills()
    held = model.d["h"]
    with ember.no_grad(), pytest.raises(TraceError, match=r"in self\.d \(a dict\)"):
        jit.compile(model)(ember.ones(3))
    assert model.d["h"] is held


class _ListWritten(ember.nn.Module):
    """Adds into a tensor it holds in a list (not rebound: written in place)."""

    def __init__(self):
        super().__init__()
        self.totals = [ember.zeros(3)]

    def forward(self, x):
        self.totals[0].add_(x)
        return self.totals[0] * 1


def test_a_tensor_in_a_list_written_in_place_is_state():
    eager, model = _ListWritten(), _ListWritten()
    with ember.no_grad():
        got, expected = _streamed(jit.compile(model)), _streamed(eager)
    np.testing.assert_array_equal(np.stack(got), np.stack(expected))
    np.testing.assert_array_equal(model.totals[0].numpy(), np.full(3, 10.0))
