"""The memory of in-place ops, counted as PyTorch counts it.

``x.add_(1)`` computes its result into a new buffer (the ``add`` op's event), copies it into
``x`` and drops it right after, between two events: the op showed ``x``'s size as allocated
(CPU Mem) and its region as much below zero (Self CPU Mem), where PyTorch's in-place op
allocates nothing. A result dropped before the profile's next event is counted as freed inside
its op; one kept (the autograd graph saves ``relu_``'s) stays allocated.
"""

from __future__ import annotations

from typing import Any

from ember import memory


class InplaceTemps:
    """Follows, with ``profile_memory``, the last op's output (``saw_op``), the in-place write
    of it (``on_inplace``, the dispatch handlers' hook) and whether the next event finds its
    bytes freed (``settle``)."""

    __slots__ = ("last", "pending")

    def __init__(self) -> None:
        self.last: tuple[Any, int] | None = None  # (the op's event, id of its output)
        self.pending: tuple[Any, int] | None = None  # (that event, bytes freed so far)

    def saw_op(self, event: Any, out: Any) -> None:
        self.last = (event, id(out))

    def on_inplace(self, x: Any, result: Any) -> None:
        last = self.last
        if last is not None and last[1] == id(result) and last[0].mem > 0:
            self.pending = (last[0], memory.TRACKER.total_freed)

    def settle(self) -> None:
        """At the next event (or the span's end): the bytes freed since the write, up to what
        the op allocated, leave the op (and its region's count of its children)."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        event, freed = pending
        n = min(event.mem, memory.TRACKER.total_freed - freed)
        if n > 0:
            event.mem -= n
            if event.cpu_parent is not None:
                event.cpu_parent.child_mem -= n
