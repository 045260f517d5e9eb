"""ember.profiler and ember.autograd.profiler used as torch code uses them: the same calls
work, times are in microseconds, and tables have torch's columns."""

import contextlib
import json
import re
import time

import pytest
import torch

import ember


def _header(table):
    line = next(li for li in table.splitlines() if li.lstrip().startswith("Name"))
    return [c.strip() for c in line.split("  ") if c.strip()]


def _matmul_table(lib, **options):
    with lib.profiler.profile(**options) as prof:
        a = lib.ones(4, 4, requires_grad=True)
        (a @ a).sum().backward()
    return prof.key_averages(group_by_input_shape=options.get("record_shapes", False))


@pytest.mark.parametrize("options", [{}, {"with_flops": True},
                                     {"record_shapes": True, "profile_memory": True,
                                      "with_flops": True}], ids=str)
def test_table_columns_match_torch(options):
    ours, theirs = (_header(_matmul_table(lib, **options).table(row_limit=2))
                    for lib in (ember, torch))
    assert ours == theirs


@pytest.mark.parametrize("sort_by", ["device_time_total", "self_cuda_time_total",
                                     "device_memory_usage", "self_cpu_memory_usage",
                                     "cuda_time", "xpu_time", "device_time"])
def test_device_sort_keys_accepted(sort_by):
    for lib in (ember, torch):
        assert "Name" in _matmul_table(lib).table(sort_by=sort_by, row_limit=2)


def test_times_are_microseconds_as_torch():
    for lib in (ember, torch):
        with lib.profiler.profile() as prof:
            with lib.profiler.record_function("nap", "args"):
                time.sleep(0.02)
        nap = next(e for e in prof.events() if e.name == "nap")
        row = next(r for r in prof.key_averages() if r.key == "nap")
        assert 2e4 <= nap.cpu_time_total < 1e6 and 2e4 <= row.cpu_time_total < 1e6, lib
        assert 2e4 <= prof.key_averages().self_cpu_time_total < 1e6
        assert row.device_time_total == 0 and nap.key == "nap" and nap.count == 1


def test_scheduled_steps_share_one_row_as_torch():
    keys = []
    for lib in (ember, torch):
        plan = lib.profiler.schedule(wait=0, warmup=1, active=3, repeat=1)
        with lib.profiler.profile(schedule=plan) as prof:
            for _ in range(5):
                lib.ones(2).sum()
                prof.step()
        keys.append({r.key: r.count for r in prof.key_averages()
                     if r.key.startswith("ProfilerStep")})
    assert keys[0] == keys[1] == {"ProfilerStep*": 3}


def test_profile_accepts_torchs_options():
    for lib in (ember, torch):
        with lib.profiler.profile(with_modules=True, with_stack=True, acc_events=True,
                                  experimental_config=None, use_cuda=False):
            lib.ones(2) + 1


def _legacy(lib, enabled=True):
    profiler = lib.autograd.profiler
    with profiler.profile(enabled=enabled, record_shapes=True) as prof:
        with profiler.record_function("region"):
            lib.ones(2, 2) @ lib.ones(2, 2)
    return prof


def test_autograd_profiler_matches_torch():
    import ember.autograd.profiler

    rows = []
    for lib in (ember, torch):
        prof = _legacy(lib)
        assert [e.name for e in prof.function_events if e.name == "region"] == ["region"]
        assert "region" in prof.table(sort_by="cpu_time_total", row_limit=5)
        assert prof.self_cpu_time_total > 0
        rows.append(_header(prof.key_averages().table()))
        assert _legacy(lib, enabled=False) is None
    assert rows[0] == rows[1]
    assert not ember.autograd.profiler.profile(enabled=False).events()
    with ember.autograd.profiler.emit_nvtx():  # a no-op (torch's needs CUDA)
        ember.ones(2) + 1


def test_autograd_profiler_takes_torchs_keywords():
    # use_kineto, use_cpu, use_device, experimental_config, acc_events were TypeErrors
    import ember.autograd.profiler

    for lib in (ember, torch):
        with lib.autograd.profiler.profile(use_kineto=True, use_cpu=True, use_device=None,
                                           experimental_config=None, acc_events=True) as prof:
            lib.ones(2) + 1
        assert any(e.name.endswith("add") for e in prof.function_events)
    with pytest.raises(ValueError, match="use_cpu=False asks for device events only.*nothing"):
        ember.autograd.profiler.profile(use_cpu=False)
    # use_device='cuda' / use_cuda=True warn at the caller's line and profile the CPU, as
    # torch without CUDA (they were refused; the warning pointed into Ember's file)
    for options, words in (({"use_device": "cuda"}, "use_device='cuda'"),
                           ({"use_cuda": True}, "use_cuda=True")):
        with pytest.warns(UserWarning, match=f"{words} cannot be traced.*CPU only") as caught:
            with ember.autograd.profiler.profile(**options) as prof:
                ember.ones(2) + 1
        assert caught[0].filename == __file__
        assert any(e.name.endswith("add") for e in prof.function_events)
    with pytest.warns(UserWarning, match="use_cuda=True cannot be traced") as caught:
        ember.profiler.profile(use_cuda=True)
    assert caught[0].filename == __file__


@pytest.mark.parametrize("options", [{"use_cuda": True}, {"use_device": "cuda"},
                                     {"use_cpu": False}, {"post_processing_timeout_s": -1}],
                         ids=str)
def test_autograd_profiler_checks_nothing_when_disabled_as_torch(options):
    # its checks ran with enabled=False: profile(enabled=args.profile, use_cuda=True) failed
    for lib in (ember, torch):
        with lib.autograd.profiler.profile(enabled=False, **options) as prof:
            lib.ones(2) + 1
        assert prof is None
    with pytest.raises(ValueError, match="post_processing_timeout_s must be non-negative"):
        ember.autograd.profiler.profile(post_processing_timeout_s=-1)


def test_autograd_profiler_takes_torchs_newer_keywords():
    # custom_trace_id_callback, post_processing_timeout_s and activity_filters were TypeErrors
    for lib in (ember, torch):
        with lib.autograd.profiler.profile(custom_trace_id_callback=lambda: "run-1",
                                           post_processing_timeout_s=5.0,
                                           activity_filters={}) as prof:
            lib.ones(2) + 1
        assert any(e.name.endswith("add") for e in prof.function_events), lib


def test_docstring_examples():
    import doctest

    import ember.profiler.autograd_profiler as module

    result = doctest.testmod(module, extraglobs={"ember": ember})
    assert result.failed == 0 and result.attempted > 0


def _regions(lib, **options):
    with lib.profiler.profile(**options) as prof:
        with lib.profiler.record_function("r_a"):
            with lib.profiler.record_function("r_b"):
                lib.ones(2, 3).sum()
            with lib.profiler.record_function("r_c"):
                pass
    return prof


def _user_parent(event):
    parent = event.cpu_parent
    while parent is not None and not parent.name.startswith("r_"):
        parent = parent.cpu_parent
    return parent and parent.name


def test_cpu_parent_and_children_match_torch():
    nests = []
    for lib in (ember, torch):
        events = [e for e in _regions(lib).events() if e.name.startswith("r_")]
        nests.append(sorted((e.name, _user_parent(e)) for e in events))
        outer = next(e for e in events if e.name == "r_a")
        assert [c.name for c in outer.cpu_children if c.name.startswith("r_")] == ["r_b", "r_c"]
    assert nests[0] == nests[1] == [("r_a", None), ("r_b", "r_a"), ("r_c", "r_a")]


def test_event_table_lists_each_event_as_torch():
    for lib in (ember, torch):
        prof = _regions(lib)
        names = [line.split()[0] for line in prof.events().table().splitlines()
                 if line.split() and line.split()[0].startswith("r_")]
        assert sorted(names) == ["r_a", "r_b", "r_c"], lib
        top = prof.events().table(top_level_events_only=True, max_shapes_column_width=30,
                                  max_src_column_width=10)
        assert "r_a" in top and "r_b" not in top, lib
        rows = prof.key_averages(group_by_stack_n=3).table(top_level_events_only=True,
                                                            header="mine")
        assert "r_a" in rows and "r_b" not in rows, lib
        assert rows.splitlines()[1:4:2] == ["mine", "This report only display top-level ops "
                                            "statistics"], lib


def test_shapes_and_flops_only_when_asked_as_torch():
    for lib in (ember, torch):
        plain = [e for e in _regions(lib).events() if e.input_shapes]
        assert plain == [] and all(e.flops == 0 for e in _regions(lib).events()), lib
    shaped = [e.input_shapes for e in _regions(ember, record_shapes=True).events()
              if e.name == "sum"]
    assert shaped == [[[2, 3]]]


def _spans(lib, acc_events, steps, warmup):
    def keys(prof):
        return sorted((r.key.replace("aten::", ""), r.count) for r in prof.key_averages()
                      if r.key.replace("aten::", "") in ("sum", "ProfilerStep*"))
    ready = []
    plan = lib.profiler.schedule(wait=1, warmup=warmup, active=2)
    with lib.profiler.profile(schedule=plan, acc_events=acc_events,
                              on_trace_ready=lambda p: ready.append((p.step_num, keys(p)))) as p:
        for _ in range(steps):
            lib.ones(2).sum()
            p.step()
    return ready, keys(p)


@pytest.mark.parametrize("acc_events", [False, True])
@pytest.mark.parametrize("steps,warmup", [(4, 1), (5, 1), (7, 1), (3, 0), (6, 0)])
def test_schedule_spans_and_acc_events_match_torch(acc_events, steps, warmup):
    # a cycle's warm-up starts it afresh (so a loop ending in warm-up leaves no events), and
    # acc_events=True keeps every cycle's events
    with pytest.warns(UserWarning) if not warmup else contextlib.nullcontext():
        ours = _spans(ember, acc_events, steps, warmup)
    assert ours == _spans(torch, acc_events, steps, warmup)


def _region_table(lib, **table_options):
    with lib.profiler.profile(profile_memory=True) as prof:
        with lib.profiler.record_function("r_outer_region"):
            with lib.profiler.record_function("r_in"):
                time.sleep(0.001)
    rows = prof.key_averages()
    regions = type(rows)([r for r in rows if r.key.startswith("r_")])
    text = regions.table(sort_by="cpu_time_total", **table_options)
    number = r"-?\d+(\.\d+)?(%|us|ms|s| KB| B)?$"
    lines = text.splitlines()
    return [(len(line), [re.sub(number, "N", cell) for cell in re.split(r"\s{2,}", line)])
            for line in lines[:-1]] + [re.sub(r"[\d.]+", "N", lines[-1])]


@pytest.mark.parametrize("options", [{}, {"header": "title", "row_limit": 1},
                                     {"max_name_column_width": 8},
                                     {"top_level_events_only": True}], ids=str)
def test_table_text_matches_torch(options):
    assert _region_table(ember, **options) == _region_table(torch, **options)
    assert ember.profiler.EventList().table() == ""


def _stage(lib, name, n):
    with lib.profiler.record_function(name):
        for i in range(n):
            lib.ones(2).exp()
            time.sleep(0.002)
            yield i


def _span(lib, event):
    if lib is torch:
        return event.time_range.start, event.time_range.end
    return event.start / 1e3, event.end / 1e3


def test_regions_that_overlap_without_nesting_as_torch():
    # two generators, each yielding inside its own region: B opens inside A, and A ends
    # first. A's exit ended B too (B's own exit did nothing), so B lost the 5 steps after it
    for lib in (ember, torch):
        with lib.profiler.profile() as prof:
            with lib.profiler.record_function("outer"):
                a, b = _stage(lib, "A", 2), _stage(lib, "B", 6)
                next(a), next(b)
                list(a)
                list(b)
        events = {e.name: e for e in prof.events() if e.name in ("outer", "A", "B")}
        outer, a, b = events["outer"], events["A"], events["B"]
        assert _span(lib, a)[0] < _span(lib, b)[0] < _span(lib, a)[1] < _span(lib, b)[1], lib
        assert b.cpu_time_total >= 6 * 2e3, lib
        # B is not A's child (A does not contain it) but the outer region's, as A is
        assert b.cpu_parent is outer and a.cpu_parent is outer, lib
        assert [c.name for c in outer.cpu_children if c.name in "AB"] == ["A", "B"], lib
        # an op run while both are open is the later one's (A's second step is B's)
        assert [sum(c.name.endswith("exp") for c in e.cpu_children) for e in (a, b)] == [1, 7]
        for e in (outer, a, b):  # self time: the total less the children's totals
            children = sum(c.cpu_time_total for c in e.cpu_children)
            assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - children,
                                                          abs=1e-2), (lib, e.name)


def test_event_id_time_range_and_annotation_flags_as_torch():
    # FunctionEvent.id (distinct), .time_range (start/end in us, elapsed_us()),
    # .is_user_annotation (record_function regions and steps), .is_async; the last two on
    # key_averages() rows too
    found = {}
    for lib in (ember, torch):
        with lib.profiler.profile() as prof:
            with lib.profiler.record_function("region"):
                lib.ones(3).exp()
        events = prof.events()
        assert len({e.id for e in events}) == len(events)
        region = next(e for e in events if e.name == "region")
        op = next(e for e in events if e.name.endswith("exp"))
        assert region.time_range.elapsed_us() == pytest.approx(region.cpu_time_total)
        assert region.time_range.start <= op.time_range.start <= op.time_range.end \
            <= region.time_range.end
        rows = {r.key.split("::")[-1]: r for r in prof.key_averages()}  # (rows have them too)
        found[lib.__name__] = [(x.is_user_annotation, y.is_user_annotation, y.is_async)
                               for x, y in ((region, op), (rows["region"], rows["exp"]))]
    assert found["ember"] == found["torch"] == [(True, False, False)] * 2


def test_export_stacks_says_ember_records_no_stacks():
    # torch: prof.export_stacks(path) (with_stack=True); Ember records no Python stacks, so
    # the call is refused with that reason (it was an AttributeError)
    with ember.profiler.profile(with_stack=True) as prof:
        ember.ones(3).exp()
    with pytest.raises(NotImplementedError, match="no Python stacks.*export_chrome_trace"):
        prof.export_stacks("stacks.txt")


def test_with_flops_records_input_shapes_as_torch(tmp_path):
    # torch: with_flops=True alone records each op's input shapes (events' input_shapes,
    # the trace's Input Dims, key_averages(group_by_input_shape=True)'s column); Ember's
    # events had none without record_shapes
    found = {}
    for lib in (ember, torch):
        with lib.profiler.profile(with_flops=True) as prof:
            lib.ones(2, 3) @ lib.ones(3, 4)
        mm = next(e for e in prof.events() if e.name.split("::")[-1] in ("mm", "matmul"))
        prof.export_chrome_trace(str(tmp_path / "t.json"))
        trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
        dims = next(e["args"]["Input Dims"] for e in trace if e["name"] == mm.name)
        table = prof.key_averages(group_by_input_shape=True).table()
        found[lib.__name__] = (mm.input_shapes, dims, "Input Shapes" in table)
    assert found["ember"] == found["torch"] == ([[2, 3], [3, 4]], [[2, 3], [3, 4]], True)


def test_events_and_rows_have_torchs_empty_stack():
    # torch: FunctionEvent.stack and FunctionEventAvg.stack, [] without with_stack (code
    # reading [e.stack for e in prof.events()] got an AttributeError)
    for lib in (ember, torch):
        with lib.profiler.profile() as prof:
            lib.ones(3).exp()
        assert [e.stack for e in prof.events()][:1] == [[]], lib
        assert {tuple(r.stack) for r in prof.key_averages()} == {()}, lib


def test_another_threads_regions_and_backward_are_not_recorded_as_torch():
    # a profile records the ops of the thread that opened it; another thread's
    # record_function regions and backward rules were recorded (with none of their ops),
    # adding that thread's time to the table's totals
    import threading
    seen = {}
    for lib in (ember, torch):
        def work(lib=lib):
            with lib.profiler.record_function("in_thread"):
                x = lib.ones(3, requires_grad=True)
                (x * 3).sum().backward()

        with lib.profiler.profile() as prof:
            with lib.profiler.record_function("main"):
                thread = threading.Thread(target=work)
                thread.start()
                thread.join()
                lib.ones(3).exp()
        names = {e.name.split("::")[-1] for e in prof.events()}
        seen[lib.__name__] = ("in_thread" in names, any("Backward" in n for n in names),
                              "main" in names and "exp" in names)
    assert seen["ember"] == seen["torch"] == (False, False, True)


def test_profile_takes_keywords_only_as_torch():
    # ember's profile(activities, record_shapes, profile_memory, ...) took positions in
    # another order than an older torch's (activities, schedule, on_trace_ready, ...): a
    # schedule passed second turned record_shapes on, a handler third profile_memory
    for lib in (ember, torch):
        cpu = lib.profiler.ProfilerActivity.CPU
        with pytest.raises(TypeError):
            lib.profiler.profile([cpu], lib.profiler.schedule(wait=0, warmup=1, active=1))


def test_trace_id_and_torchs_other_keywords():
    # custom_trace_id_callback, post_processing_timeout_s and execution_trace_observer=None
    # (TypeErrors), get_trace_id(), tensorboard_trace_handler(use_python_export=...)
    ids = {}
    for lib in (ember, torch):
        with lib.profiler.profile(custom_trace_id_callback=lambda: "run-7",
                                  post_processing_timeout_s=5.0,
                                  execution_trace_observer=None) as prof:
            lib.ones(2) + 1
        ids[lib.__name__] = prof.get_trace_id()
        lib.profiler.tensorboard_trace_handler("unused", use_python_export=True)
        with pytest.raises(ValueError, match="post_processing_timeout_s must be non-negative"):
            with lib.profiler.profile(post_processing_timeout_s=-1):  # (torch: on entering)
                pass
    assert ids == {"ember": "run-7", "torch": "run-7"}
    assert prof.get_trace_id() == "run-7"
    with ember.profiler.profile() as prof:
        ember.ones(2) + 1
    assert len(prof.get_trace_id()) == 32 and prof.chrome_trace()["trace_id"] == \
        prof.get_trace_id()
    with pytest.raises(NotImplementedError, match="execution trace"):
        ember.profiler.profile(execution_trace_observer=object())


def test_autograd_profiler_total_average_and_function_event_as_torch():
    # profile.total_average() and autograd.profiler.FunctionEvent were AttributeErrors
    for lib in (ember, torch):
        prof = _legacy(lib)
        total = prof.total_average()
        events = prof.function_events
        assert total.key == "Total" and total.count == len(events), lib
        assert total.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in events))
        assert all(isinstance(e, lib.autograd.profiler.FunctionEvent) for e in events)


def test_str_of_an_event_list_is_its_table_as_torch():
    # print(prof.key_averages()) prints the table in torch (it printed a list repr)
    for lib in (ember, torch):
        prof = _regions(lib)
        for events in (prof.key_averages(), prof.events()):
            text = str(events)
            assert text == events.table(), lib
            assert "r_a" in text and "Self CPU %" in text, lib


def test_str_of_an_autograd_profile_is_its_events_table_as_torch():
    # print(prof) of torch.autograd.profiler.profile prints a row per event
    for lib in (ember, torch):
        prof = _legacy(lib)
        assert str(prof) == prof.function_events.table(), lib
        assert "region" in str(prof), lib
        assert repr(prof) == repr(prof.function_events), lib


def test_an_unfinished_autograd_profile_prints_as_torch():
    # torch prints '<unfinished torch.autograd.profile>' before the profile stops
    for lib in (ember, torch):
        text = f"<unfinished {lib.__name__}.autograd.profile>"
        prof = lib.autograd.profiler.profile()
        assert str(prof) == repr(prof) == text, lib
        with prof:
            lib.ones(2) + 1
            assert str(prof) == repr(prof) == text, lib
        assert str(prof) == prof.function_events.table(), lib


def test_event_list_exports_a_chrome_trace_as_torch(tmp_path):
    # torch.autograd.profiler's prof.function_events.export_chrome_trace(path)
    import json

    for lib in (ember, torch):
        prof = _legacy(lib)
        path = tmp_path / f"{lib.__name__}.json"
        prof.function_events.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        spans = [e for e in events if e.get("ph") == "X"]
        region = next(e for e in spans if e["name"] == "region")
        inside = [e for e in spans if e is not region and
                  region["ts"] <= e["ts"] <= region["ts"] + region["dur"]]
        assert inside, lib
    ours = json.loads((tmp_path / "ember.json").read_text())["traceEvents"]
    assert [e["cat"] for e in ours if e["name"] == "region"] == ["user_annotation"]
    assert [e["args"]["Input Dims"] for e in ours if e["name"] == "matmul"] == [[[2, 2], [2, 2]]]
    with pytest.raises(TypeError, match="prof.events()"):
        _legacy(ember).key_averages().export_chrome_trace(str(tmp_path / "rows.json"))


def test_preset_metadata_goes_into_every_trace_as_torch(tmp_path):
    import json

    for lib in (ember, torch):
        traces = []

        def save(prof, lib=lib, traces=traces):
            path = tmp_path / f"{lib.__name__}{len(traces)}.json"
            prof.export_chrome_trace(str(path), use_python_export=False)
            traces.append(json.loads(path.read_text()))

        prof = lib.profiler.profile(schedule=lib.profiler.schedule(wait=0, warmup=1, active=1),
                                    on_trace_ready=save)
        prof.preset_metadata_json("run", '{"id": 7}')
        with prof:
            for _ in range(4):
                lib.ones(2) + 1
                prof.step()
        assert [t["run"] for t in traces] == [{"id": 7}] * 2, lib
    with pytest.raises(ValueError, match="not JSON"):
        ember.profiler.profile().preset_metadata_json("run", "{oops")


def test_optimizer_steps_are_regions_as_torch():
    # torch's tables show each step as Optimizer.step#<class>.step; Ember's had no such row
    # (the update's time, spent in fused kernels outside any op, was in no row at all)
    from ember.optim import optimizer

    rows = {}
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        with lib.profiler.profile() as prof:
            for _ in range(2):
                (w * 2).sum().backward()
                opt.step()
        rows[lib] = {r.key: r.count for r in prof.key_averages() if r.key.startswith("Optim")}
        if lib is ember:
            step = next(e for e in prof.events() if e.name.startswith("Optim"))
            assert step.cpu_parent is None and step.self_cpu_time_total > 0
    assert rows[ember] == rows[torch] == {"Optimizer.step#SGD.step": 2}
    assert not optimizer._GLOBAL_STEP_PRE_HOOKS and not optimizer._GLOBAL_STEP_POST_HOOKS


def test_device_type_and_kineto_available_as_torch():
    # torch code filters events by e.device_type == DeviceType.CPU and checks
    # kineto_available(): AttributeErrors here before
    for lib in (torch, ember):
        DeviceType = lib.profiler.DeviceType
        with lib.profiler.profile() as prof:
            lib.ones(2) + 1
        assert {e.device_type for e in prof.events()} == {DeviceType.CPU}
        assert {r.device_type for r in prof.key_averages()} == {DeviceType.CPU}
        assert lib.profiler.kineto_available() is lib.autograd.profiler.kineto_available()
        assert lib.autograd.profiler.DeviceType is DeviceType
    assert {n: int(v.value) for n, v in ember.profiler.DeviceType.__members__.items()} == \
        {n: int(v) for n, v in torch.profiler.DeviceType.__members__.items()}
