"""``ember.mps``: ``torch.mps`` as it answers on a machine without Apple's Metal (MPS) backend,
which Ember never has (it computes on the CPU): ``is_available()`` is False, ``manual_seed``
does nothing, and what needs the device raises.

Example:
    >>> ember.mps.is_available(), ember.mps.device_count()
    (False, 0)
    >>> ember.mps.manual_seed(0)
"""

from __future__ import annotations

from ember._no_backend import needs_device

__all__ = ["current_allocated_memory", "device_count", "driver_allocated_memory",
           "empty_cache", "get_rng_state", "is_available", "manual_seed",
           "recommended_max_memory", "seed", "set_per_process_memory_fraction",
           "set_rng_state", "synchronize"]


def is_available() -> bool:
    """Whether an MPS device can be used: False."""
    return False


def device_count() -> int:
    """The number of MPS devices: 0."""
    return 0


def manual_seed(seed: int) -> None:
    """Seeds the MPS generator: nothing to seed, as PyTorch's without MPS (no error)."""
    int(seed)  # (a seed that is no integer is still an error)


seed = needs_device("mps", "seed")
synchronize = needs_device("mps", "synchronize")
empty_cache = needs_device("mps", "empty_cache")
current_allocated_memory = needs_device("mps", "current_allocated_memory")
driver_allocated_memory = needs_device("mps", "driver_allocated_memory")
recommended_max_memory = needs_device("mps", "recommended_max_memory")
get_rng_state = needs_device("mps", "get_rng_state")
set_rng_state = needs_device("mps", "set_rng_state")
set_per_process_memory_fraction = needs_device("mps", "set_per_process_memory_fraction")
