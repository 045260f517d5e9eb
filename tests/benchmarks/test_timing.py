"""The benchmarks' timing: a timed run of whole rounds of calls, lasting at least as asked."""

import time

from benchmarks.timing import compare, per_call_seconds


def test_a_timed_run_repeats_its_calls_until_it_lasts_long_enough():
    made = []

    def call():
        made.append(1)
        time.sleep(0.001)

    seconds = per_call_seconds(call, 3, least=0.03)
    assert len(made) >= 21 and len(made) % 3 == 0  # (each sleep lasts a ms or more)
    assert 0.001 <= seconds < 0.03
    made.clear()
    per_call_seconds(call, 3)
    assert len(made) == 3


def test_compare_alternates_and_keeps_one_sample_per_repeat():
    order = []
    samples = compare({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                      calls=2, repeats=2, warmup=1)
    assert {k: len(v) for k, v in samples.items()} == {"a": 2, "b": 2}
    assert order[:2] == ["a", "b"] and order[2:8] == ["a"] * 3 + ["b"] * 3
