"""The switches every compiled function reads: :func:`disable` (run eagerly), :func:`explain`
(why each trace happened) and :func:`forget_all` (drop every graph, ``ember.compiler.reset``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["disable", "explain", "forget_all"]


class _Switch:
    __slots__ = ("enabled", "reasons", "disabled_by")

    def __init__(self) -> None:
        self.enabled = True  # (what a compiled call reads: no disable() block is open)
        self.disabled_by = 0  # the disable() blocks open, in every thread
        self.reasons: list[str] = []


JIT = _Switch()
_LOCK = threading.Lock()

#: dispatch handlers of context managers that a compiled call steps out of (autocast's):
#: handler -> (state(), run_in(state, fn), set_aside()). A call under one of them alone runs
#: a compiled function per state that enters the context itself (``ember.amp`` registers)
CONTEXTS: dict[Callable, tuple[Callable, Callable, Callable]] = {}


class Resets:
    """How many times ``ember.compiler.reset`` ran: a compiled function whose graphs predate
    the last one drops them on its next call (a call in flight finishes with its own)."""

    count = 0


@contextmanager
def disable() -> Iterator[None]:
    """Runs compiled functions eagerly inside the ``with`` block (for debugging), in every
    thread, as ``torch.compiler.set_stance("force_eager")`` does; they compile again once the
    last block open, in any thread, closes.

    Example:
        >>> double_sum = ember.jit.compile(lambda x: (x * 2).sum())
        >>> with ember.jit.disable():
        ...     total = double_sum(ember.ones(3))      # the plain Python function runs
        >>> total
        tensor(6.)
    """
    with _LOCK:  # (a count: blocks in two threads may close in either order)
        JIT.disabled_by += 1
        JIT.enabled = False
    try:
        yield
    finally:
        with _LOCK:
            JIT.disabled_by -= 1
            JIT.enabled = JIT.disabled_by == 0


def explain() -> list[str]:
    """Why compiled functions traced (again): one line per trace, oldest first.

    Example:
        >>> @ember.jit.compile
        ... def train_step(x):
        ...     return (x * 2).sum()
        >>> _ = train_step(ember.randn(64, 784)); _ = train_step(ember.randn(32, 784))
        >>> ember.jit.explain()[-1]
        'train_step: traced again: argument x: shape (64, 784) -> (32, 784)'
    """
    return list(JIT.reasons)


def forget_all() -> None:
    """Makes every compiled function drop its graphs on its next call
    (``ember.compiler.reset``)."""
    Resets.count += 1
