"""ember.profiler: op and backward events, shapes, FLOPs (against torch.profiler), tables,
Chrome traces, record_function, memory per op, and no cost when off."""

import json

import numpy as np
import pytest
import torch
from torch.autograd.profiler_util import _format_time

import ember
from ember.autograd.engine import VJP_HOOK
from ember.ops.primitive import DISPATCH
from ember.profiler import profile, record_function
from ember.profiler.events import _fmt_time


def _mlp_step():
    w = ember.randn(8, 4, requires_grad=True)
    x = ember.randn(3, 8)
    with profile(record_shapes=True, profile_memory=True, with_flops=True) as prof:
        with record_function("forward"):
            y = (x @ w).relu().sum()
        with record_function("backward"):
            y.backward()
    return prof


def test_records_forward_and_backward_ops():
    prof = _mlp_step()
    names = [e.name for e in prof.events()]
    assert {"matmul", "relu", "sum", "forward", "backward"} <= set(names)
    assert "MatmulBackward0" in names and "ReluBackward0" in names
    events = prof.events()
    bwd = next(e for e in events if e.name == "MatmulBackward0")
    inner = [e for e in events if e.parent >= 0 and prof._events[e.parent] is bwd]
    assert inner and all(e.kind == "op" for e in inner)  # the rule's ops sit inside it
    assert any(e.name == "matmul" for e in inner)
    top = next(e for e in events if e.name == "backward")
    assert bwd.start >= top.start and bwd.end <= top.end


def test_input_shapes_and_grouping():
    prof = _mlp_step()
    mm = next(e for e in prof.events() if e.name == "matmul")
    assert mm.input_shapes == [[3, 8], [8, 4]]
    rows = prof.key_averages(group_by_input_shape=True)
    assert any(r.key == "matmul" and r.input_shapes == [[3, 8], [8, 4]] for r in rows)
    ungrouped = prof.key_averages()
    assert len({r.key for r in ungrouped}) == len(ungrouped)


def test_flops_match_torch_profiler():
    a, b = torch.randn(16, 32), torch.randn(32, 24)
    with torch.profiler.profile(with_flops=True) as tp:
        torch.mm(a, b)
    t_flops = sum(e.flops for e in tp.key_averages() if e.key == "aten::mm")
    with profile(with_flops=True) as prof:
        ember.from_numpy(a.numpy()) @ ember.from_numpy(b.numpy())
    e_flops = sum(r.flops for r in prof.key_averages() if r.key == "matmul")
    assert e_flops == t_flops == 2 * 16 * 32 * 24


def test_conv_flops_count_the_macs():
    conv = ember.nn.Conv2d(3, 8, 3, padding=1)
    with ember.no_grad(), profile(with_flops=True) as prof:
        conv(ember.randn(2, 3, 10, 10))
    assert [e.flops for e in prof.events() if e.name == "conv"] == [2 * 2 * 8 * 10 * 10 * 3 * 9]


def test_table_layout_and_sorting():
    prof = _mlp_step()
    text = prof.key_averages().table(sort_by="cpu_time_total", row_limit=4)
    lines = text.splitlines()
    header = lines[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", "CPU Mem",
                "# of Calls", "Total FLOPs"):
        assert col in header
    assert lines[-1].startswith("Self CPU time total:")
    assert len(lines) == 3 + 4 + 2
    rows = prof.key_averages()
    by_count = rows.table(sort_by="count", row_limit=1).splitlines()[3]
    assert by_count.split()[0] == max(rows, key=lambda r: r.count).key
    with pytest.raises(ValueError, match="unknown sort_by"):
        rows.table(sort_by="speed")
    assert "Input Shapes" in prof.table(row_limit=3)  # record_shapes groups by shapes


def test_self_time_excludes_children():
    prof = _mlp_step()
    rows = {r.key: r for r in prof.key_averages()}
    fwd = rows["forward"]
    assert fwd.self_cpu_time_total < fwd.cpu_time_total
    total = prof.key_averages().total_average()
    assert total.self_cpu_time_total <= sum(r.cpu_time_total for r in rows.values())


def _check_nesting(events):
    by_tid = {}
    for e in events:
        by_tid.setdefault(e["tid"], []).append(e)
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in evs:
            while open_ends and e["ts"] >= open_ends[-1] - 1e-6:
                open_ends.pop()
            if open_ends:
                assert e["ts"] + e["dur"] <= open_ends[-1] + 1e-3, "events overlap"
            open_ends.append(e["ts"] + e["dur"])


def test_chrome_trace_schema(tmp_path):
    prof = _mlp_step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    assert set(trace) >= {"traceEvents"} and isinstance(trace["traceEvents"], list)
    complete = []
    for ev in trace["traceEvents"]:
        assert isinstance(ev["name"], str) and ev["ph"] in ("X", "M", "i")
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "X":
            assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0
            assert isinstance(ev["cat"], str) and isinstance(ev["args"], dict)
            complete.append(ev)
        elif ev["ph"] == "i":  # (profile_memory's, as PyTorch's)
            assert ev["name"] == "[memory]" and isinstance(ev["args"]["Bytes"], int)
        else:
            assert ev["name"] in ("process_name", "thread_name") and "name" in ev["args"]
    assert len(complete) == len(prof.events())
    mm = next(ev for ev in complete if ev["name"] == "matmul")
    assert mm["args"]["Input Dims"] == [[3, 8], [8, 4]] and mm["args"]["flops"] == 192
    _check_nesting(complete)


def test_record_function_nests_and_decorates():
    @record_function("outer")
    def work():
        with record_function("inner"):
            return ember.ones(3) * 2

    work()  # no profile active: nothing happens
    with profile() as prof:
        work()
    ev = {e.name: e for e in prof.events()}
    assert prof._events[ev["inner"].parent] is ev["outer"]
    assert prof._events[ev["mul"].parent] is ev["inner"]


def test_profile_memory_records_bytes_per_op():
    with profile(profile_memory=True) as prof:
        a = ember.zeros(256, 256)
        b = a + 1
    del a, b
    add = next(r for r in prof.key_averages() if r.key == "add")
    assert add.cpu_memory_usage == 256 * 256 * 4
    assert "CPU Mem" in prof.key_averages().table()
    plain = profile()
    with plain:
        ember.zeros(8) + 1
    assert "CPU Mem" not in plain.key_averages().table()


def test_nested_profiles_both_record():
    with profile() as outer:
        ember.ones(2) + 1
        with profile() as inner:
            ember.ones(2) * 3
    assert [e.name for e in inner.events() if e.kind == "op"].count("mul") == 1
    assert "mul" in [e.name for e in outer.events()]
    assert "add" not in [e.name for e in inner.events()]


def test_nested_profiles_both_record_backward_and_regions():
    x = ember.ones(2, requires_grad=True)
    with profile() as outer, profile() as inner, record_function("region"):
        (x * 3).sum().backward()
    for prof in (outer, inner):
        events = {e.name: e for e in prof.events()}
        assert {"region", "MulBackward0", "mul"} <= set(events)
        assert events["MulBackward0"].parent >= 0  # inside the region, in both profiles


def test_off_after_exit_and_on_error():
    with pytest.raises(ember.ShapeError), profile():
        ember.ones(2, 3) @ ember.ones(2, 3)
    assert DISPATCH.handler is None and VJP_HOOK.around is None
    assert not ember.memory.is_enabled()


def test_train_profile_steps(tmp_path):
    from ember.train.config import make_config
    from ember.train.profile import profile_steps

    cfg = make_config({"model": "mlp", "train_size": 64, "test_size": 32, "batch_size": 16,
                       "out": str(tmp_path), "progress": False})
    try:
        done = profile_steps(cfg, 2)
    except Exception as exc:  # noqa: BLE001 - no dataset installed on this machine
        pytest.skip(f"no training data: {exc}")
    assert "step 0" in done["table"] and "matmul" in done["table"]
    json.loads((tmp_path / "trace.json").read_text())


def test_trace_metadata_as_torch(tmp_path):
    # torch.profiler.profile's add_metadata/add_metadata_json were missing
    with profile() as prof:
        ember.ones(2).exp()
        prof.add_metadata("run", 'the "baseline"')
        prof.add_metadata_json("sizes", '{"batch": 4}')
    prof.export_chrome_trace(tmp_path / "t.json")
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["run"] == 'the "baseline"' and trace["sizes"] == {"batch": 4}
    assert any(e["name"] == "exp" for e in trace["traceEvents"])
    with pytest.raises(TypeError, match="strings"):
        prof.add_metadata("n", 3)  # torch: AttributeError 'int' object has no attribute 'replace'
    with pytest.raises(ValueError, match="not JSON"):
        prof.add_metadata_json("bad", "{oops")
    # the key was not checked (json wrote it as "5"); torch: TypeError
    with pytest.raises(TypeError, match="add_metadata_json: key and value must be strings"):
        prof.add_metadata_json(5, "1")
    prof.add_metadata("late", "x")  # ignored once the profile stops, as torch's
    assert "late" not in prof.chrome_trace() and prof.chrome_trace()["run"]


def test_time_strings_and_device_times_as_torch():
    # FunctionEvent/FunctionEventAvg's *_str views and device_time/cuda_time were missing
    with profile() as prof:
        ember.ones(4, 4) @ ember.ones(4, 4)
    for item in (prof.events()[0], prof.key_averages()[0]):
        # (the unit follows the magnitude: a first call slowed past 1 ms on a loaded host
        # shows "ms")
        for name in ("cpu_time_total", "self_cpu_time_total", "cpu_time"):
            assert getattr(item, f"{name}_str") == _format_time(getattr(item, name)), name
        assert (item.device_time, item.cuda_time, item.device_time_total_str) == (0, 0, "0.000us")
    assert [_fmt_time(us) for us in (999.9, 1500.0, 2.5e6)] == ["999.900us", "1.500ms", "2.500s"]


def test_torch_keywords_of_key_averages_and_table():
    # EventList.key_averages' keyword is group_by_input_shapes in torch (it was a TypeError
    # here, as were group_by_overload_name and table's time_unit)
    with profile(record_shapes=True) as prof:
        ember.ones(2).exp()
        ember.ones(3).exp()
    rows = prof.events().key_averages(group_by_input_shapes=True, group_by_overload_name=True)
    assert sorted(str(r.input_shapes) for r in rows if r.key == "exp") == ["[[2]]", "[[3]]"]
    assert len(prof.key_averages(group_by_overload_name=True)) == 1
    for unit in ("s", "ms", "us"):
        text = prof.key_averages().table(time_unit=unit)
        assert text.rstrip().endswith(unit) and f"{unit}  " in text.splitlines()[3]
    with pytest.raises(ValueError, match="time_unit"):
        prof.key_averages().table(time_unit="ns")


@pytest.mark.parametrize("name", [123, None])
def test_record_function_name_must_be_a_string_as_torch(name):
    # it was taken, and key_averages failed on it: 'int' object has no attribute 'startswith'
    # (torch raises a RuntimeError at the call; ArgumentTypeError is a RuntimeError too)
    with pytest.raises(RuntimeError, match="name must be a str"):
        record_function(name)


@pytest.mark.parametrize("row_limit", ["3", 2.0])
def test_a_row_limit_that_is_not_an_int_is_named(row_limit):
    # was "TypeError: '<' not supported between instances of 'str' and 'int'"
    with profile() as prof:
        ember.ones(2) + 1
    with pytest.raises(TypeError, match="row_limit must be an int"):
        prof.key_averages().table(row_limit=row_limit)


@pytest.mark.parametrize("row_limit", [np.int64(1), np.uint8(1), np.int32(2)])
def test_an_index_like_row_limit_is_taken_as_torch(row_limit):
    # np.int64 was refused ("row_limit must be an int"); torch's table takes it
    tables = []
    for lib in (torch, ember):
        with lib.profiler.profile() as prof:
            lib.ones(2) + 1
            lib.ones(2) * 2
        tables.append(prof.key_averages().table(row_limit=row_limit))
    assert [len(t.splitlines()) for t in tables[1:]] == [len(tables[0].splitlines())]
