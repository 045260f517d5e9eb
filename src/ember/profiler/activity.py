"""What a profile can trace (``ProfilerActivity``): Ember's profiler times what runs on the CPU
(every primitive, backward rule and user region); the device kinds are PyTorch's names: asked
for beside the CPU they are left out with a warning, as PyTorch leaves out a device it lacks
(Ember has no device tracer: ops on any device are timed from the host); alone, refused.

Example:
    >>> ember.profiler.supported_activities()
    {<ProfilerActivity.CPU: 0>}
"""

from __future__ import annotations

import warnings
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


class DeviceType(Enum):
    """The device an event ran on (PyTorch's ``DeviceType``, its first members and values):
    always ``CPU`` for Ember's events, which are timed from the host.

    Example:
        >>> with ember.profiler.profile() as prof:
        ...     _ = ember.ones(2) + 1
        >>> {e.device_type for e in prof.events()}
        {<DeviceType.CPU: 0>}
    """

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


def kineto_available() -> bool:
    """Whether :class:`~ember.profiler.profile` (PyTorch's Kineto-based profiler API, with
    schedules, traces and ``on_trace_ready``) is available: always, as in a PyTorch build.
    """
    return True


def supported_activities() -> set[ProfilerActivity]:
    """The activities :class:`~ember.profiler.profile` can trace here: the CPU."""
    return {ProfilerActivity.CPU}


def check_activities(activities: Iterable[ProfilerActivity] | None) -> None:
    """Warns of activities other than the CPU beside it, naming them, and refuses a list
    without the CPU (None means the CPU)."""
    if activities is None:
        return
    wanted = set(activities)
    unknown = [a for a in wanted if not isinstance(a, ProfilerActivity)]
    if unknown:
        raise TypeError(f"profile: activities must be ember.profiler.ProfilerActivity members, "
                        f"got {unknown!r}")
    left_out = sorted(a.name for a in wanted - supported_activities())
    if not left_out:
        return
    if ProfilerActivity.CPU not in wanted:
        raise ArgumentError(f"profile: activities {left_out} cannot be traced: Ember's profiler "
                            "traces the CPU (ops on any device are timed from the host). Hint: "
                            "activities=[ProfilerActivity.CPU], or leave activities out")
    warn_untraced(f"activities {left_out}", 2)


def warn_untraced(what: str, frames_up: int) -> None:
    """Warns that ``what`` (device events asked for) cannot be traced and the CPU is profiled,
    as PyTorch warns where a device is missing; the warning points ``frames_up`` frames above
    the caller (at the user's line)."""
    warnings.warn(f"profile: {what} cannot be traced: Ember's profiler traces the CPU (ops on "
                  "any device are timed from the host); profiling the CPU only, as PyTorch "
                  "does where a device is missing", UserWarning, stacklevel=frames_up + 2)
