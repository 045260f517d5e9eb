"""``Timer``: times a statement, as ``torch.utils.benchmark.Timer`` (Python statements; Ember
has no C++ statements, Callgrind or CUDA synchronisation to offer)."""

from __future__ import annotations

import contextlib
import enum
import operator
import statistics
import textwrap
import timeit
from collections.abc import Callable, Iterator
from typing import Any

import ember
from ember.backend.threads import get_num_threads, set_num_threads
from ember.errors import ArgumentError
from ember.utils.benchmark.measurement import Measurement, TaskSpec

__all__ = ["Language", "Timer"]


class Language(enum.Enum):
    """The language of a statement, as ``torch.utils.benchmark.Language``: Ember times
    Python only."""

    PYTHON = 0
    CPP = 1


def _positive_count(value: Any, where: str, meaning: str) -> int:
    """``value`` as a Python int when it is a positive integer of any type (``int``,
    ``np.int64``, anything with ``__index__``) and not a bool; else an ArgumentError that
    names ``where`` (``"Timer.timeit: number"``) and ``meaning`` (``"the runs to time"``)."""
    try:
        count = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        count = None
    if count is None or count < 1:
        raise ArgumentError(f"{where} must be a positive int ({meaning}), got {value!r}")
    return count


def _tidy(code: str) -> str:
    """Code dedented, without its first newline and trailing blanks (so that an indented
    block string runs), as PyTorch's Timer does."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()

_MAX_BLOCK = 2 ** 31 - 1


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    """BLAS runs with ``n`` threads inside (Ember's GEMMs and convolutions), as the timer's
    ``num_threads`` asks; the previous count is restored after."""
    before = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


class Timer:
    """Times ``stmt`` after running ``setup``, in ``globals`` (a dict: the namespace both run
    in, which has ``ember`` unless it says otherwise), with ``num_threads`` BLAS threads, as
    ``torch.utils.benchmark.Timer``. Indented block strings are dedented. ``label``,
    ``sub_label``, ``description`` and ``env`` name the measurement in reprs and in
    :class:`~ember.utils.benchmark.Compare`'s table (label: the table; sub-label: the row;
    description: the column). ``timer`` is the clock (:func:`timeit.default_timer`);
    ``global_setup`` (third, as PyTorch's) is for C++ statements, which Ember does not time.

    Ember's ops finish before they return (NumPy computes eagerly), so there is nothing to
    synchronise around the clock.

    Example:
        >>> from ember.utils.benchmark import Timer
        >>> t = Timer("x @ x", setup="x = ember.ones(8, 8)", globals={"ember": ember},
        ...           label="matmul", sub_label="8x8")
        >>> m = t.timeit(100)
        >>> m.number_per_run, len(m.times), m.title
        (100, 1, 'matmul: 8x8')
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timeit.default_timer,
                 globals: dict[str, Any] | None = None,  # noqa: A002 - torch's name
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise ArgumentError(f"Timer: stmt and setup must be strings of Python code, got "
                                f"{type(stmt).__name__} and {type(setup).__name__}")
        if language not in (Language.PYTHON, "py", "python"):
            raise ArgumentError(f"Timer: language {language!r} is not supported: Ember times "
                                "Python statements only. Hint: language='python'")
        if global_setup:
            raise ArgumentError(f"Timer: global_setup is C++ only (as in PyTorch), got "
                                f"{global_setup!r}. Hint: move this code to setup")
        num_threads = _positive_count(num_threads, "Timer: num_threads", "the threads to use")
        stmt, setup = _tidy(stmt), _tidy(setup)
        self._task_spec = TaskSpec(stmt, setup, label, sub_label, description, env,
                                   num_threads)
        self._timer = timeit.Timer(stmt, setup, timer,
                                   globals={"ember": ember, **(globals or {})})

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)  # (a zero would break the statistics)

    def _measurement(self, number: int, times: list[float]) -> Measurement:
        return Measurement(number, times, self._task_spec)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Runs ``stmt`` ``number`` times (after a warm-up of ``number // 100``, at least 2)
        and returns one measurement of them, as :meth:`timeit.Timer.timeit`."""
        number = _positive_count(number, "Timer.timeit: number", "the runs to time")
        with _threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return self._measurement(number, [self._timeit(number)])

    def _block_size(self, min_run_time: float) -> int:
        """Runs per measurement: grown tenfold until the clock's own cost is at most 0.01% of
        a block (and a block takes at least min_run_time / 1000), or a block takes longer
        than ``min_run_time``."""
        overhead = statistics.median(self._timeit(0) for _ in range(5))
        number = 1
        while number * 10 <= _MAX_BLOCK:
            taken = self._timeit(number)
            if overhead / taken <= 1e-4 and taken >= min_run_time / 1000 or \
                    taken > min_run_time:
                break
            number *= 10
        return number

    def _measure(self, min_run_time: float, block_min_run_time: float,
                 done: Callable[[list[float], int], bool], max_run_time: float | None,
                 callback: Callable[[int, float], None] | None) -> Measurement:
        with _threads(self._task_spec.num_threads):
            number = self._block_size(block_min_run_time)
            times: list[float] = []
            while True:
                spent = self._timeit(number)
                times.append(spent)
                if callback is not None:
                    callback(number, spent)
                total = sum(times)
                if total >= min_run_time and done(times, number):
                    break
                if max_run_time and total > max_run_time:
                    break
        return self._measurement(number, times)

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Times blocks of runs until ``min_run_time`` seconds are spent; the block size is
        chosen first so that the clock's cost is negligible. ``callback(number, seconds)``
        sees each block."""
        return self._measure(min_run_time, min_run_time, lambda times, number: True, None,
                             callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None
                           ) -> Measurement:
        """As :meth:`blocked_autorange`, but goes on (past ``min_run_time``, up to
        ``max_run_time`` seconds) until more than 3 blocks are timed and their IQR / median
        is below ``threshold``."""
        def confident(times: list[float], number: int) -> bool:
            return len(times) > 3 and self._measurement(number, times).meets_confidence(
                threshold)
        return self._measure(min_run_time, 0.05, confident, max_run_time, callback)
