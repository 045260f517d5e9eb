"""A Python value that every trace of a compiled function changes again (a counter) moves
only when the function traces: the first time that is seen, a warning names it and the fix
(a count kept in a tensor buffer counts at every call)."""

import warnings

import pytest

import ember


class _Counted(ember.nn.Module):
    def __init__(self, in_buffer: bool):
        super().__init__()
        self.lin = ember.nn.Linear(2, 2)
        self.in_buffer = in_buffer
        if in_buffer:
            self.register_buffer("calls", ember.zeros((), dtype=ember.int64))
        else:
            self.calls = 0

    def forward(self, x):
        if self.in_buffer:
            self.calls.add_(1)
        else:
            self.calls += 1
        return self.lin(x)


def _calls(fn, *args, n=4):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(n):
            fn(*args)
    return [str(w.message) for w in seen if "as a counter does" in str(w.message)]


def test_a_module_counter_warns_once_naming_it():
    m = _Counted(in_buffer=False)
    warned = _calls(ember.compile(m), ember.ones(1, 2))
    assert m.calls == 2  # (eager: 4; the first trace and the one that found it moving)
    assert len(warned) == 1 and "changes self.calls each time it is traced" in warned[0]
    assert "Hint:" in warned[0]


def test_a_dict_counter_in_a_closure_warns():
    state = {"n": 0}

    @ember.compile
    def double(x):
        state["n"] += 1
        return x * 2

    warned = _calls(double, ember.ones(2))
    assert len(warned) == 1 and "double changes state['n'] each" in warned[0]


def test_a_count_in_a_buffer_counts_every_call_without_a_warning():
    m = _Counted(in_buffer=True)
    assert _calls(ember.compile(m), ember.ones(1, 2)) == []
    assert int(m.calls) == 4


@pytest.mark.parametrize("read", ["s.get_last_lr()[0]", "o.param_groups[0]['lr']"])
def test_a_scheduler_stepped_inside_is_no_counter(read):
    m = ember.nn.Linear(2, 1)
    o = ember.optim.SGD(m.parameters(), lr=1.0)
    s = ember.optim.lr_scheduler.StepLR(o, 1, 0.5)
    x = ember.ones(3, 2)

    @ember.compile
    def step():
        o.zero_grad()
        loss = m(x).sum()
        loss.backward()
        o.step()
        s.step()
        return loss, eval(read)  # noqa: S307 (the read as a user writes it)

    assert _calls(step) == []
