"""ember.utils.benchmark: statistics, reprs and Compare tables equal torch's for the same
times; Timer's methods return measurements of the right structure (no timed assertions)."""

import doctest
import importlib

import numpy as np
import pytest
import torch.utils.benchmark as tb

import ember
from ember.utils import benchmark as eb

TIMES = [3e-6, 1e-6, 2.5e-6, 9e-6, 2e-6, 2.2e-6]


def _pair(times, number=10, **fields):
    fields = {"stmt": "f(x)", "setup": "x = 1", **fields}
    ours = eb.Measurement(number, times, eb.TaskSpec(**fields))
    theirs = tb.Measurement(number, times, tb.utils.common.TaskSpec(**fields))
    return ours, theirs


def _body(measurement):
    return repr(measurement).split("\n", 1)[1]  # (the first line names the class)


@pytest.mark.parametrize("times", [TIMES, TIMES[:3], TIMES[:1], [1e-3] * 5])
@pytest.mark.parametrize("fields", [{}, {"label": "add", "sub_label": "int",
                                         "description": "one", "num_threads": 2},
                                    {"stmt": "y = f(x)\nz = y", "setup": "a = 1\nb = 2"}])
def test_measurement_matches_torch(times, fields):
    ours, theirs = _pair(times, **fields)
    assert ours.times == pytest.approx(theirs.times)
    for name in ("median", "mean", "iqr"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name), rel=1e-12)
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings
    assert ours.title == theirs.title and ours.as_row_name == theirs.as_row_name
    assert _body(ours) == _body(theirs)
    assert repr(ours).startswith("<ember.utils.benchmark.measurement.Measurement object at")


def _compare_pair(trim=False, highlight=False):
    rng = np.random.default_rng(0)
    specs = [("add", "int", "one", 1), ("add", "int", "two", 1), ("add", "float", "one", 2),
             ("mul", "int", "one", 1), ("add", "int", "one", 1)]
    tables = []
    for lib, spec_cls in ((eb, eb.TaskSpec), (tb, tb.utils.common.TaskSpec)):
        rng = np.random.default_rng(0)
        results = [lib.Measurement(100, list(rng.uniform(1e-4, 3e-4, 7)),
                                   spec_cls(stmt="f(x)", setup="pass", label=label,
                                            sub_label=sub, description=desc,
                                            num_threads=threads))
                   for label, sub, desc, threads in specs]
        compare = lib.Compare(results[:2])
        compare.extend_results(results[2:])
        if trim:
            compare.trim_significant_figures()
        if highlight:
            compare.highlight_warnings()
        tables.append(str(compare))
    return tables


@pytest.mark.parametrize("trim", [False, True])
@pytest.mark.parametrize("highlight", [False, True])
def test_compare_table_matches_torch(trim, highlight):
    ours, theirs = _compare_pair(trim, highlight)
    assert ours == theirs
    assert "[" in ours and "threads: " in ours


def test_compare_refuses_other_results(capsys):
    with pytest.raises(ValueError, match="expected an instance of `Measurement`"):
        eb.Compare([1.0])
    m = eb.Measurement(1, [1e-3], eb.TaskSpec("pass", "pass", label="l"))
    eb.Compare([m]).print()
    assert "Times are in milliseconds (ms)." in capsys.readouterr().out


def test_timer_methods_return_measurements():
    calls = []
    timer = eb.Timer("x @ x", setup="x = ember.ones(4, 4)", globals={"ember": ember},
                     label="mm", sub_label="4x4", description="ember", num_threads=1)
    once = timer.timeit(20)
    assert (once.number_per_run, len(once.raw_times), once.title) == (20, 1, "mm: 4x4")
    blocked = timer.blocked_autorange(callback=lambda n, t: calls.append((n, t)),
                                      min_run_time=0.01)
    assert len(calls) == len(blocked.raw_times) >= 1
    assert all(n == blocked.number_per_run for n, _ in calls)
    assert sum(blocked.raw_times) >= 0.01
    adaptive = timer.adaptive_autorange(min_run_time=0.001, max_run_time=0.05)
    assert len(adaptive.raw_times) >= 1 and adaptive.median > 0
    assert adaptive.num_threads == 1 and adaptive.description == "ember"
    table = str(eb.Compare([once, blocked]))
    assert table.startswith("[") and " mm " in table and "4x4" in table and "ember" in table


def test_timer_sets_and_restores_threads():
    before = ember.get_num_threads()
    seen = []
    eb.Timer("seen.append(ember.get_num_threads())", globals={"ember": ember, "seen": seen},
             num_threads=1).timeit(2)
    assert set(seen) == {1} and ember.get_num_threads() == before


def test_timer_refuses_bad_arguments():
    with pytest.raises(ValueError, match="num_threads must be a positive int"):
        eb.Timer("pass", num_threads=0)
    with pytest.raises(ValueError, match="strings of Python code"):
        eb.Timer(lambda: None)


@pytest.mark.parametrize("module", ["utils.benchmark", "utils.benchmark.measurement",
                                    "utils.benchmark.timer", "utils.benchmark.compare"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"ember.{module}")
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
