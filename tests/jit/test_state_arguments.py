"""Arguments that are, or view, a tensor the compiled function also reaches by name (a
module's buffer, a parameter, a global): which one is part of the cache key, so a graph
traced with ``f(model.buf)`` (where the argument and the buffer are one value) never runs
for ``f(other)``, nor the other way round; an argument that is a view of such a tensor, in
a function that writes in place, runs the plain function (the graph would read each as
the call found it)."""

from __future__ import annotations

import ember
from ember import jit


def _module():
    m = ember.nn.Module()
    m.register_buffer("buf", ember.ones(3, dtype=ember.float64))
    return m


def _calls(make_step, arguments):
    """What eager and compiled calls see, for each argument choice in turn."""
    seen = []
    for compile_it in (False, True):
        m = _module()
        step = make_step(m)
        f = jit.compile(step) if compile_it else step
        out = []
        for which in arguments:
            x = {"buf": m.buf, "view": m.buf[1:], "new": ember.ones(3, dtype=ember.float64),
                 "new_view": ember.ones(3, dtype=ember.float64)[1:]}[which]
            y = f(x)
            out.append((which, y.tolist(), m.buf.tolist(), x.tolist()))
        seen.append(out)
    return seen


def test_a_buffer_passed_as_the_argument_is_not_the_argument_of_later_calls():
    def make_step(m):
        def step(x):
            m.buf.mul_(2)
            return x + 1
        return step

    eager, compiled = _calls(make_step, ["buf", "new", "new", "buf", "buf"])
    assert compiled == eager
    assert "argument x: memory of m.buf -> its own memory" in " ".join(jit.explain())


def test_a_function_reading_both_reads_each_at_later_calls():
    def make_step(m):
        return lambda x: x * 10 + m.buf

    eager, compiled = _calls(make_step, ["buf", "new", "buf", "new"])
    assert compiled == eager


def test_a_view_of_a_written_buffer_as_the_argument_runs_the_plain_function():
    def make_step(m):
        def step(x):
            m.buf.add_(1)
            return x * 2  # (eager reads the write through the view)
        return step

    eager, compiled = _calls(make_step, ["view", "new_view", "view", "view", "new_view"])
    assert compiled == eager
    assert any("argument x is a view of m.buf" in r for r in jit.explain())
