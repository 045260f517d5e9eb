"""``ember.accelerator``: ``torch.accelerator``'s device-agnostic queries. Ember computes on
the CPU, which PyTorch does not count as an accelerator, so there is none: queries say so and
what needs one raises, as ``torch.accelerator`` does on a machine without one.

Example:
    >>> ember.accelerator.is_available(), ember.accelerator.current_accelerator()
    (False, None)
    >>> device = ember.accelerator.current_accelerator() or ember.device("cpu")
    >>> device
    device(type='cpu')
"""

from __future__ import annotations

from typing import Any, NoReturn

from ember.backend.device import Device
from ember.errors import DeviceError

__all__ = ["current_accelerator", "current_device_index", "device_count", "empty_cache",
           "is_available", "max_memory_allocated", "memory_allocated",
           "reset_peak_memory_stats", "set_device_index", "synchronize"]


def _none(name: str) -> NoReturn:
    raise DeviceError(f"ember.accelerator.{name}: Cannot access accelerator device when none "
                      "is available (Ember computes on the CPU, which is not an accelerator). "
                      "Hint: check ember.accelerator.is_available() first")


def is_available() -> bool:
    """Whether an accelerator can be used: False.

    Example:
        >>> ember.accelerator.is_available()
        False
    """
    return False


def current_accelerator(check_available: bool = False) -> Device | None:
    """The accelerator's device type, or None when there is none (always, in Ember).

    Example:
        >>> ember.accelerator.current_accelerator() is None
        True
    """
    return None


def device_count() -> int:
    """The number of accelerator devices: 0.

    Example:
        >>> ember.accelerator.device_count()
        0
    """
    return 0


def current_device_index() -> NoReturn:
    """The current accelerator's index: raises (there is none)."""
    _none("current_device_index")


def set_device_index(device: Any) -> NoReturn:
    """Selects an accelerator device: raises (there is none)."""
    _none("set_device_index")


def synchronize(device: Any = None) -> NoReturn:
    """Waits for an accelerator's work: raises (there is none)."""
    _none("synchronize")


def empty_cache() -> NoReturn:
    """Releases an accelerator's cached memory: raises (there is none)."""
    _none("empty_cache")


def memory_allocated(device_index: Any = None) -> NoReturn:
    """Bytes an accelerator's tensors hold: raises (there is none)."""
    _none("memory_allocated")


def max_memory_allocated(device_index: Any = None) -> NoReturn:
    """Peak bytes an accelerator's tensors held: raises (there is none)."""
    _none("max_memory_allocated")


def reset_peak_memory_stats(device_index: Any = None) -> NoReturn:
    """Resets an accelerator's memory peaks: raises (there is none)."""
    _none("reset_peak_memory_stats")
