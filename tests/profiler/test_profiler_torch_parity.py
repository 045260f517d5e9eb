"""ember.profiler and ember.autograd.profiler used as torch code uses them: the same calls
work, times are in microseconds, and tables have torch's columns."""

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
                                     "device_memory_usage", "self_cpu_memory_usage"])
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
    with pytest.raises(ValueError, match="CUDA"):
        ember.profiler.profile(use_cuda=True)


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


def test_docstring_examples():
    import doctest

    import ember.profiler.autograd_profiler as module

    result = doctest.testmod(module, extraglobs={"ember": ember})
    assert result.failed == 0 and result.attempted > 0
