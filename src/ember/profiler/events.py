"""What the profiler records (one :class:`Event` per op, backward rule or user region) and how
events are summed by name (:meth:`EventList.key_averages`) and printed as PyTorch does."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import operator
import os
from typing import Any, NamedTuple

from ember.errors import ArgumentError, ArgumentTypeError
from ember.profiler.activity import DeviceType

_SORT_KEYS = {
    "cpu_time_total": "cpu_time_total", "cpu_time": "cpu_time",
    "self_cpu_time_total": "self_cpu_time_total", "count": "count", "flops": "flops",
    "cpu_memory_usage": "cpu_memory_usage", "self_cpu_memory_usage": "self_cpu_memory_usage",
    # device columns (always 0 here: Ember traces the host), under PyTorch's names
    **{f"{self_}{dev}_{what}": "device_time_total"
       for self_ in ("", "self_") for dev in ("cuda", "device", "xpu", "privateuse1")
       for what in ("time_total", "memory_usage")},
    # the mean device time per call (torch's docs list cuda_time and xpu_time)
    **{f"{dev}_time": "device_time" for dev in ("cuda", "device", "xpu", "privateuse1")},
}


class _DeviceFields:
    """PyTorch's device columns of an event or a row: 0, as Ember traces only the host; and
    its ``*_str`` views of the times, formatted as in the table (``"1.234ms"``)."""

    __slots__ = ()

    device_type = DeviceType.CPU  # (where the event ran: Ember times everything on the host)
    device_time_total = self_device_time_total = device_time = cuda_time = 0
    device_memory_usage = self_device_memory_usage = 0

    cpu_time_str = property(lambda self: _fmt_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _fmt_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _fmt_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: _fmt_time(self.device_time))
    device_time_total_str = property(lambda self: _fmt_time(self.device_time_total))
    self_device_time_total_str = property(lambda self: _fmt_time(self.self_device_time_total))


class Interval(NamedTuple):
    """An event's start and end in microseconds (PyTorch's ``time_range``)."""

    start: float
    end: float

    def elapsed_us(self) -> float:
        return self.end - self.start


_IDS = itertools.count()


class Event(_DeviceFields):
    """One timed interval: an op (``kind`` "op"), a backward rule ("backward") or a
    :func:`~ember.profiler.record_function` region ("user"). ``start``/``end`` are clock
    readings in nanoseconds; the times it reports are in microseconds, as PyTorch's. A step's
    region is named ``ProfilerStep*`` (its ``trace_name``, used in the chrome trace, is
    ``ProfilerStep#N``), as PyTorch's ``FunctionEvent``."""

    __slots__ = ("name", "trace_name", "kind", "start", "end", "thread", "parent", "cpu_parent",
                 "cpu_children", "specs", "flops", "mem", "child_time", "child_mem", "id")

    def __init__(self, name: str, kind: str, start: int, thread: int, parent: int) -> None:
        self.trace_name, self.kind, self.start, self.end = name, kind, start, start
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.thread, self.parent = thread, parent  # (the parent's index in its profile)
        self.cpu_parent: Event | None = None
        self.cpu_children: list[Event] = []
        self.specs: tuple = ()  # of the inputs, with record_shapes
        self.flops = 0  # with with_flops: from the primitive's cost rule
        self.mem = 0  # net bytes of tensor memory allocated while it ran (children included)
        self.child_time = 0
        self.child_mem = 0
        self.id = next(_IDS)  # (distinct among the process's events, as PyTorch's)

    key = property(lambda self: self.name)
    count = 1
    is_async = False
    #: the Python stack (PyTorch's with ``with_stack``): always empty, Ember records none
    stack = property(lambda self: [])
    #: a :func:`~ember.profiler.record_function` region (a step's too), not an op
    is_user_annotation = property(lambda self: self.kind == "user")
    time_range = property(lambda self: Interval(self.start / 1e3, self.end / 1e3))

    @property
    def cpu_time_total(self) -> float:
        """Wall time in microseconds, children included."""
        return (self.end - self.start) / 1e3

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        """Wall time in microseconds, children excluded."""
        return (self.end - self.start - self.child_time) / 1e3

    @property
    def cpu_memory_usage(self) -> int:
        """Net bytes allocated while it ran, children included."""
        return self.mem

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.mem - self.child_mem

    @property
    def input_shapes(self) -> list[list[int]]:
        return [list(s.shape) for s in self.specs]

    def __repr__(self) -> str:
        return (f"<Event {self.name} {self.kind} {self.cpu_time_total:.1f} us "
                f"shapes={self.input_shapes}>")


class FunctionEventAvg(_DeviceFields):
    """Sums over the events of one name (and input shapes when grouped by them); times in
    microseconds, as PyTorch's."""

    __slots__ = ("key", "kind", "input_shapes", "count", "cpu_time_total", "self_cpu_time_total",
                 "flops", "cpu_memory_usage", "self_cpu_memory_usage", "cpu_parent")

    def __init__(self, key: str, kind: str, input_shapes: list | None) -> None:
        self.key, self.kind, self.input_shapes = key, kind, input_shapes
        self.count = self.cpu_time_total = self.self_cpu_time_total = self.flops = 0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.cpu_parent: Event | None = None  # (the first event's, as PyTorch's)

    def add(self, e: Event) -> None:
        if not self.count:
            self.cpu_parent = e.cpu_parent
        self.count += 1
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.flops += e.flops
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage

    is_async = False
    is_user_annotation = property(lambda self: self.kind == "user")
    stack = Event.stack

    @property
    def cpu_time(self) -> float:
        """Mean wall time per call in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg {self.key} count={self.count} "
                f"cpu_time_total={self.cpu_time_total:.1f} us>")


class EventList(list):
    """A list of events (or of averages) with PyTorch's ``key_averages`` and ``table``."""

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One row per op name (and per input shapes with ``group_by_input_shapes``, the
        keyword's name here as in PyTorch's ``EventList``); the steps of a scheduled profile
        (``ProfilerStep#N``) share the row ``ProfilerStep*``, as in PyTorch.
        (``group_by_stack_n`` and ``group_by_overload_name`` are accepted for PyTorch's
        signature: Ember records no stacks, and a primitive has no overloads.)"""
        rows: dict[Any, FunctionEventAvg] = {}
        for e in self:
            shapes = e.input_shapes if group_by_input_shapes else None
            key = (e.name, str(shapes)) if group_by_input_shapes else e.name
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg(e.name, e.kind, shapes)
            row.add(e)
        return EventList(rows.values())

    @property
    def self_cpu_time_total(self) -> float:
        """The self times of all the events (or rows), in microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total", "total", None)
        for e in self:
            total.add(e) if isinstance(e, Event) else _merge(total, e)
        return total

    def __str__(self) -> str:
        """The :meth:`table` with its defaults, as PyTorch's: ``print(prof.key_averages())``
        prints the table (``repr`` stays the list's)."""
        return self.table()

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Writes these events as :meth:`ember.profiler.profile.export_chrome_trace` does
        (times from the first event's start; each event's shapes, FLOPs and bytes as
        recorded), as PyTorch's ``EventList.export_chrome_trace``.

        Example:
            >>> with ember.autograd.profiler.profile() as prof:
            ...     _ = ember.ones(2) + 1
            >>> prof.function_events.export_chrome_trace("trace.json")  # doctest: +SKIP
        """
        rows = [e for e in self if not isinstance(e, Event)]
        if rows:
            raise ArgumentTypeError(
                f"export_chrome_trace: the list holds {type(rows[0]).__name__} rows (sums by "
                "name), which have no times to place on a timeline. Hint: export "
                "prof.events() (or prof.function_events), not prof.key_averages()")
        start = min((e.start for e in self), default=0)
        write_json(path, chrome_trace(self, start, shapes=any(e.specs for e in self),
                                      flops=any(e.flops for e in self),
                                      memory=any(e.mem for e in self)))

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """PyTorch's profiler table, a row per item of the list (per event, or per name after
        :meth:`key_averages`); "" for an empty list. ``sort_by`` is one of cpu_time_total,
        self_cpu_time_total, cpu_time, count, flops, cpu_memory_usage, self_cpu_memory_usage
        (or a device column, 0 here). ``top_level_events_only`` leaves out events inside
        others; there is no source column (``max_src_column_width`` is PyTorch's).
        ``time_unit`` ("s", "ms" or "us") puts every time in that unit (by default each in
        the largest that keeps it at 1 or more).

        Example:
            >>> with ember.profiler.profile() as prof:
            ...     _ = ember.ones(2) + 1
            >>> print(prof.key_averages().table(row_limit=1))  # doctest: +ELLIPSIS
            -------  ------------  ...
               Name    Self CPU %  ...
            ...
        """
        notes = [header] if header is not None else []
        if top_level_events_only:
            notes.append("This report only display top-level ops statistics")
        return format_table(list(self), sort_by, row_limit, max_name_column_width,
                            max_shapes_column_width, notes, top_level_events_only, time_unit)


_CATEGORY = {"op": "cpu_op", "backward": "autograd", "user": "user_annotation"}


def chrome_trace(events: list[Event], start: int, *, shapes: bool, flops: bool,
                 memory: bool) -> dict:
    """``events`` in the Chrome trace event format (times from ``start``, in ns), with each
    op's input dims and types (``shapes``), FLOPs (``flops``) and bytes (``memory``)."""
    pid = os.getpid()
    threads = {tid: n for n, tid in enumerate(dict.fromkeys(e.thread for e in events))}
    out: list[dict] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                        "args": {"name": "ember"}}]
    for tid, n in threads.items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": n,
                    "args": {"name": "main" if n == 0 else f"thread {tid}"}})
    for e in sorted(events, key=lambda e: e.start):
        args: dict[str, Any] = {}
        if e.kind == "op":
            if shapes:
                args["Input Dims"] = e.input_shapes
                args["Input type"] = [s.dtype.name for s in e.specs]
            if flops and e.flops:
                args["flops"] = e.flops
        if memory:
            args["bytes"] = e.mem
        out.append({"name": e.trace_name, "cat": _CATEGORY[e.kind], "ph": "X", "pid": pid,
                    "tid": threads[e.thread], "ts": (e.start - start) / 1e3,
                    "dur": (e.end - e.start) / 1e3, "args": args})
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": {"framework": "ember"}}


def write_json(path: str | os.PathLike, data: dict) -> None:
    """``data`` as JSON in ``path``, gzipped when the name ends with ``.gz``."""
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        json.dump(data, f)


def _merge(total: FunctionEventAvg, row: FunctionEventAvg) -> None:
    for name in ("count", "cpu_time_total", "self_cpu_time_total", "flops", "cpu_memory_usage",
                 "self_cpu_memory_usage"):
        setattr(total, name, getattr(total, name) + getattr(row, name))


_TIME_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}


def _fmt_time(us: float, unit: str | None = None) -> str:
    """``us`` microseconds in ``unit``, or in the largest unit that keeps it at 1 or more."""
    if unit is None:
        unit = next(u for u, size in _TIME_UNITS.items() if us >= size or u == "us")
    return f"{us / _TIME_UNITS[unit]:.3f}{unit}"


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


_FLOP_UNITS = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]


def _flops_unit(smallest: int) -> tuple[str, float]:
    """The FLOPs column's unit, as PyTorch picks it: the one of the smallest nonzero count."""
    power = int(max(0.0, min(math.log10(smallest) / 3, len(_FLOP_UNITS) - 1)))
    return _FLOP_UNITS[power], 1000.0 ** -power


def format_table(rows: list[Event | FunctionEventAvg], sort_by: str | None, row_limit: int,
                 name_width: int, shapes_width: int, notes: list[str],
                 top_level_only: bool = False, time_unit: str | None = None) -> str:
    """Formats events or averaged rows as PyTorch's ``_build_table``: right-aligned columns
    (the name's as wide as the longest name, the others 12), under ``notes`` (each after a
    rule of "="); percentages are of the summed self time of all rows."""
    if row_limit is not None:  # (an index-like NumPy integer too, as PyTorch's table takes)
        if isinstance(row_limit, bool) or not hasattr(type(row_limit), "__index__"):
            raise ArgumentTypeError(f"table: row_limit must be an int (or None for every "
                                    f"row), got {type(row_limit).__name__} {row_limit!r}")
        row_limit = operator.index(row_limit)
    if time_unit is not None and time_unit not in _TIME_UNITS:
        raise ArgumentError(f"table: unknown time_unit {time_unit!r}; use one of "
                            f"{', '.join(_TIME_UNITS)} (or None)")
    if not rows:
        return ""
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise ArgumentError(f"table: unknown sort_by {sort_by!r}; use one of "
                                f"{', '.join(_SORT_KEYS)}")
        rows = sorted(rows, key=lambda r: getattr(r, _SORT_KEYS[sort_by]), reverse=True)
    self_total = sum(r.self_cpu_time_total for r in rows)
    shown = [r for r in rows if not (top_level_only and r.cpu_parent is not None)]
    shown = shown if row_limit is None or row_limit < 0 else shown[:row_limit]
    with_mem = any(r.cpu_memory_usage for r in rows)
    flops = [r.flops for r in rows if r.flops > 0]
    cols = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    cols += ["CPU Mem", "Self CPU Mem"] if with_mem else []
    cols.append("# of Calls")
    widths = [min(max(len(r.key) for r in rows) + 4, name_width)] + [12] * (len(cols) - 1)
    if any(r.input_shapes for r in rows):
        cols.append("Input Shapes")
        widths.append(min(max(len(str(r.input_shapes)) for r in rows) + 4, shapes_width))
    if flops:
        unit, scale = _flops_unit(min(flops))
        cols.append(f"Total {unit}")
        widths.append(12)

    def share(us: float) -> str:
        return f"{100 * us / self_total:.2f}%" if self_total else "NaN"

    def line(cells: list[str]) -> str:
        return "".join(f"{c:>{w}}  " for c, w in zip(cells, widths, strict=True))

    rule = "".join("-" * w + "  " for w in widths)
    out = [line for note in notes for line in ("=" * (len(rule) - 2), note)]
    out += [rule, line(cols), rule]
    for r in shown:
        name = r.key if len(r.key) < name_width - 3 else r.key[:name_width - 3] + "..."
        cells = [name, share(r.self_cpu_time_total), _fmt_time(r.self_cpu_time_total, time_unit),
                 share(r.cpu_time_total), _fmt_time(r.cpu_time_total, time_unit),
                 _fmt_time(r.cpu_time, time_unit)]
        if with_mem:
            cells += [_fmt_bytes(r.cpu_memory_usage), _fmt_bytes(r.self_cpu_memory_usage)]
        cells.append(str(r.count))
        if "Input Shapes" in cols:
            cells.append(str(r.input_shapes or [])[:widths[len(cells)]])
        if flops:
            cells.append(f"{r.flops * scale:8.3f}" if r.flops > 0 else "--")
        out.append(line(cells))
    out += [rule, f"Self CPU time total: {_fmt_time(self_total, time_unit)}"]
    return "\n".join(out) + "\n"
