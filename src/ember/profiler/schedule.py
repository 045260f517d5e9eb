"""Profiling some steps of a long loop: :func:`schedule` says, for each step number, whether
the profiler waits, warms up or records (a :class:`ProfilerAction`), as in ``torch.profiler``.

Example:
    >>> plan = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [plan(step).name for step in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from enum import Enum

from ember.errors import ArgumentError


class ProfilerAction(Enum):
    """What the profiler does during a step: nothing, warm up, record, or record and then hand
    the trace to ``on_trace_ready`` (the last step of each active span)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The step → action function of a profiling cycle: after ``skip_first`` steps, cycles of
    ``wait`` idle steps, ``warmup`` steps and ``active`` recorded steps (the last one
    ``RECORD_AND_SAVE``), ``repeat`` times (forever when 0). With ``skip_first_wait=1`` the
    first cycle starts without its wait.

    Example:
        >>> plan = ember.profiler.schedule(wait=0, warmup=1, active=1, skip_first=1)
        >>> [plan(step).name for step in range(4)]
        ['NONE', 'WARMUP', 'RECORD_AND_SAVE', 'WARMUP']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ArgumentError(
            f"schedule: invalid arguments wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0)"
        )
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise ArgumentError(f"schedule: step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def record_every_step(step: int) -> ProfilerAction:
    """The schedule of a profile given none: record from the start, never hand over early."""
    return ProfilerAction.RECORD
