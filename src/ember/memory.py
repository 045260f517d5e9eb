"""How many bytes tensors hold, per device: current, peak, and totals allocated and freed.

NumPy has no pluggable allocator reachable from Python, so Ember counts at the tensor level:
while tracking is on, every tensor made (by any op, forward or backward, by a creation function
or an optimizer) is seen through a hook in the one place tensors are made
(:func:`ember.tensor.add_wrap_hook`). Its memory is attributed to the array that owns the
buffer (views, ``detach()`` and ``.data`` share it, so a buffer counts once), and a weak
reference on that owner subtracts the bytes when its last reference dies (a tensor, a saved
value in the autograd graph, or a plain array kept by someone). Turning tracking on also finds
the tensors that already exist (model parameters, optimizer state) by one scan of the garbage
collector's objects. Off, the eager path pays one global check per tensor made.

Not counted: temporaries a kernel makes and frees inside one op, and arrays never wrapped in a
tensor. ``ember.memory`` is a measure of what the program keeps, as PyTorch's
``memory_allocated`` is; the process's resident size (which ``ember bench`` also reports)
includes the rest.

Example:
    >>> with ember.memory.tracking():
    ...     x = ember.zeros(1024, 256)              # 1 MiB of float32
    ...     ember.memory.allocated() >= 2 ** 20
    True
"""

from __future__ import annotations

import contextlib
import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from ember.tensor import Tensor, add_wrap_hook, remove_wrap_hook

__all__ = ["allocated", "disable", "enable", "is_enabled", "max_allocated", "memory_stats",
           "reset_peak", "tracking"]


class _Tracker:
    """Live buffers (owner id -> (weakref, bytes, device)) and the byte counts per device."""

    def __init__(self) -> None:
        self.depth = 0  # enable() nests: tracking stays on until the last disable()
        self.live: dict[int, tuple[weakref.ref, int, str]] = {}
        self.current: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.total_allocated = 0  # monotonic: the profiler reads differences of these
        self.total_freed = 0
        # counts change from every thread that makes or drops tensors (their read-modify-writes
        # raced); re-entrant, as a weak reference's callback may run inside ``see``
        self.lock = threading.RLock()

    def see(self, t: Tensor) -> None:
        owner = t._data
        base = owner.base
        while base is not None:
            if not hasattr(base, "nbytes") or not hasattr(base, "base"):
                break  # a foreign buffer (bytes, mmap): the outermost array stands for it
            owner, base = base, base.base
        key = id(owner)
        with self.lock:
            if key in self.live:
                return
            n = int(owner.nbytes)
            dev = str(t._device)
            try:
                ref = weakref.ref(owner, lambda _r, key=key: self.free(key))
            except TypeError:  # an array type without weak references: not trackable
                return
            self.live[key] = (ref, n, dev)
            now = self.current.get(dev, 0) + n
            self.current[dev] = now
            self.total_allocated += n
            if now > self.peak.get(dev, 0):
                self.peak[dev] = now

    def free(self, key: int) -> None:
        with self.lock:
            entry = self.live.pop(key, None)
            if entry is not None:
                _, n, dev = entry
                self.current[dev] -= n
                self.total_freed += n

    def clear(self) -> None:
        self.live.clear()  # the weak references die with it, so their callbacks never run
        self.current.clear()
        self.peak.clear()


TRACKER = _Tracker()


def enable(scan: bool = True) -> None:
    """Starts counting (nests with :func:`disable`). With ``scan``, tensors that already exist
    are found and counted, so parameters made before count too."""
    with TRACKER.lock:
        TRACKER.depth += 1
        if TRACKER.depth > 1:
            return
    # (the hook list's lock is taken outside ours: a weak reference's callback, free, may run
    # in a thread that holds it, and takes ours)
    add_wrap_hook(TRACKER.see)
    if scan:
        for obj in gc.get_objects():
            if issubclass(type(obj), Tensor):  # type(), not isinstance: no lazy __class__
                with contextlib.suppress(AttributeError):  # half-made in Tensor.__new__
                    TRACKER.see(obj)


def disable() -> None:
    """Stops counting (after as many calls as :func:`enable`) and forgets every count."""
    with TRACKER.lock:
        if TRACKER.depth == 0:
            return
        TRACKER.depth -= 1
        if TRACKER.depth:
            return
    remove_wrap_hook(TRACKER.see)  # (outside our lock, as in enable)
    with TRACKER.lock:
        TRACKER.clear()


def is_enabled() -> bool:
    """Whether tensor memory is being counted."""
    return TRACKER.depth > 0


@contextlib.contextmanager
def tracking(scan: bool = True) -> Iterator[None]:
    """Counts tensor memory inside the ``with`` block.

    Example:
        >>> with ember.memory.tracking(scan=False):  # (only tensors made inside count)
        ...     y = ember.ones(512, 512) * 2          # two 1 MiB float32 tensors
        ...     print(f"{ember.memory.max_allocated() / 2**20:.1f} MiB at peak")
        2.0 MiB at peak
    """
    enable(scan)
    try:
        yield
    finally:
        disable()


def _device_key(device: Any) -> str | None:
    return None if device is None else str(device)


def allocated(device: Any = None) -> int:
    """Bytes held by live tensors now, on ``device`` (default: all devices); 0 when off."""
    key = _device_key(device)
    if key is None:
        return sum(TRACKER.current.values())
    return TRACKER.current.get(key, 0)


def max_allocated(device: Any = None) -> int:
    """The peak of :func:`allocated` since tracking began or :func:`reset_peak` (per device;
    with no device, the largest per-device peak summed over devices)."""
    key = _device_key(device)
    if key is None:
        return sum(TRACKER.peak.values())
    return TRACKER.peak.get(key, 0)


def reset_peak(device: Any = None) -> None:
    """Sets the peak to the current value (on ``device``, default all)."""
    key = _device_key(device)
    for dev in list(TRACKER.peak):
        if key is None or dev == key:
            TRACKER.peak[dev] = TRACKER.current.get(dev, 0)


def memory_stats() -> dict[str, Any]:
    """Counts as a dict: per-device current and peak bytes, live buffers, totals."""
    return {"enabled": is_enabled(), "current": dict(TRACKER.current),
            "peak": dict(TRACKER.peak), "live_buffers": len(TRACKER.live),
            "total_allocated": TRACKER.total_allocated, "total_freed": TRACKER.total_freed}
