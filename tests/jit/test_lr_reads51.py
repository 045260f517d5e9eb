"""A scheduler's learning rate read in a compiled step (mend51jit2): watched by value, and
never stale when the step also steps the scheduler."""

import warnings

import pytest

import ember
from ember import jit, nn


def _setup(step_size: int = 1000, gamma: float = 0.5, lr: float = 1.0):
    ember.manual_seed(0)
    m = nn.Linear(4, 2)
    o = ember.optim.SGD(m.parameters(), lr=lr)
    s = ember.optim.lr_scheduler.StepLR(o, step_size, gamma)
    return m, o, s, ember.ones(3, 4)


def test_lr_read_inside_scheduler_stepped_outside_traces_per_change_only():
    m, o, s, x = _setup(step_size=5)

    def step():
        o.zero_grad()
        loss = m(x).sum() * s.get_last_lr()[0]
        loss.backward()
        o.step()
        return loss, s.get_last_lr()[0]

    c = jit.compile(step)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "compiled 8 times" warning)
        for _ in range(12):
            seen.append(c()[1])
            s.step()
    assert seen == [1.0] * 5 + [0.5] * 5 + [0.25] * 2
    assert c.traces <= 4  # first call, .grad set, one per lr change


def _compare(make, calls: int = 7):
    (e, me), (c, mc) = make(), make()
    c = jit.compile(c)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = [c() for _ in range(calls)]
    want = [e() for _ in range(calls)]
    assert [float(g[1]) for g in got] == [float(x[1]) for x in want]
    assert ember.allclose(me.weight, mc.weight)
    return c, [str(m.message) for m in w if "ember.jit" in str(m.message)], w


def _stepping(read: str, gamma_every: int = 1):
    def make():
        m, o, s, x = _setup(step_size=gamma_every)

        def step():
            before = s.get_last_lr()[0] if read == "before" else None
            o.zero_grad()
            loss = m(x).sum()
            loss.backward()
            o.step()
            s.step()
            o.zero_grad()  # (Ember's own read of param_groups after the step: no read)
            if read == "get_last_lr":  # (used, not only returned: see test_lr_live52)
                lr = s.get_last_lr()[0]
                return loss * lr, lr
            if read == "param_groups":
                lr = o.param_groups[0]["lr"]
                return loss * lr, lr
            return loss, before
        return step, m
    return make


def test_lr_read_after_a_scheduler_step_inside_runs_eagerly_with_a_warning():
    for read in ("get_last_lr", "param_groups"):
        c, warned, w = _compare(_stepping(read))
        assert any("after a scheduler's step" in m for m in warned), read
        assert any("after a scheduler's step" in r for r in jit.explain())
        assert all(m.filename == __file__ for m in w if "after a scheduler" in str(m.message))


def test_lr_read_before_a_scheduler_step_inside_is_an_input():
    c, warned, _ = _compare(_stepping("before", gamma_every=3), calls=10)
    assert not any("after a scheduler's step" in m for m in warned)
    assert c.last.eager is None
    c, _, _ = _compare(_stepping("before", gamma_every=1))  # (changes every call: traces)


@pytest.mark.parametrize("cosine", [False, True])
def test_lr_mentioned_scheduler_stepped_inside_does_not_redo_the_reach(cosine):
    # (StepLR: the lr stays; cosine: it moves at every call, a number the trace moves)
    m, o, s, x = _setup()
    s = ember.optim.lr_scheduler.CosineAnnealingLR(o, 100) if cosine else s
    log = False

    def step():
        o.zero_grad()
        loss = m(x).sum()
        loss.backward()
        o.step()
        s.step()
        return (loss, s.get_last_lr()[0]) if log else loss

    c = jit.compile(step)
    for _ in range(4):
        c()
    found = c.reach
    for _ in range(5):
        c()
    assert c.reach is found and c.traces <= 3  # (the key check found nothing moved)
