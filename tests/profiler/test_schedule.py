"""ember.profiler.schedule and profile(schedule=, on_trace_ready=) with prof.step(), against
torch.profiler's schedule and its trace hand-overs; tensorboard_trace_handler files;
activities."""

import doctest
import gzip
import json
import tempfile
import warnings

import pytest
import torch

import ember
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)


@pytest.mark.parametrize("args", [
    dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=3),
    dict(wait=2, warmup=1, active=3, repeat=2, skip_first=3),
    dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1),
])
def test_schedule_matches_torch(args):
    ours, theirs = schedule(**args), torch.profiler.schedule(**args)
    assert [ours(s).name for s in range(25)] == [theirs(s).name for s in range(25)]


def test_schedule_checks_its_arguments():
    with pytest.raises(ValueError, match=r"active=0 \(need > 0\)"):
        schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(ValueError, match="non-negative"):
        schedule(wait=0, warmup=1, active=1)(-1)


def _run(steps, **kwargs):
    """Runs `steps` steps of a tiny op under a profile; what each hand-over saw:
    (step_num, the ProfilerStep numbers recorded, how many relu ops)."""
    seen = []

    def ready(prof):
        names = [e.trace_name for e in prof.events()]
        marks = sorted(int(n.split("#")[1]) for n in names if n.startswith("ProfilerStep#"))
        seen.append((prof.step_num, marks, names.count("relu")))

    x = ember.ones(2)
    with profile(on_trace_ready=ready, **kwargs) as prof:
        for _ in range(steps):
            x.relu()
            prof.step()
    return seen


def test_profile_records_the_scheduled_steps_and_hands_each_span_over():
    plan = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    # torch.profiler calls on_trace_ready at the same steps: 5 and 9
    assert _run(12, schedule=plan) == [(5, [3, 4], 2), (9, [7, 8], 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = schedule(wait=0, warmup=0, active=3)
    # the span still recording at exit is handed over too (torch: steps 3 and 4), with the
    # region of the step that prof.step() began
    assert _run(4, schedule=plan) == [(3, [0, 1, 2], 3), (4, [3, 4], 1)]
    # no schedule: everything is recorded, no step regions, one hand-over at exit
    assert _run(2) == [(2, [], 2)]


def test_custom_schedule_and_a_region_open_across_a_span():
    actions = [ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.RECORD]
    spans = []
    with profile(schedule=lambda s: actions[min(s, 2)],
                 on_trace_ready=lambda p: spans.append(len(p.events()))) as prof:
        with record_function("outer"):  # ends with span 1; its exit in span 2 is ignored
            ember.ones(2).exp()
            prof.step()
            ember.ones(2).exp()  # not recorded: NONE
            prof.step()
        ember.ones(2).exp()
    assert spans == [3, 2]  # ProfilerStep#0, outer, exp; ProfilerStep#2, exp
    assert prof.step_num == 2 and "ProfilerStep#2" in [e.trace_name for e in prof.events()]


def test_a_region_open_across_a_span_keeps_its_end_with_acc_events():
    # with acc_events the next span kept the event list, so the region's own exit closed it
    # a second time: its end moved past the span's and ProfilerStep#0 got a negative self time
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (no warm-up)
        plan = schedule(wait=0, warmup=0, active=1, repeat=2)
    with profile(schedule=plan, acc_events=True) as prof:
        with record_function("outer"), record_function("inner"):
            ember.ones(2).exp()
            prof.step()
            ember.ones(2).exp()
        prof.step()
    events = {e.trace_name: e for e in prof.events()}
    step0, outer = events["ProfilerStep#0"], events["outer"]
    assert step0.end <= events["inner"].end == outer.end < events["ProfilerStep#1"].start
    assert min(e.self_cpu_time_total for e in prof.events()) >= 0


@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_trace_handler_writes_chrome_traces(tmp_path, use_gzip):
    handler = tensorboard_trace_handler(tmp_path / "runs", worker_name="w0", use_gzip=use_gzip)
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 on_trace_ready=handler) as prof:
        for _ in range(5):
            ember.ones(3).sin()
            prof.step()
    files = sorted((tmp_path / "runs").iterdir())
    suffix = ".pt.trace.json" + (".gz" if use_gzip else "")
    assert len(files) == 2 and all(f.name.startswith("w0.") and f.name.endswith(suffix)
                                   for f in files)
    text = (gzip.open if use_gzip else open)(files[0], "rt").read()
    names = [e["name"] for e in json.loads(text)["traceEvents"]]
    assert "sin" in names and "ProfilerStep#1" in names


def test_activities():
    assert supported_activities() == {ProfilerActivity.CPU}
    assert ProfilerActivity.CUDA.value == torch.profiler.ProfilerActivity.CUDA.value
    profile(activities=[ProfilerActivity.CPU])
    # beside the CPU a device activity is left out with a warning, as torch does without CUDA
    # (torch's tutorials ask for [CPU, CUDA]: it was refused), and the CPU is profiled
    with pytest.warns(UserWarning, match=r"activities \['CUDA'\] cannot be traced.*CPU only"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            ember.ones(3).sin()
    assert "sin" in [e.key for e in prof.key_averages()]
    with pytest.raises(ValueError, match=r"activities \['CUDA'\] cannot be traced"):
        profile(activities=[ProfilerActivity.CUDA])  # (torch: 'No activities specified')


@pytest.mark.parametrize("name", ["ember.profiler.schedule", "ember.profiler.activity"])
def test_docstring_examples_run(name):
    import importlib

    result = doctest.testmod(importlib.import_module(name), extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_a_span_that_outlives_an_inner_profile_leaves_nothing_behind():
    from ember.autograd.engine import VJP_HOOK
    from ember.ops.primitive import DISPATCH

    hook, handlers = VJP_HOOK.around, list(DISPATCH.stack)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outer = profile(schedule=schedule(wait=1, warmup=0, active=2, repeat=1))
    outer.start()
    inner = profile()
    inner.__enter__()
    outer.step()  # outer starts recording while inner is open, and outlives it
    inner.__exit__(None, None, None)
    with record_function("outer only"):
        ember.ones(2).exp()
    outer.stop()
    assert "outer only" in [e.name for e in outer.events()]
    assert "outer only" not in [e.name for e in inner.events()]
    assert VJP_HOOK.around is hook and DISPATCH.stack == handlers  # nothing stays switched on
    x = ember.ones(2, requires_grad=True)
    with record_function("after both"):
        (x * 2).sum().backward()
    assert "after both" not in [e.name for e in inner.events() + outer.events()]


def test_step_outside_start_and_stop_raises():
    prof = profile(schedule=schedule(wait=0, warmup=1, active=1))
    with pytest.raises(RuntimeError, match=r"profile.step\(\): the profile is not running"):
        prof.step()
    with prof:
        prof.step()
    with pytest.raises(RuntimeError, match="not running"):
        prof.step()
    with pytest.raises(RuntimeError, match=r"profile.stop\(\): the profile is not running"):
        prof.stop()


def test_a_region_never_exited_ends_with_the_span():
    # it was dropped from the open regions with no end (a negative duration of the clock's
    # magnitude). Regions need not nest, so the outer one's exit leaves it open; the span's
    # end closes it (PyTorch gives it no duration)
    with profile() as prof:
        with record_function("outer"):
            record_function("left open").__enter__()
            ember.ones(2).exp()
        ember.ones(2).sin()
    events = {e.trace_name: e for e in prof.events()}
    outer, left = events["outer"], events["left open"]
    assert outer.end < events["sin"].start < events["sin"].end <= left.end
    assert left.cpu_parent is None and [c.name for c in left.cpu_children] == ["exp", "sin"]
    assert outer.self_cpu_time_total == outer.cpu_time_total > 0


def test_a_trace_of_accumulated_spans_starts_at_time_zero():
    # each span reset the trace's time 0, so the earlier spans' events had negative "ts"
    plan = schedule(wait=1, warmup=1, active=1, repeat=2)
    with profile(schedule=plan, acc_events=True) as prof:
        for _ in range(7):
            ember.ones(2).exp()
            prof.step()
    spans = [e for e in prof.chrome_trace()["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in spans] == ["ProfilerStep#2", "exp", "ProfilerStep#5", "exp"]
    assert 0 <= spans[0]["ts"] < spans[2]["ts"]
    assert all(e["ts"] >= 0 for e in spans)


def test_stop_inside_the_with_block_as_torch():
    # the block's exit called stop() again: "the profile is not running"
    with profile() as prof:
        ember.ones(2).exp()
        prof.stop()
        ember.ones(2).sin()  # not recorded
    assert [e.name for e in prof.events()] == ["exp"]


@pytest.mark.parametrize("plan, acc_events", [((1, 1, 1, 2), False), ((0, 0, 2, 2), False),
                                              ((1, 1, 1, 2), True)], ids=str)
def test_metadata_belongs_to_the_trace_being_recorded_as_torch(plan, acc_events):
    # every key stayed in all later cycles' traces, and keys added in waiting steps were kept
    seen = {}
    for lib in (ember, torch):
        traces = seen[lib] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = lib.profiler.schedule(wait=plan[0], warmup=plan[1], active=plan[2],
                                          repeat=plan[3])
        with lib.profiler.profile(schedule=sched, acc_events=acc_events,
                                  on_trace_ready=lambda p, t=traces: t.append(
                                      sorted(k for k in _trace(p) if k.startswith("k")))) as p:
            for i in range(sum(plan[:3]) * plan[3] + 1):
                lib.ones(2).exp()
                p.add_metadata(f"k{i}", "v")
                p.step()
    assert seen[ember] == seen[torch]


def _trace(prof):
    if isinstance(prof, profile):
        return prof.chrome_trace()
    with tempfile.TemporaryDirectory() as d:
        prof.export_chrome_trace(f"{d}/t.json")
        with open(f"{d}/t.json") as f:
            return json.load(f)


def test_step_events_are_named_as_torch_names_them():
    # an event's name is ProfilerStep* (one key_averages row), its trace_name ProfilerStep#N,
    # as torch's FunctionEvent (Ember's events were named ProfilerStep#N)
    seen = {}

    def ready(prof):
        steps = [e for e in prof.events() if e.name.startswith("ProfilerStep")]
        seen.setdefault(lib, ([e.name for e in steps], [e.trace_name for e in steps]))
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (no warm-up)
            with lib.profiler.profile(schedule=lib.profiler.schedule(wait=0, warmup=0, active=2),
                                      on_trace_ready=ready) as prof:
                for _ in range(3):
                    lib.ones(2).sin()
                    prof.step()
    assert seen[ember] == seen[torch] == (["ProfilerStep*"] * 2,
                                          ["ProfilerStep#0", "ProfilerStep#1"])


def test_an_on_trace_ready_error_reaches_the_caller_as_torch():
    # ember's exit then stopped the stopped span again: "ValueError: list.remove(x): x not
    # in list" replaced the handler's own error
    def failing(prof):
        raise KeyError("handler failed")

    for lib in (ember, torch):
        plan = lib.profiler.schedule(wait=0, warmup=0, active=1)
        with pytest.raises(KeyError, match="handler failed"):
            with lib.profiler.profile(schedule=plan, on_trace_ready=failing) as prof:
                for _ in range(3):
                    lib.ones(2) + 1
                    prof.step()
        with lib.profiler.profile() as later:  # (profiling works afterwards)
            lib.ones(2) * 3
        assert any(e.name.endswith("mul") for e in later.events())


@pytest.mark.parametrize("returned", [None, True, 2])
def test_a_schedule_returning_no_action_is_refused(returned):
    # (it recorded nothing, without a word; torch fails on an assertion about initialisation)
    with pytest.raises(TypeError, match=f"schedule returned {returned!r}"):
        profile(schedule=lambda step: returned)
    plan = ember.profiler.schedule(wait=1, warmup=1, active=1)
    with profile(schedule=lambda step: plan(step) if step < 2 else returned) as prof:
        prof.step()
        with pytest.raises(TypeError, match="for step 2; it must return a ProfilerAction"):
            prof.step()


def test_an_on_trace_ready_that_is_not_callable_is_refused_at_once():
    # (it failed at the span's end with "'int' object is not callable"; torch crashes)
    with pytest.raises(TypeError, match="on_trace_ready must be callable"):
        profile(on_trace_ready=3)
