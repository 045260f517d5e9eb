"""``Measurement``: the times a :class:`~ember.utils.benchmark.Timer` took and their
statistics, as ``torch.utils.benchmark.Measurement``."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

IQR_WARN = 0.1  # IQR / median above which a measurement warns of fluctuation
IQR_GROSS_WARN = 0.25  # … of significant environmental influence
_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds: no time is trusted to finer than this


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed and how it is labelled (everything of a Timer but its globals)."""

    stmt: str
    setup: str
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the statement) with the sub-label."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + \
            textwrap.indent(self.stmt, "  ")

    def summarize(self) -> str:
        """The title, description and setup: the head of a measurement's repr."""
        setup = "" if self.setup in ("pass", "") else \
            f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup else \
            f"setup: {self.setup}"
        return "\n".join(f"{s}\n" if "\n" in s else s
                         for s in (self.title, self.description or "", setup) if s)


def select_unit(seconds: float) -> tuple[str, float]:
    """The unit ("ns", "us", "ms" or "s") that shows ``seconds`` with 1–3 leading digits,
    and its scale in seconds."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(math.floor(math.log10(seconds)) // 3, "s") \
        if seconds > 0 else "ns"
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 → 3.1)."""
    scale = 10 ** (math.ceil(math.log10(abs(x))) - n)
    return float(round(x / scale) * scale)


@dataclasses.dataclass(repr=False)
class Measurement:
    """Times of ``number_per_run`` runs each (``raw_times``, seconds) of one task, with their
    statistics per run: ``times``, ``median``, ``mean``, ``iqr``, ``significant_figures``;
    ``has_warnings`` when the spread is large. The task's fields (``label``, ``stmt``,
    ``num_threads`` …) read through. ``metadata`` is the user's.

    Example:
        >>> from ember.utils.benchmark import Measurement, TaskSpec
        >>> m = Measurement(1, [1e-6, 2e-6, 3e-6, 4e-6], TaskSpec("x + 1", "pass"))
        >>> round(m.median, 12), round(m.iqr, 12), m.significant_figures
        (2.5e-06, 1.5e-06, 1)
        >>> print(m)  # doctest: +ELLIPSIS
        <ember.utils.benchmark.measurement.Measurement object at 0x...>
        x + 1
          Median: 2.50 us
          IQR:    1.50 us (1.75 to 3.25)
          4 measurements, 1 runs per measurement, 1 thread
          WARNING: Interquartile range is 60.0% of the median measurement.
                   This suggests significant environmental influence.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:  # (only for names not found: the task's)
        if name in {f.name for f in dataclasses.fields(TaskSpec)}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    @property
    def times(self) -> list[float]:
        """Seconds per run, one entry per measurement."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q))

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def iqr(self) -> float:
        """The interquartile range of the times: 75th less 25th percentile."""
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread of the middle half of the times (a 90%
        confidence interval) supports, from 1 to 4 (what :class:`Compare` shows when
        trimming)."""
        ordered = sorted(self.times)
        middle = ordered[len(ordered) // 4:math.ceil(3 * len(ordered) / 4)]
        interval = max(1.645 * float(np.std(middle)) / math.sqrt(len(middle)),
                       _MIN_CONFIDENCE_INTERVAL)
        return min(max(math.floor(math.log10(self.median / interval)), 1),
                   _MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold: float = IQR_WARN) -> bool:
        """Whether IQR / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def warnings(self) -> tuple[str, ...]:
        if self.meets_confidence(IQR_WARN):
            return ()
        why = "This suggests significant environmental influence." \
            if not self.meets_confidence(IQR_GROSS_WARN) else \
            "This could indicate system fluctuation."
        return (f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of "
                f"the median measurement.\n           {why}",)

    @property
    def has_warnings(self) -> bool:
        return bool(self.warnings)

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def as_row_name(self) -> str:
        """The row of :class:`Compare`'s table: the sub-label, else the statement."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._quantile(0.25) / scale:.2f} to "
                         f"{self._quantile(0.75) / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads}")
        lines.extend(self.warnings)
        return "\n".join(lines)

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """One measurement per task, pooling replicates' times (as per-run times:
        ``number_per_run`` 1; metadata is dropped)."""
        groups: dict[TaskSpec, list[float]] = defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]
