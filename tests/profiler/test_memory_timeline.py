"""profile.export_memory_timeline: PyTorch's [times, sizes by category] plot data (JSON,
gzipped JSON) and HTML plot of the bytes tensors hold over the profile, op by op."""

import gc
import gzip
import json

import pytest
import torch

import ember

MiB = 2 ** 20


def _timeline(lib, path, **kw):
    gc.collect()
    with lib.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True,
                              **kw) as prof:
        a = lib.ones(256, 1024)            # 1 MiB
        b = a * 2                          # 2 MiB held
        del a, b
        c = lib.zeros(512, 1024)           # 2 MiB made and dropped with no op after it
        del c
    prof.export_memory_timeline(str(path))
    return prof


def test_json_has_torchs_layout_and_the_peaks(tmp_path):
    for lib in (ember, torch):
        _timeline(lib, tmp_path / f"{lib.__name__}.json")
        times, sizes = json.loads((tmp_path / f"{lib.__name__}.json").read_text())
        assert len(times) == len(sizes) and times == sorted(times)
        assert {len(row) for row in sizes} == {9}  # [0, 7 categories, uncategorised]
        totals = [sum(row) - min(sum(row) for row in sizes) for row in sizes]
        assert max(totals) >= 2 * MiB, lib  # a and b together
    times, sizes = json.loads((tmp_path / "ember.json").read_text())
    totals = [row[-1] for row in sizes]
    assert [sum(row[:-1]) for row in sizes] == [0] * len(sizes)  # Ember: all uncategorised
    base = totals[0]
    assert totals[-1] == base
    held = [n - base for n in totals]
    assert 2 * MiB + 4 in held  # a with b (and the scalar 2 of a * 2)
    # the zeros alone, made and dropped between ops (a sample taken only after each op
    # would miss it)
    assert held.index(2 * MiB) > held.index(2 * MiB + 4)


def test_gzip_and_html(tmp_path):
    prof = _timeline(ember, tmp_path / "m.json.gz")
    with gzip.open(tmp_path / "m.json.gz", "rt") as f:
        times, sizes = json.load(f)
    assert len(times) == len(sizes) > 1
    prof.export_memory_timeline(str(tmp_path / "m.html"))
    page = (tmp_path / "m.html").read_text()
    assert page.startswith("<html>") and "data:image/png;base64," in page


def test_needs_profile_memory_and_refuses_raw(tmp_path):
    with ember.profiler.profile() as prof:
        ember.ones(2) * 2
    with pytest.raises(ValueError, match="profile_memory=True"):  # torch: ValueError too
        prof.export_memory_timeline(str(tmp_path / "m.json"))
    prof = _timeline(ember, tmp_path / "m.json")
    with pytest.raises(NotImplementedError, match="raw.*json"):
        prof.export_memory_timeline(str(tmp_path / "m.raw.json.gz"))


def test_a_schedule_keeps_the_recorded_span_only(tmp_path):
    sched = ember.profiler.schedule(wait=1, warmup=0, active=1)
    with ember.profiler.profile(profile_memory=True, schedule=sched) as prof:
        big = ember.ones(1024, 1024) * 1  # step 0: waiting, not recorded
        del big
        prof.step()
        small = ember.ones(16) * 1
        prof.step()
    prof.export_memory_timeline(str(tmp_path / "m.json"))
    times, sizes = json.loads((tmp_path / "m.json").read_text())
    totals = [row[-1] for row in sizes]
    assert max(totals) - min(totals) < MiB
    del small


def test_chrome_trace_has_torchs_memory_instant_events(tmp_path):
    # torch writes a "[memory]" instant event per allocation and free with profile_memory
    # (Perfetto and TensorBoard read them); Ember's trace had none
    found = {}
    for lib in (ember, torch):
        gc.collect()
        with lib.profiler.profile(profile_memory=True) as prof:
            a = lib.ones(256, 1024)
            b = a * 2
            del a, b
        prof.export_chrome_trace(str(tmp_path / "t.json"))
        events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
        mem = [e for e in events if e.get("name") == "[memory]"]
        assert {e["ph"] for e in mem} == {"i"} and {e["cat"] for e in mem} == \
            {"cpu_instant_event"}, lib
        changes = [e["args"]["Bytes"] for e in mem]
        assert all(mem[i]["ts"] <= mem[i + 1]["ts"] for i in range(len(mem) - 1))
        assert sum(changes) == 0 and [e["args"]["Device Type"] for e in mem][:1] == [0]
        found[lib.__name__] = sorted(c for c in changes if abs(c) >= MiB)
    # both allocate a and b (1 MiB each) and free them
    assert found["ember"][-2:] == found["torch"][-2:] == [MiB, MiB]
    # (frees between two samples are one event: a, b and the scalar 2 together)
    assert -2 * MiB - 64 < sum(c for c in found["ember"] if c < 0) <= -2 * MiB


def test_device_names_are_read_and_an_unseen_device_is_an_empty_timeline(tmp_path):
    # device="cpu:0" wrote an empty timeline (the samples are keyed "cpu"); a device the
    # profile never saw writes torch's empty [[], []] (a torch script exporting "cuda:0"
    # runs on a CPU-only machine)
    with ember.profiler.profile(profile_memory=True) as prof:
        x = ember.ones(256, 1024)
        y = x * 2
    got = {}
    for device in (None, "cpu", "cpu:0", ember.device("cpu")):
        prof.export_memory_timeline(str(tmp_path / "m.json"), device=device)
        got[str(device)] = json.loads((tmp_path / "m.json").read_text())
    assert len({json.dumps(v) for v in got.values()}) == 1
    assert max(row[-1] for row in got["cpu:0"][1]) >= 2 * MiB
    prof.export_memory_timeline(str(tmp_path / "m.json"), device="cuda:0")
    assert json.loads((tmp_path / "m.json").read_text()) == [[], []]
    del x, y


def test_repeated_samples_are_dropped_as_they_come():
    # every op end and new tensor kept a copy of the byte counts (~840 B per op of x + 1), also
    # where the bytes had not changed since the last sample
    x = ember.ones(8)
    with ember.profiler.profile(profile_memory=True) as prof:
        for _ in range(2000):
            x + 1  # (the scalar's tensor and the result: two changes)
    noted = [(device, n) for _, device, n in prof._memory_samples if device is not None]
    assert all(a != b for a, b in zip(noted, noted[1:])) and len(noted) <= 2 * 2000 + 2
    assert len([e for e in prof.events() if e.name == "add"]) == 2000


def test_bytes_made_between_the_spans_of_a_schedule_are_no_memory_event():
    # with acc_events, 1 MiB made in the unrecorded step showed as a +1 MiB event at the next
    # span's start (torch has no event for an unrecorded step)
    keep = []
    sched = ember.profiler.schedule(wait=1, warmup=0, active=1, repeat=2)
    with ember.profiler.profile(profile_memory=True, acc_events=True, schedule=sched) as prof:
        for _ in range(4):
            keep.append(ember.ones(1024, 256))  # 1 MiB each step, two steps recorded
            prof.step()
    events = [e for e in prof.chrome_trace()["traceEvents"] if e.get("name") == "[memory]"]
    assert [e["args"]["Bytes"] for e in events] == [MiB, MiB]
