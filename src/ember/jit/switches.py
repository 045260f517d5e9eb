"""The switches every compiled function reads: :func:`disable` (run eagerly), :func:`explain`
(why each trace happened), :func:`forget_all` (drop every graph, ``ember.compiler.reset``) and
the stance (``ember.compiler.set_stance``), which with the recompile limit decides what a call
that needs a new trace does (:func:`instead_of_trace`)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ember.jit.sources import TraceError

__all__ = ["disable", "explain", "forget_all"]


class _Switch:
    __slots__ = ("enabled", "reasons", "disabled_by", "stance")

    def __init__(self) -> None:
        self.enabled = True  # (what a compiled call reads: no disable() block is open)
        self.disabled_by = 0  # the disable() blocks open, in every thread
        self.reasons: list[str] = []
        self.stance = "default"  # (set_stance's: "force_eager" also clears enabled)

    def update(self) -> None:
        """``enabled`` from the open disable() blocks and the stance."""
        self.enabled = self.disabled_by == 0 and self.stance != "force_eager"


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
            JIT.update()


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


#: the stances of ``torch.compiler.set_stance`` that Ember has
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")
_KEEP_REASONS = 1000  # explain() keeps the most recent ones


def set_stance(stance: str) -> str:
    """Makes ``stance`` the one every compiled function follows; returns the one before."""
    with _LOCK:
        before, JIT.stance = JIT.stance, stance
        JIT.update()
    return before


def instead_of_trace(compiled: Any, key: tuple, reason: str, limit: int) -> bool:
    """Whether a call of ``compiled`` that needs a new trace (for ``reason``, of the cache
    ``key``) runs the plain function instead: under the stance ``"eager_on_recompile"``, the
    first such call of ``key`` under ``"(aot_)eager_then_compile"`` (the next one compiles),
    or past ``limit`` traces (as torch.compile past its recompile_limit: said once; the
    graphs kept still run).
    ``"fail_on_recompile"`` raises. The reason is kept for :func:`explain`. A function that
    ``ignores_switches`` (export's) traces under any stance."""
    stance = "default" if compiled.ignores_switches else JIT.stance
    if stance == "fail_on_recompile":
        raise TraceError(f"ember.jit: {compiled.name} would be compiled ({reason}) while the "
                         "stance is 'fail_on_recompile'. Hint: warm it up with these inputs "
                         "before ember.compiler.set_stance('fail_on_recompile'): two calls "
                         "for a training step (its first call creates the .grad and optimizer "
                         "state its second call reads, so that one traces again, where "
                         "torch does not recompile)")
    past = compiled.traces >= limit and compiled.warn_retraces and not compiled.fullgraph
    if past and not compiled.eager_since:
        compiled.eager_since = True
        warnings.warn(f"ember.jit: {compiled.name} has been compiled {limit} times (the last: "
                      f"{reason}): from now on a call no graph fits runs the plain function. "
                      "Hint: a number read that changes each call (an argument, a global, "
                      "get_last_lr()) is better a tensor argument; ember.jit.explain() lists "
                      "every reason", stacklevel=4)
    first = stance.endswith("eager_then_compile") and key not in compiled.ran_eagerly
    if first:
        compiled.ran_eagerly.add(key)
    eager = past or first or stance == "eager_on_recompile"
    JIT.reasons.append(f"{compiled.name}: {'ran eagerly: ' if eager else ''}{reason}")
    del JIT.reasons[:-_KEEP_REASONS]
    return eager
