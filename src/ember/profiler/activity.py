"""What a profile can trace (``ProfilerActivity``): Ember's profiler times what runs on the CPU
(every primitive, backward rule and user region); the device kinds are PyTorch's names, refused
by :func:`check_activities` with a clear error, as Ember has no device tracer.

Example:
    >>> ember.profiler.supported_activities()
    {<ProfilerActivity.CPU: 0>}
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from ember.errors import ArgumentError


class ProfilerActivity(Enum):
    """Kinds of activity a profiler may trace (PyTorch's members and values)."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    """The activities :class:`~ember.profiler.profile` can trace here: the CPU."""
    return {ProfilerActivity.CPU}


def check_activities(activities: Iterable[ProfilerActivity] | None) -> None:
    """Refuses activities other than the CPU, naming them (None means the CPU)."""
    if activities is None:
        return
    wanted = set(activities)
    unknown = [a for a in wanted if not isinstance(a, ProfilerActivity)]
    if unknown:
        raise TypeError(f"profile: activities must be ember.profiler.ProfilerActivity members, "
                        f"got {unknown!r}")
    refused = sorted(a.name for a in wanted - supported_activities())
    if refused:
        raise ArgumentError(
            f"profile: activities {refused} cannot be traced: Ember's profiler traces the CPU "
            "(ops on any device are timed from the host). Hint: "
            "activities=[ProfilerActivity.CPU], or leave activities out"
        )
