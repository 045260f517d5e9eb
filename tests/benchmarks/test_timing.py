"""The benchmarks' timing: a timed run of whole rounds of calls, lasting at least as asked."""

from types import SimpleNamespace

import pytest
from benchmarks.timing import compare, per_call_seconds

from benchmarks import timing


def test_a_timed_run_repeats_its_calls_until_it_lasts_long_enough(monkeypatch):
    clock = [0.0]  # (a call "takes" 4 ms of this clock: the count of rounds is exact)
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    made = []

    def call():
        made.append(1)
        clock[0] += 0.004

    assert per_call_seconds(call, 3, least=0.03) == pytest.approx(0.004)
    assert len(made) == 9  # three rounds of three: 36 ms, the first past 30
    made.clear()
    per_call_seconds(call, 3)
    assert len(made) == 3


def test_compare_alternates_and_keeps_one_sample_per_repeat():
    order = []
    samples = compare({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                      calls=2, repeats=2, warmup=1)
    assert {k: len(v) for k, v in samples.items()} == {"a": 2, "b": 2}
    assert order[:2] == ["a", "b"] and order[2:8] == ["a"] * 3 + ["b"] * 3
