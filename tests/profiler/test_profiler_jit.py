"""ember.profiler with ember.jit: a compiled call under a profile, and a profile used inside a
compiled function."""

import ember
from ember.profiler import profile, record_function, schedule


def test_a_profile_inside_a_compiled_function_runs_at_every_call():
    # the graph left the profile out: its on_trace_ready ran at the first call only (torch's
    # compile breaks its graph at the profiler, which then runs at every call)
    spans = []

    def step(x):
        with profile(on_trace_ready=lambda prof: spans.append(len(prof.events()))):
            return (x + 1) * 2

    fast, x = ember.jit.compile(step), ember.ones(3)
    for _ in range(3):
        assert fast(x).tolist() == [4.0, 4.0, 4.0]
    assert spans == [2, 2, 2]


def test_a_profile_stepped_inside_a_compiled_function_counts_every_step():
    def body(x, prof):
        y = x.exp()
        prof.step()
        return y

    fast, x = ember.jit.compile(body, static_argnums=(1,)), ember.ones(2)
    with profile(schedule=schedule(wait=2, warmup=1, active=2)) as prof:
        for _ in range(6):
            fast(x, prof)
    assert prof.step_num == 6
    assert [e.trace_name for e in prof.events() if e.kind == "user"] == \
        ["ProfilerStep#3", "ProfilerStep#4"]


def test_a_compiled_call_under_a_profile_shows_its_ops_and_regions():
    def f(x):
        with record_function("region"):
            return (x * 2).sum()

    fast, x = ember.jit.compile(f), ember.ones(3)
    fast(x), fast(x)
    with profile() as prof:
        fast(x)
    assert [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()] == \
        [("region", None), ("mul", "region"), ("sum", "region")]
