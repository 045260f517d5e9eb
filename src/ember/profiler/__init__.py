"""``ember.profiler``: where the time (and memory) of eager code goes, op by op.

Example:
    >>> with ember.profiler.profile(record_shapes=True, profile_memory=True) as prof:
    ...     loss = model(x).sum()
    ...     loss.backward()
    >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    >>> prof.export_chrome_trace("trace.json")
"""

import sys

import ember.autograd
from ember.profiler import autograd_profiler
from ember.profiler.activity import (
    DeviceType,
    ProfilerActivity,
    kineto_available,
    supported_activities,
)
from ember.profiler.events import Event, EventList, FunctionEventAvg
from ember.profiler.flops import flops_of, register_flops
from ember.profiler.profile import profile, record_function
from ember.profiler.schedule import ProfilerAction, schedule
from ember.profiler.trace_handler import tensorboard_trace_handler

# torch.autograd.profiler's path (the lower layer cannot import this one: it is registered)
sys.modules["ember.autograd.profiler"] = ember.autograd.profiler = autograd_profiler

__all__ = ["DeviceType", "Event", "EventList", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "flops_of", "kineto_available", "profile", "record_function",
           "register_flops", "schedule", "supported_activities", "tensorboard_trace_handler"]
