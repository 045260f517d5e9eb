"""Timer takes what torch's takes: indented block strings (dedented), statements using the
framework without passing it in globals, and language='python'."""

import numpy as np
import pytest
import torch.utils.benchmark as tb

import ember
from ember.utils import benchmark as eb

STMT = """
    x = 1
    y = x + 1
"""
SETUP = """
        z = 2
        w = z
"""


def _summary(measurement):
    return repr(measurement).splitlines()[1:-2]  # (the class and the timings differ)


@pytest.mark.parametrize("language", [eb.Language.PYTHON, "py", "python"])
def test_block_strings_and_language_as_torch(language):
    ours = eb.Timer(STMT, setup=SETUP, language=language).timeit(3)
    theirs = tb.Timer(STMT, setup=SETUP, language=language if isinstance(language, str)
                      else tb.Language.PYTHON).timeit(3)
    assert _summary(ours) == _summary(theirs)
    assert (ours.stmt, ours.setup) == (theirs.stmt, theirs.setup) == ("x = 1\ny = x + 1",
                                                                     "z = 2\nw = z")


def test_framework_is_in_globals_as_torch():
    assert tb.Timer("torch.ones(2)").timeit(2).number_per_run == 2
    assert eb.Timer("ember.ones(2)").timeit(2).number_per_run == 2
    assert eb.Timer("ember + 1", globals={"ember": 1}).timeit(2).number_per_run == 2


def test_cpp_is_refused_clearly():
    with pytest.raises(ValueError, match="Python statements only"):
        eb.Timer("x", language=eb.Language.CPP)
    with pytest.raises(ValueError, match="Python statements only"):  # (not global_setup's)
        eb.Timer("x", global_setup="#include <vector>", language="c++")
    assert ember.utils.benchmark.Language.CPP.value == tb.Language.CPP.value


def test_positional_arguments_and_global_setup_as_torch():
    for lib in (tb, eb):  # (torch's third positional argument is global_setup, then timer)
        calls = []

        def clock(calls=calls):
            calls.append(1)
            return float(len(calls))

        lib.Timer("x + 1", "x = 1", "", clock).timeit(3)
        assert calls
    for lib in (tb, eb):
        with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
            lib.Timer("x", global_setup="import os")


@pytest.mark.parametrize("number", [0, -3, 2.5, True, "5", np.int64(0)])
def test_timeit_refuses_a_number_of_runs_that_is_not_positive(number):
    # (torch: a ZeroDivisionError from its statistics, or timeit's TypeError for 2.5)
    with pytest.raises(ValueError, match="number must be a positive int"):
        eb.Timer("pass").timeit(number)


@pytest.mark.parametrize("number", [np.int64(3), np.uint8(3), 3])
def test_timeit_takes_any_integer_type_as_torch(number):
    want = tb.Timer("pass").timeit(number).number_per_run
    got = eb.Timer("pass").timeit(number).number_per_run
    assert got == want == 3 and type(got) is int


@pytest.mark.parametrize("threads", [np.int64(1), np.uint8(2), 1])
def test_num_threads_of_any_integer_type_as_torch(threads):
    # rm59df item 7: np.int64 was refused, as timeit's number was before 2ff9daa4
    seen = []
    got = eb.Timer("seen.append(ember.get_num_threads())", globals={"seen": seen},
                   num_threads=threads).timeit(2)
    want = tb.Timer("pass", num_threads=threads).timeit(2)
    assert got.num_threads == want.num_threads == threads and type(got.num_threads) is int
    assert set(seen) == {int(threads)}


@pytest.mark.parametrize("threads", [0, -1, True, np.True_, 2.0, np.float64(1), "2", None])
def test_num_threads_refuses_bools_floats_and_counts_below_one(threads):
    # (torch takes any of them here and fails, or not, when it sets the threads)
    with pytest.raises(ValueError, match="num_threads must be a positive int"):
        eb.Timer("pass", num_threads=threads)
