"""``ember.profiler.profile``: records every primitive executed, forward and backward.

It is a dispatch handler (see :func:`ember.ops.primitive.push_handler`): while a profile is
active every ``apply`` passes through :func:`_record_op`, which times the op, keeps its input
specs (with ``record_shapes``), its FLOPs (with ``with_flops``) and, with ``profile_memory``,
the net bytes of tensor memory it allocated (:mod:`ember.memory`). Backward rules are timed
through the engine's ``VJP_HOOK``; the ops they apply are recorded inside them. With no
profile active the eager path is untouched (its one ``DISPATCH.handler`` check).
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ember import memory
from ember.autograd.engine import VJP_HOOK
from ember.errors import ArgumentError, ArgumentTypeError
from ember.jit.tracer import Tracer
from ember.ops.primitive import DISPATCH, apply_below, pop_handler, push_handler, spec
from ember.profiler import memory_timeline, optimizer_regions
from ember.profiler.activity import ProfilerActivity, check_activities, warn_untraced
from ember.profiler.events import Event, EventList, chrome_trace, write_json
from ember.profiler.flops import flops_of
from ember.profiler.inplace_memory import InplaceTemps
from ember.profiler.schedule import ProfilerAction, record_every_step
from ember.tensor import add_wrap_hook, remove_wrap_hook

_now = time.perf_counter_ns
_thread = threading.get_ident


class _State:
    """The profiles recording now, in the order they started (a scheduled profile's span may
    start and end while another profile is open, so they do not always nest), and the
    backward hook they installed when the first of them started (which runs the one in place
    before it)."""

    __slots__ = ("active", "vjp_hook")

    def __init__(self) -> None:
        self.active: list[profile] = []
        self.vjp_hook: functools.partial | None = None


STATE = _State()


class profile:
    """Context manager that records the ops run inside it.

    Args:
        activities: what to trace; only ``ProfilerActivity.CPU`` (the default) exists here.
        schedule: step → :class:`ProfilerAction` (see :func:`~ember.profiler.schedule`); with
            one, only the steps it marks as recording are recorded, each step is a
            ``ProfilerStep#N`` region, and :meth:`step` advances it. Without one, everything
            inside the ``with`` is recorded.
        on_trace_ready: called with the profile when a recording span ends (the step after
            a ``RECORD_AND_SAVE`` step, and at exit if still recording), e.g.
            :func:`~ember.profiler.tensorboard_trace_handler`. Each span starts afresh.
        record_shapes: show input shapes in tables (``key_averages(group_by_input_shape=True)``).
        profile_memory: record the net tensor memory each op allocates (turns on
            :mod:`ember.memory` tracking for the duration).
        with_flops: show FLOPs (from each primitive's cost rule) in tables and traces; it
            records input shapes too, as PyTorch's (they are what the FLOPs come from).
        acc_events: keep the events of every span of a schedule (by default each warm-up
            or recording span starts afresh, as in PyTorch).
        with_stack, with_modules, experimental_config, custom_trace_id_callback,
            post_processing_timeout_s: accepted for PyTorch's signature (Ember records no
            stacks or module columns, and has no post-processing); ``use_cuda=True`` warns
            and profiles the CPU, as ``ProfilerActivity.CUDA`` does; an
            ``execution_trace_observer`` is refused.

    Every argument is a keyword, as in PyTorch (an older PyTorch's positional order differs).

    Example:
        >>> with ember.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        ...     with ember.profiler.record_function("step"):
        ...         model(x).sum().backward()
        >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
        >>> prof.export_chrome_trace("trace.json")    # open in ui.perfetto.dev

        Recording steps 2 and 3 of a loop, the trace handed over after step 3:

        >>> plan = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
        >>> with ember.profiler.profile(schedule=plan, on_trace_ready=print_table) as prof:
        ...     for _ in range(6):
        ...         train_step()
        ...         prof.step()
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        if use_cuda:
            warn_untraced("use_cuda=True", 1)
        check_activities(activities)
        if execution_trace_observer is not None:
            raise NotImplementedError(
                "profile: execution_trace_observer is not supported: Ember records no "
                "execution trace (graph of ops and their tensors). Hint: leave it out; "
                "export_chrome_trace(path) writes the timeline")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise ArgumentTypeError(f"profile: on_trace_ready must be callable (it gets the "
                                    f"profile), got {type(on_trace_ready).__name__}. Hint: "
                                    "on_trace_ready=tensorboard_trace_handler(dir)")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ArgumentError(f"profile: post_processing_timeout_s must be non-negative, "
                                f"got {post_processing_timeout_s}")
        self.activities = {ProfilerActivity.CPU}
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_flops = with_flops
        self.with_stack, self.with_modules = with_stack, with_modules
        self.acc_events = acc_events
        self.schedule = schedule or record_every_step
        self.on_trace_ready = on_trace_ready
        self.custom_trace_id_callback = custom_trace_id_callback
        self._trace_id: str | None = None
        self.step_num = 0
        self._record_steps = schedule is not None
        self._step_region: record_function | None = None
        self._events: list[Event] = []
        # with profile_memory, export_memory_timeline's points: (clock ns, device, bytes) when
        # a device's bytes changed, and (clock ns, None, bytes per device) where a span starts
        self._memory_samples: list[tuple[int, str | None, Any]] = []
        self._memory_last: dict[str, int] = {}  # (the bytes per device last noted)
        self._inplace = InplaceTemps()  # (with profile_memory: in-place ops' result buffers)
        self._metadata: dict[str, Any] = {}  # (add_metadata's, the trace's top level)
        self._preset: dict[str, Any] = {}  # (preset_metadata_json's, added to every trace)
        self._stacks: dict[int, list[int]] = {}  # thread -> indices of open regions
        self._start = 0
        self._end = 0
        self._thread = 0  # the thread whose ops it records (set when recording starts)
        self._running = False
        self._recording = False
        self._action = self._planned(0)

    # -- the schedule --------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._running:  # (stop() may have been called inside the block, as PyTorch allows)
            self.stop()

    def start(self) -> None:
        """Starts profiling (what entering the ``with`` does)."""
        if self._running:
            raise RuntimeError("profile.start(): the profile is already running")
        _untraceable("start")
        self._running = True
        self._transit(ProfilerAction.NONE, self._action)
        self._open_step()

    def stop(self) -> None:
        """Stops profiling, handing a trace still being recorded to ``on_trace_ready``."""
        self._check_running("stop")
        _untraceable("stop")
        self._close_step()
        self._running = False
        self._transit(self._action, None)

    def step(self) -> None:
        """Marks the end of a step: the schedule's action for the next one takes effect."""
        self._check_running("step")
        _untraceable("step")
        self._close_step()
        previous = self._action
        self.step_num += 1
        self._action = self._planned(self.step_num)
        self._transit(previous, self._action)
        self._open_step()

    def _planned(self, step: int) -> ProfilerAction:
        """The schedule's action for ``step``; anything else it returns (a bool, None) is
        refused, as it would record nothing without a word."""
        action = self.schedule(step)
        if not isinstance(action, ProfilerAction):
            raise ArgumentTypeError(
                f"profile: the schedule returned {action!r} ({type(action).__name__}) for step "
                f"{step}; it must return a ProfilerAction. Hint: build it with "
                "ember.profiler.schedule(wait=, warmup=, active=)")
        return action

    def _check_running(self, who: str) -> None:
        if not self._running:
            raise RuntimeError(f"profile.{who}(): the profile is not running. Hint: call it "
                               "inside the `with profile(...)` block (or between start() and "
                               "stop())")

    def _transit(self, before: ProfilerAction, after: ProfilerAction | None) -> None:
        """PyTorch's transitions, for a tracer with nothing to warm up: a span that ends
        stops recording (handing its trace over if it was saved or the profile stops), and
        a cycle that starts (its warm-up, or its recording if it has none) clears the
        previous one's events unless ``acc_events``."""
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        # (not recording after all: an on_trace_ready that raised left the span stopped)
        if before in recording and self._recording and (
                after not in recording or before is ProfilerAction.RECORD_AND_SAVE):
            self._stop_trace()
            if before is ProfilerAction.RECORD_AND_SAVE or after is None:
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)
        starts_cycle = after in (ProfilerAction.WARMUP, *recording) and \
            before not in (ProfilerAction.WARMUP, ProfilerAction.RECORD)
        if starts_cycle:  # (add_metadata's keys belong to one trace, even with acc_events)
            self._metadata = {}
            if not self.acc_events:
                self._events, self._stacks, self._memory_samples = [], {}, []
        if after in recording and not self._recording:
            self._start_trace()

    def _open_step(self) -> None:
        if self._record_steps and self._recording:
            self._step_region = record_function(f"ProfilerStep#{self.step_num}")
            self._step_region.__enter__()

    def _close_step(self) -> None:
        if self._step_region is not None:
            self._step_region.__exit__(None, None, None)
            self._step_region = None

    # -- recording -----------------------------------------------------------------------------
    def _start_trace(self) -> None:
        if self.profile_memory:
            memory.enable()
            add_wrap_hook(self._sample_memory)  # (after memory's own: it sees the new bytes)
        if not STATE.active:
            STATE.vjp_hook = VJP_HOOK.around = functools.partial(_record_vjp, VJP_HOOK.around)
            optimizer_regions.install(record_function)
        STATE.active.append(self)
        self._thread = _thread()  # (the dispatch state is per thread: it records this one's)
        self._handler = functools.partial(_record_op, self)
        if self.profile_memory:
            self._handler.on_inplace = self._inplace.on_inplace  # type: ignore[attr-defined]
        push_handler(self._handler, observer=True)
        self._recording = True
        self._metadata.update(self._preset)
        callback = self.custom_trace_id_callback
        self._trace_id = callback() if callback is not None else uuid.uuid4().hex.upper()
        if not self._events:  # (the trace's time 0: the first span whose events it holds)
            self._start = _now()
        if self.profile_memory:  # (what the span starts from: no [memory] event for it)
            self._memory_last = dict(memory.TRACKER.current)
            self._memory_samples.append((_now(), None, dict(self._memory_last)))

    def _stop_trace(self) -> None:
        self._end = _now()
        self._inplace.settle()
        for stack in self._stacks.values():  # regions still open end with the span
            while stack:
                self._close((self._events, stack[-1]), self._end)
        self._sample_memory()
        self._recording = False
        pop_handler(self._handler)
        STATE.active.remove(self)
        if not STATE.active:
            optimizer_regions.uninstall()
            if VJP_HOOK.around is STATE.vjp_hook:
                VJP_HOOK.around = STATE.vjp_hook.args[0]
        if self.profile_memory:
            remove_wrap_hook(self._sample_memory)
            memory.disable()

    def _sample_memory(self, _new: Any = None) -> None:
        """Notes the devices whose bytes changed since the last note (at the span's end, after
        each op and, as a wrap hook, each new tensor ``_new``): the repeats of a long profile
        cost no memory."""
        current, last = memory.TRACKER.current, self._memory_last
        if self.profile_memory and current != last:
            now = _now()
            for device, n in tuple(current.items()):
                if last.get(device) != n:
                    last[device] = n
                    self._memory_samples.append((now, device, n))

    def _open(self, name: str, kind: str) -> tuple[list[Event], int]:
        """Starts a region; returns the span's event list and the region's index there
        (closed by :meth:`_close`)."""
        self._inplace.settle()
        tid = _thread()
        stack = self._stacks.setdefault(tid, [])
        i = len(self._events)
        e = self._event(name, kind, tid, stack)
        e.mem = memory.TRACKER.total_allocated - memory.TRACKER.total_freed
        self._events.append(e)
        stack.append(i)
        e.start = _now()
        return self._events, i

    def _event(self, name: str, kind: str, tid: int, stack: list[int] | None) -> Event:
        """A new event, a child of the region open on ``stack`` (if any)."""
        e = Event(name, kind, 0, tid, stack[-1] if stack else -1)
        if e.parent >= 0:
            e.cpu_parent = self._events[e.parent]
            e.cpu_parent.cpu_children.append(e)
        return e

    def _close(self, region: tuple[list[Event], int], end: int = 0) -> None:
        """Ends a region, and only it: regions need not nest (two generators, each yielding
        inside its own region, interleave). A no-op for one the span's end has closed already
        (with ``acc_events`` the next span keeps the same event list, and closing it again
        would move its end). ``end``: the clock's reading (default: now)."""
        end = end or _now()
        self._inplace.settle()
        events, i = region
        stack = self._stacks.get(events[i].thread) if events is self._events else None
        if not stack or i not in stack:
            return
        stack.remove(i)
        e = events[i]
        e.end = end
        e.mem = memory.TRACKER.total_allocated - memory.TRACKER.total_freed - e.mem
        self._to_parent(e)

    def _to_parent(self, e: Event) -> None:
        """Counts ``e`` in its parent's children. A parent that ended before ``e`` does not
        contain it: ``e`` moves to the nearest region that does (none: top level), as in
        PyTorch's tree, which it builds from the intervals."""
        j = e.parent
        while j >= 0 and 0 < self._events[j].end < e.end:
            j = self._events[j].parent
        if j != e.parent:
            e.cpu_parent.cpu_children.remove(e)
            e.parent, e.cpu_parent = j, self._events[j] if j >= 0 else None
            if e.cpu_parent is not None:
                bisect.insort(e.cpu_parent.cpu_children, e, key=lambda c: c.start)
        if j >= 0:
            p = self._events[j]
            p.child_time += e.end - e.start
            p.child_mem += e.mem

    # -- results -------------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded event (ops, backward rules, user regions), in start order."""
        return EventList(sorted(self._events, key=lambda e: e.start))

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events summed by name (see :meth:`EventList.key_averages`), ready for ``table``."""
        rows = EventList(self._events).key_averages(group_by_input_shape, group_by_stack_n,
                                                    group_by_overload_name)
        if not self.profile_memory:
            for r in rows:
                r.cpu_memory_usage = r.self_cpu_memory_usage = 0
        return rows

    def table(self, sort_by: str | None = "cpu_time_total", row_limit: int = 20) -> str:
        """Shortcut for ``key_averages(group_by_input_shape=record_shapes).table(...)``."""
        return self.key_averages(self.record_shapes).table(sort_by=sort_by, row_limit=row_limit)

    def export_chrome_trace(self, path: str | os.PathLike,
                            use_python_export: bool = False) -> None:
        """Writes the events in the Chrome trace event format (JSON object with
        ``traceEvents``), which Perfetto (ui.perfetto.dev) and chrome://tracing open; gzipped
        when ``path`` ends with ``.gz``. (``use_python_export`` is PyTorch's: the trace is
        always written from Python here.)"""
        write_json(path, self.chrome_trace())

    def export_stacks(self, path: str | os.PathLike,
                      metric: str = "self_cpu_time_total") -> None:
        """PyTorch's flame-graph export of the Python stacks ``with_stack`` records: refused,
        as Ember records none (``with_stack`` is accepted and changes nothing)."""
        raise NotImplementedError(
            "export_stacks: Ember's profiler records no Python stacks (with_stack is accepted "
            "for PyTorch's signature and changes nothing). Hint: export_chrome_trace(path) "
            "shows each op in its record_function regions, and key_averages().table() where "
            "the time goes")

    def export_memory_timeline(self, path: str | os.PathLike, device: str | None = None
                               ) -> None:
        """Writes the bytes tensors on ``device`` (default "cpu") held over the recorded
        span, op by op, as PyTorch's: ``[times, sizes by category]`` JSON (gzipped for a
        ``.json.gz`` path; times in microseconds from the trace's start, as in
        :meth:`export_chrome_trace`), or an HTML plot for an ``.html`` path (matplotlib).
        Needs ``profile_memory=True``. Ember does not sort tensors into PyTorch's categories:
        every byte is in the last column, PyTorch's uncategorised one.

        Example:
            >>> with ember.profiler.profile(profile_memory=True) as prof:
            ...     y = ember.ones(256, 256) * 2
            >>> prof.export_memory_timeline("memory.json")  # doctest: +SKIP
        """
        memory_timeline.export(self, path, device)

    def get_trace_id(self) -> str | None:
        """The id of the trace recorded last (``custom_trace_id_callback()``'s, else a random
        hex string; None before any), written as the trace's ``trace_id``.

        Example:
            >>> with ember.profiler.profile(custom_trace_id_callback=lambda: "run-1") as prof:
            ...     _ = ember.ones(2) + 1
            >>> prof.get_trace_id()
            'run-1'
        """
        return self._trace_id

    def set_custom_trace_id_callback(self, callback: Callable[[], str]) -> None:
        """Sets the function that names each new trace (see :meth:`get_trace_id`)."""
        self.custom_trace_id_callback = callback

    def add_metadata(self, key: str, value: str) -> None:
        """Adds ``key: value`` (strings) to the top level of the trace being recorded. As in
        PyTorch, it belongs to that trace: a new cycle of the schedule starts without it, and
        it is ignored outside a warm-up or recording step (and once the profile stops).

        Example:
            >>> with ember.profiler.profile() as prof:
            ...     prof.add_metadata("run", "baseline")
            >>> prof.chrome_trace()["run"]
            'baseline'
        """
        _check_strings("add_metadata", key, value)
        self._add_metadata(key, value)

    def add_metadata_json(self, key: str, value: str) -> None:
        """Adds ``key`` to the top level of the trace being recorded, with the value that the
        JSON text ``value`` holds (as :meth:`add_metadata`).

        Example:
            >>> with ember.profiler.profile() as prof:
            ...     prof.add_metadata_json("sizes", "[1, 2]")
            >>> prof.chrome_trace()["sizes"]
            [1, 2]
        """
        _check_strings("add_metadata_json", key, value)
        self._add_metadata(key, _json_value("add_metadata_json", key, value))

    def preset_metadata_json(self, key: str, value: str) -> None:
        """Sets ``key`` (with the value the JSON text ``value`` holds) for the top level of
        every trace recorded from now on, as PyTorch's; unlike :meth:`add_metadata_json`,
        it may be called before the profile starts.

        Example:
            >>> prof = ember.profiler.profile()
            >>> prof.preset_metadata_json("run", '{"id": 7}')
            >>> with prof:
            ...     _ = ember.ones(2) + 1
            >>> prof.chrome_trace()["run"]
            {'id': 7}
        """
        _check_strings("preset_metadata_json", key, value)
        self._preset[key] = _json_value("preset_metadata_json", key, value)

    def _add_metadata(self, key: str, value: Any) -> None:
        if self._running and self._action is not ProfilerAction.NONE:
            self._metadata[key] = value

    def chrome_trace(self) -> dict:
        """The trace as a dict (what :meth:`export_chrome_trace` writes)."""
        ids = {"trace_id": self._trace_id} if self._trace_id is not None else {}
        trace = chrome_trace(self._events, self._start,
                             shapes=self.record_shapes or self.with_flops,
                             flops=self.with_flops, memory=self.profile_memory)
        trace["traceEvents"] += memory_timeline.instant_events(self._memory_samples,
                                                               self._start)
        return {**self._metadata, **ids, **trace}

    def __repr__(self) -> str:
        return f"<ember.profiler.profile: {len(self._events)} events, step {self.step_num}>"


def _untraceable(call: str) -> None:
    """Makes an ``ember.jit`` trace running now replay its call eagerly: a profile's start,
    step or stop is a Python effect that a graph would leave out of every later call (the
    profile, its schedule and on_trace_ready then ran at the first call only), where
    torch.compile breaks its graph."""
    for handler in DISPATCH.stack:
        if isinstance(handler, Tracer) and handler.eager_reason is None:
            handler.eager_reason = (
                f"runs eagerly: it calls profile.{call}() (ember.profiler), which a graph "
                "cannot repeat at each call. Hint: profile around the compiled call instead")


def _check_strings(who: str, key: Any, value: Any) -> None:
    if not isinstance(key, str) or not isinstance(value, str):
        raise ArgumentTypeError(f"{who}: key and value must be strings, got "
                                f"{type(key).__name__} and {type(value).__name__}. Hint: "
                                "add_metadata_json(key, json.dumps(value))")


def _json_value(who: str, key: str, value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ArgumentError(f"{who}: the value for {key!r} is not JSON text: {exc}") from None


def _record_op(prof: profile, prim: Any, inputs: tuple, params: dict) -> Any:
    tid = _thread()
    stack = prof._stacks.get(tid)
    e = prof._event(prim.name, "op", tid, stack)
    if prof.record_shapes or prof.with_flops:
        e.specs = specs = tuple(spec(t) for t in inputs)  # (with_flops's too, as PyTorch's)
        e.flops = flops_of(prim, specs, params) if prof.with_flops else 0
    tracker = memory.TRACKER
    if prof.profile_memory:
        prof._inplace.settle()
    mem = tracker.total_allocated - tracker.total_freed
    e.start = _now()
    try:
        out = apply_below(prof._handler, prim, inputs, params)
    finally:
        e.end = _now()
        e.mem = tracker.total_allocated - tracker.total_freed - mem
        prof._events.append(e)
        prof._to_parent(e)
        if prof.profile_memory:
            prof._sample_memory()
    if prof.profile_memory:
        prof._inplace.saw_op(e, out)
    return out


def _active() -> list[profile]:
    """The profiles recording this thread's ops, the latest started first: a region (or a
    backward rule) is recorded in each, as ops are, and not in a profile another thread
    opened, which sees none of this thread's ops (as in PyTorch)."""
    if not STATE.active:  # (no profile: the common case, kept cheap for record_function)
        return []
    tid = _thread()
    return [prof for prof in reversed(STATE.active) if prof._thread == tid]


def _record_vjp(outer: Any, node: Any, grads: tuple) -> Any:
    """Records the backward rule in each active profile, run by ``outer``, the hook that was
    in place when the first of them started (a FLOP counter's), if any."""
    opened = [(prof, prof._open(node.name(), "backward")) for prof in _active()]
    try:
        return node.prim.vjp(node, *grads) if outer is None else outer(node, grads)
    finally:
        for prof, region in opened:
            prof._close(region)


class record_function:
    """Marks a region of user code in the profile (nests; a no-op with no profile active).
    Use as a context manager or a decorator.

    ``args`` is accepted for PyTorch's signature (a string PyTorch attaches to the event).

    Example:
        >>> with ember.profiler.profile() as prof:
        ...     with ember.profiler.record_function("forward"):
        ...         y = model(x)
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        if not isinstance(name, str):  # (it failed later, in key_averages or the table)
            raise ArgumentTypeError(f"record_function: name must be a str, got "
                                    f"{type(name).__name__}")
        self.name = name
        self._opened: list[tuple[profile, tuple[list[Event], int]]] = []

    def __enter__(self) -> record_function:
        self._opened = [(prof, prof._open(self.name, "user")) for prof in _active()]
        return self

    def __exit__(self, *exc: object) -> None:
        for prof, region in self._opened:
            prof._close(region)
        self._opened = []

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper
