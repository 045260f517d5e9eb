"""A learning rate read in a compiled step that also steps its scheduler (``sch.step()``
inside): the step is an effect, run again at every call, so the lr it sets moves while the
graph runs. Read before that step, the lr is an input the cache key watches by value; read
after it, a graph would keep the trace's value: that call runs the plain function.

While tracing, the optimizers' ``param_groups`` and the schedulers' ``_last_lr`` lists are
stood in for by lists that note a read by the user's code (not Ember's, nor an effect's)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from ember.jit.sources import _is_ember_file
from ember.jit.user_objects import Numbers
from ember.optim.optimizer import OPTIMIZER_TRACE, Optimizer


class _Noted(list):
    """A list that tells ``reads`` when the user's code reads it (by index or iterating)."""

    __slots__ = ("reads", "opt", "what")

    def __getitem__(self, i: Any) -> Any:
        self.reads.note(self.opt, self.what)
        return list.__getitem__(self, i)

    def __iter__(self) -> Any:
        self.reads.note(self.opt, self.what)
        return list.__iter__(self)


class LrReads:
    """Which learning rates the traced code read, before and after a scheduler's step in the
    trace set them (see the module docstring).

    Example:
        >>> reads = LrReads(reach(step, ()))
        >>> reads.install(); ...; reads.restore()   # (around the trace)
    """

    def __init__(self, found: Any) -> None:
        self.optimizers = [opt for _, opt in found.optimizers]
        # the schedulers whose get_last_lr() the code names (watched by value: see discover)
        self.schedulers = [holder.obj for holder, *_ in found.bindings
                           if isinstance(holder, Numbers)]
        self.stepped: set[int] = set()  # id(optimizer) a scheduler stepped in the trace
        self.read: set[int] = set()  # id(optimizer) whose lr was read before such a step
        self.after: tuple[str, Any] | None = None  # (what, where) read after one
        self._swapped: list[tuple[Any, str, Any]] = []  # (object, attribute, original)

    def install(self) -> None:
        """Stands noting lists in for the reached optimizers' ``param_groups`` and the
        ``_last_lr`` of the schedulers whose ``get_last_lr()`` the code names."""
        for opt in self.optimizers:
            self._stand_in(opt, "param_groups", opt, f"{type(opt).__name__}.param_groups")
        for scheduler in self.schedulers:
            opt = getattr(scheduler, "optimizer", None)
            self._stand_in(scheduler, "_last_lr", opt, f"{type(scheduler).__name__}.get_last_lr()")

    def scheduler_stepped(self, scheduler: Any) -> None:
        """After ``scheduler.step()`` ran in the trace: its lr (``get_last_lr()``) and its
        optimizer's ``param_groups`` read from now on are read after it."""
        opt = getattr(scheduler, "optimizer", None)
        if not isinstance(opt, Optimizer):
            return
        self.stepped.add(id(opt))
        self._stand_in(opt, "param_groups", opt, f"{type(opt).__name__}.param_groups")
        self._stand_in(scheduler, "_last_lr", opt, f"{type(scheduler).__name__}.get_last_lr()")

    def note(self, opt: Any, what: str) -> None:
        frame = sys._getframe(2)
        if OPTIMIZER_TRACE.tracer is None or _is_ember_file(frame.f_code.co_filename):
            return  # (an effect running, or Ember's own code: a zero_grad)
        if id(opt) not in self.stepped:
            self.read.add(id(opt))
        elif self.after is None:
            self.after = (what, frame)

    def read_before_step(self) -> bool:
        """Whether the code read an lr that a scheduler's step in the trace then changed:
        that read is an input (a change traces again), never a side effect of tracing."""
        return bool(self.read & self.stepped)

    def restore(self) -> str | None:
        """Puts the plain lists back; why the call must run eagerly (an lr read after its
        scheduler's step), with a warning at the line that read it, or None."""
        for obj, name, original in reversed(self._swapped):
            now = vars(obj).get(name)
            if isinstance(now, _Noted):
                original[:] = list.__iter__(now)
                vars(obj)[name] = original
        self._swapped.clear()
        if self.after is None:
            return None
        what, frame = self.after
        reason = (f"runs eagerly: it reads {what} after a scheduler's step() inside the call "
                  "(the lr that step sets moves at every call; a graph would keep the trace's)")
        warnings.warn_explicit(f"ember.jit: {reason}. Hint: read the lr before the step, or "
                               "after the call", UserWarning, frame.f_code.co_filename,
                               frame.f_lineno, module=frame.f_globals.get("__name__"))
        self.after = None
        return reason

    def _stand_in(self, obj: Any, name: str, opt: Any, what: str) -> None:
        value = vars(obj).get(name)
        if type(value) is not list:
            return  # (noted already, or no list)
        noted = _Noted(value)
        noted.reads, noted.opt, noted.what = self, opt, what
        vars(obj)[name] = noted
        if not any(o is obj and n == name for o, n, _ in self._swapped):
            self._swapped.append((obj, name, value))
