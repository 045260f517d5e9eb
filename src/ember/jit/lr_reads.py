"""A learning rate read in a compiled step that also steps its scheduler (``sch.step()``
inside): the step is an effect, run again at every call, so the lr it sets moves while the
graph runs. Read before that step, the lr is an input the cache key watches by value; read
after it and only returned (``return loss, o.param_groups[0]["lr"]``, checked by
:mod:`ember.jit.return_flow`), a :class:`LiveLr` stands for it, read again after each call's
graph; read after it any other way, a graph would keep the trace's value: that call runs the
plain function. ``GradScaler.get_scale()`` after the scaler's ``update()`` inside is read
the same way (:meth:`LrReads.scaler_updated`).

While tracing, the optimizers' ``param_groups`` and the schedulers' ``_last_lr`` lists are
stood in for by lists that note a read by the user's code (not Ember's, nor an effect's), and
those schedulers' ``get_last_lr`` by a function that does."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from ember.jit.return_flow import only_returned
from ember.jit.sources import _is_ember_file
from ember.jit.user_objects import Numbers
from ember.optim.optimizer import OPTIMIZER_TRACE, Optimizer


class LiveLr(float):
    """An lr read after a scheduler's step in the trace that the function only returns: the
    entry keeps it, and each call returns :meth:`now`, the lr after that call's graph."""

    __slots__ = ("now",)

    def __new__(cls, value: float, now: Any) -> LiveLr:
        live = super().__new__(cls, value)
        live.now = now  # () -> the number as the scheduler left it now
        return live


class _Key:
    """What ``param_groups[i]`` gives the user's code that takes ``["lr"]`` from it and only
    returns that: the group's number as a :class:`LiveLr`."""

    __slots__ = ("live",)

    def __getitem__(self, key: Any) -> Any:
        return self.live


class _Noted(list):
    """A list that tells ``reads`` when the user's code reads it (by index or iterating)."""

    __slots__ = ("reads", "opt", "what", "owner", "name")

    def __getitem__(self, i: Any) -> Any:
        return self.reads.note(self, i, list.__getitem__(self, i))

    def __iter__(self) -> Any:
        self.reads.note(self, None, None)
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
        # the schedulers whose get_last_lr() and the GradScalers whose get_scale() the code
        # names (watched by value: see discover)
        named = [(holder.obj, name) for holder, name, *_ in found.bindings
                 if isinstance(holder, Numbers)]
        self.schedulers = [obj for obj, name in named if name == "_last_lr"]
        self.stepped: set[int] = set()  # id(optimizer) a scheduler stepped in the trace, and
        # id(scaler) of a GradScaler updated in it
        self.read: set[int] = set()  # those whose lr (scale) was read before such a step
        self.after: tuple[str, Any] | None = None  # (what, where) read after one
        self._swapped: list[tuple[Any, str, Any]] = []  # (object, attribute, original)
        self._scalers: list[Any] = [obj for obj, name in named if name == "_scale"]

    def install(self) -> None:
        """Stands noting lists in for the reached optimizers' ``param_groups`` and the
        ``_last_lr`` of the schedulers whose ``get_last_lr()`` the code names."""
        for opt in self.optimizers:
            self._stand_in(opt, "param_groups", opt, f"{type(opt).__name__}.param_groups")
        for scheduler in self.schedulers:
            opt = getattr(scheduler, "optimizer", None)
            self._stand_in(scheduler, "_last_lr", opt, f"{type(scheduler).__name__}.get_last_lr()")
            self._watch_last_lr(scheduler)
        for scaler in self._scalers:
            self._watch_scale(scaler)

    def scheduler_stepped(self, scheduler: Any) -> None:
        """After ``scheduler.step()`` ran in the trace: its lr (``get_last_lr()``) and its
        optimizer's ``param_groups`` read from now on are read after it."""
        opt = getattr(scheduler, "optimizer", None)
        if not isinstance(opt, Optimizer):
            return
        self.stepped.add(id(opt))
        self._stand_in(opt, "param_groups", opt, f"{type(opt).__name__}.param_groups")
        self._stand_in(scheduler, "_last_lr", opt, f"{type(scheduler).__name__}.get_last_lr()")
        if not any(s is scheduler for s in self.schedulers):  # (one the reach did not name:
            self.schedulers.append(scheduler)  # a scheduler rebound since, say)
            self._watch_last_lr(scheduler)

    def scaler_updated(self, scaler: Any) -> None:
        """After ``GradScaler.update()`` ran in the trace: ``get_scale()`` called by the user's
        code that only returns it gives a number read again after each call's graph; called
        otherwise, the call runs eagerly (a graph would keep the trace's scale)."""
        self.stepped.add(id(scaler))
        if not any(s is scaler for s in self._scalers):
            self._scalers.append(scaler)
            self._watch_scale(scaler)

    def _watch_scale(self, scaler: Any) -> None:
        def get_scale() -> Any:
            value, frame = type(scaler).get_scale(scaler), sys._getframe(1)
            if OPTIMIZER_TRACE.tracer is None or _is_ember_file(frame.f_code.co_filename):
                return value
            if id(scaler) not in self.stepped:  # (before its update: an input)
                self.read.add(id(scaler))
                return value
            if type(value) is float and only_returned(frame, "CALL") is not None:
                return LiveLr(value, lambda: type(scaler).get_scale(scaler))
            self._after("GradScaler.get_scale()", frame)
            return value

        vars(scaler)["get_scale"] = get_scale

    def note(self, noted: _Noted, i: Any, item: Any) -> Any:
        """``item``, ``noted[i]`` (``i`` None: iterated), as the user's code gets it."""
        frame = sys._getframe(2)
        if OPTIMIZER_TRACE.tracer is None or _is_ember_file(frame.f_code.co_filename):
            return item  # (an effect running, or Ember's own code: a zero_grad)
        if id(noted.opt) not in self.stepped:
            self.read.add(id(noted.opt))
            return item
        owner, name = noted.owner, noted.name
        if type(i) is int and isinstance(item, dict):  # (``param_groups[i]["lr"]``)
            keys = only_returned(frame, "BINARY_SUBSCR", 1)
            if keys and type(item.get(keys[0])) is float:
                key = _Key()
                key.live = LiveLr(item[keys[0]], lambda: vars(owner)[name][i][keys[0]])
                return key
        elif type(i) is int and type(item) is float and \
                only_returned(frame, "BINARY_SUBSCR") is not None:
            return LiveLr(item, lambda: vars(owner)[name][i])  # (``get_last_lr()[i]``)
        self._after(noted.what, frame)
        return item

    def last_lr(self, scheduler: Any) -> Any:
        """``scheduler.get_last_lr()`` while tracing: after its step, called by the user's
        code that only returns it, numbers read again at each call."""
        lrs, frame = vars(scheduler)["_last_lr"], sys._getframe(2)
        opt = getattr(scheduler, "optimizer", None)
        if _is_ember_file(frame.f_code.co_filename):
            return lrs
        if id(opt) not in self.stepped:  # (before its step: an input, the list whole too)
            self.read.add(id(opt))
            return lrs
        if only_returned(frame, "CALL", 1) is not None:
            return lrs  # (``get_last_lr()[0]``: the list notes it)
        if only_returned(frame, "CALL") is not None and all(type(x) is float for x in lrs):
            return [LiveLr(x, lambda k=k: vars(scheduler)["_last_lr"][k])
                    for k, x in enumerate(list.__iter__(lrs))]
        self._after(f"{type(scheduler).__name__}.get_last_lr()", frame)
        return lrs

    def _watch_last_lr(self, scheduler: Any) -> None:
        vars(scheduler)["get_last_lr"] = lambda: self.last_lr(scheduler)

    def _after(self, what: str, frame: Any) -> None:
        if self.after is None:
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
        for scheduler in self.schedulers:
            vars(scheduler).pop("get_last_lr", None)
        for scaler in self._scalers:
            vars(scaler).pop("get_scale", None)
        self._scalers.clear()
        if self.after is None:
            return None
        what, frame = self.after
        reason = (f"runs eagerly: it reads {what} after a scheduler's step() (or a "
                  "GradScaler's update()) inside the call (the number it sets moves at every "
                  "call; a graph would keep the trace's)")
        warnings.warn_explicit(f"ember.jit: {reason}. Hint: read the lr before the step, or "
                               "after the call, or return it as read (return loss, "
                               "o.param_groups[0]['lr']): each call then returns its own",
                               UserWarning, frame.f_code.co_filename, frame.f_lineno,
                               module=frame.f_globals.get("__name__") or "<string>")
        self.after = None
        return reason

    def _stand_in(self, obj: Any, name: str, opt: Any, what: str) -> None:
        value = vars(obj).get(name)
        if type(value) is not list:
            return  # (noted already, or no list)
        noted = _Noted(value)
        noted.reads, noted.opt, noted.what, noted.owner, noted.name = self, opt, what, obj, name
        vars(obj)[name] = noted
        if not any(o is obj and n == name for o, n, _ in self._swapped):
            self._swapped.append((obj, name, value))
