"""``ember.autograd.profiler``: PyTorch's older profiler API (``torch.autograd.profiler``) on
:mod:`ember.profiler`: :class:`profile` (with ``enabled`` and ``function_events``),
``record_function``, and :class:`emit_nvtx`, a no-op as Ember emits no NVTX ranges.

Example:
    >>> with ember.autograd.profiler.profile(record_shapes=True) as prof:
    ...     with ember.autograd.profiler.record_function("step"):
    ...         y = ember.ones(2, 2) @ ember.ones(2, 2)
    >>> [e.name for e in prof.function_events]
    ['step', 'matmul']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError
from ember.profiler.activity import DeviceType, kineto_available, warn_untraced
from ember.profiler.events import Event, EventList, FunctionEventAvg
from ember.profiler.profile import profile as _profile
from ember.profiler.profile import record_function

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "emit_nvtx",
           "kineto_available", "profile", "record_function"]

_UNFINISHED = "<unfinished ember.autograd.profile>"

#: PyTorch's name of an event's class here (``prof.function_events`` holds them)
FunctionEvent = Event


class profile(_profile):
    """``torch.autograd.profiler.profile``: records as :class:`ember.profiler.profile` does
    when ``enabled`` (when not, records nothing, checks nothing, and the ``with`` gives None,
    as PyTorch's); ``function_events`` are the events, ``table`` sums them by name.
    ``use_kineto``, ``custom_trace_id_callback`` and ``activity_filters`` (of device
    activities) are accepted and change nothing (one recorder, of the host); so is
    ``post_processing_timeout_s`` (no post-processing; negative is an error, as PyTorch's).
    ``use_cpu=False`` (device events only) is refused: there would be nothing to trace;
    ``use_cuda=True`` or a ``use_device`` other than "cpu" warns and profiles the CPU, as
    PyTorch does on a host without that device (no device events are traced).

    Example:
        >>> with ember.autograd.profiler.profile() as prof:
        ...     _ = ember.ones(3) * 2
        >>> sorted({e.key for e in prof.key_averages()})
        ['mul']
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None,
                 acc_events: bool = False,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None,
                 activity_filters: dict | None = None) -> None:
        if enabled:  # (PyTorch checks nothing when not: profile(enabled=flag, use_cuda=True))
            _check_options(use_cpu, use_device, use_cuda)
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_flops=with_flops, with_stack=with_stack,
                         with_modules=with_modules,
                         experimental_config=experimental_config, acc_events=acc_events,
                         post_processing_timeout_s=post_processing_timeout_s
                         if enabled else None)
        self.enabled = enabled
        self._finished = False  # (stopped since its last start: it has events to show)

    def __enter__(self) -> profile | None:
        """The profile; None when not ``enabled`` (as PyTorch's)."""
        return super().__enter__() if self.enabled else None

    def start(self) -> None:
        if self.enabled:
            super().start()
            self._finished = False

    def stop(self) -> None:
        if self.enabled:
            super().stop()
            self._finished = True

    def __str__(self) -> str:
        """The events' table, one row each, as PyTorch's (``print(prof)``); before the
        profile stops, ``<unfinished ember.autograd.profile>`` (PyTorch's text)."""
        return str(self.events()) if self._shows_events() else _UNFINISHED

    def __repr__(self) -> str:
        """The events' list repr, as PyTorch's; ``<unfinished ember.autograd.profile>``
        before the profile stops."""
        return repr(self.events()) if self._shows_events() else _UNFINISHED

    def _shows_events(self) -> bool:
        return self._finished or not self.enabled

    @property
    def function_events(self) -> EventList:
        """The recorded events, in start order."""
        return self.events()

    def total_average(self) -> FunctionEventAvg:
        """One row summing every event (key ``"Total"``), as PyTorch's.

        Example:
            >>> with ember.autograd.profiler.profile() as prof:
            ...     _ = ember.ones(3) * 2
            >>> prof.total_average().key, prof.total_average().count
            ('Total', 1)
        """
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The self times of all events, in microseconds."""
        return self.events().self_cpu_time_total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The events as a table, one row each (see :meth:`EventList.table`)."""
        return self.events().table(sort_by, row_limit, max_src_column_width,
                                   max_name_column_width, max_shapes_column_width, header,
                                   top_level_events_only)


def _check_options(use_cpu: bool, use_device: str | None, use_cuda: bool) -> None:
    where = "autograd.profiler.profile"
    if not use_cpu:
        raise ArgumentError(f"{where}: use_cpu=False asks for device events only, and Ember's "
                            "profiler traces the host (ops on any device are timed from "
                            "there): nothing would be traced. Hint: leave use_cpu out")
    if use_device not in (None, "cpu"):
        warn_untraced(f"use_device={use_device!r}", 2)
    if use_cuda:
        warn_untraced("use_cuda=True", 2)


class emit_nvtx:
    """``torch.autograd.profiler.emit_nvtx``: a no-op here (Ember has no NVTX ranges to emit
    for an external profiler).

    Example:
        >>> with ember.autograd.profiler.emit_nvtx():
        ...     _ = ember.ones(2) + 1
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled

    def __enter__(self) -> emit_nvtx:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
