"""``ember.xpu``: ``torch.xpu`` as it answers on a machine without an Intel GPU (XPU) backend,
which Ember never has (it computes on the CPU): queries report no device, seeding and
``empty_cache`` do nothing, memory counters are 0, and what needs a device raises.

Example:
    >>> ember.xpu.is_available(), ember.xpu.device_count()
    (False, 0)
    >>> ember.xpu.manual_seed_all(0)
"""

from __future__ import annotations

from typing import Any

from ember._no_backend import needs_device

__all__ = ["current_device", "device_count", "empty_cache", "get_device_capability",
           "get_device_name", "get_device_properties", "get_rng_state", "init", "initial_seed",
           "is_available", "is_bf16_supported", "is_initialized", "manual_seed",
           "manual_seed_all", "max_memory_allocated", "mem_get_info", "memory_allocated",
           "memory_reserved", "seed", "seed_all", "set_device", "synchronize"]


def is_available() -> bool:
    """Whether an XPU device can be used: False."""
    return False


def device_count() -> int:
    """The number of XPU devices: 0."""
    return 0


def is_initialized() -> bool:
    """Whether XPU has been initialised: never (False)."""
    return False


def is_bf16_supported(*args: Any) -> bool:
    """Whether an XPU device computes in bfloat16: there is none (False)."""
    return False


def manual_seed(seed: int) -> None:
    """Seeds the XPU generators: none to seed, as PyTorch's without XPU (no error)."""
    int(seed)  # (a seed that is no integer is still an error)


manual_seed_all = manual_seed


def seed() -> None:
    """Reseeds the XPU generators: none (no error)."""


seed_all = seed


def empty_cache() -> None:
    """Frees cached XPU memory: there is none."""


def memory_allocated(device: Any = None) -> int:
    """XPU memory held by tensors: 0."""
    return 0


max_memory_allocated = memory_reserved = memory_allocated

initial_seed = needs_device("xpu", "initial_seed")
synchronize = needs_device("xpu", "synchronize")
get_rng_state = needs_device("xpu", "get_rng_state")
current_device = needs_device("xpu", "current_device")
get_device_name = needs_device("xpu", "get_device_name")
get_device_properties = needs_device("xpu", "get_device_properties")
get_device_capability = needs_device("xpu", "get_device_capability")
init = needs_device("xpu", "init")
set_device = needs_device("xpu", "set_device")
mem_get_info = needs_device("xpu", "mem_get_info")
