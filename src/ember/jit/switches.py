"""The switches every compiled function reads: :func:`disable` (run eagerly), :func:`explain`
(why each trace happened) and :func:`forget_all` (drop every graph, ``ember.compiler.reset``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["disable", "explain", "forget_all"]


class _Switch:
    __slots__ = ("enabled", "reasons")

    def __init__(self) -> None:
        self.enabled = True
        self.reasons: list[str] = []


JIT = _Switch()


class Resets:
    """How many times ``ember.compiler.reset`` ran: a compiled function whose graphs predate
    the last one drops them on its next call (a call in flight finishes with its own)."""

    count = 0


@contextmanager
def disable() -> Iterator[None]:
    """Runs compiled functions eagerly inside the ``with`` block (for debugging).

    Example:
        >>> double_sum = ember.jit.compile(lambda x: (x * 2).sum())
        >>> with ember.jit.disable():
        ...     total = double_sum(ember.ones(3))      # the plain Python function runs
        >>> total
        tensor(6.)
    """
    saved = JIT.enabled
    JIT.enabled = False
    try:
        yield
    finally:
        JIT.enabled = saved


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
