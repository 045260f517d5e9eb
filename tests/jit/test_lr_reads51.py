"""A scheduler's learning rate read in a compiled step (mend51jit2): watched by value, and
never stale when the step also steps the scheduler."""

import warnings

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


def test_lr_mentioned_scheduler_stepped_inside_does_not_redo_the_reach():
    m, o, s, x = _setup()
    log = False

    def step():
        o.zero_grad()
        loss = m(x).sum()
        loss.backward()
        o.step()
        s.step()
        if log:
            return loss, s.get_last_lr()[0]
        return loss

    c = jit.compile(step)
    for _ in range(3):
        c()
    found = c.reach
    for _ in range(5):
        c()
    assert c.reach is found  # (the key check found nothing moved: no new reach)
