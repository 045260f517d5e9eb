"""``ember.cpu``: ``torch.cpu``'s device-agnostic answers for the one CPU device (code that
calls ``getattr(torch, device.type).synchronize()`` and the like), and the deprecated
``ember.cpu.amp`` spellings of mixed precision.

Example:
    >>> ember.cpu.is_available(), ember.cpu.device_count(), ember.cpu.current_device()
    (True, 1, 'cpu')
"""

from __future__ import annotations

from typing import Any

from ember.cpu import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "set_device",
           "synchronize"]


def is_available() -> bool:
    """Always True: Ember computes on the CPU."""
    return True


def device_count() -> int:
    """Always 1: all cores are one device."""
    return 1


def current_device() -> str:
    """Always ``'cpu'``."""
    return "cpu"


def set_device(device: Any) -> None:
    """Nothing to do: there is one CPU device."""


def synchronize(device: Any = None) -> None:
    """Returns at once: CPU ops finish before they return."""
