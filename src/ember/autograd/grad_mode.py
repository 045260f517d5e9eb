"""Grad modes: whether ops record the tape.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` work as context
managers and as decorators, as in PyTorch; each thread has its own mode.

Tensors whose memory is made inside ``inference_mode`` are *inference tensors*
(``x.is_inference()``), as in PyTorch, and so are their views: the memory's version counter
says so (while any thread is in that mode, new memory takes its counter from a factory that
asks the thread's mode; outside, the factory is the plain class and costs nothing). As in
PyTorch, outside ``inference_mode`` they may not be written in place (nor made to require
grad): :func:`refuse_inference_write`. Unlike PyTorch's they keep counting versions, so they may
be saved for backward (``w * x``), where PyTorch refuses.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from ember.errors import bool_flag, type_name
from ember.version_counter import INFERENCE_ALIVE


class _GradState(threading.local):
    """The flags, per thread (as PyTorch's): a thread starts recording, whatever mode the
    thread that started it is in. ``requested`` is the grad mode the blocks asked for (what
    ``is_grad_enabled`` says); ``enabled``, whether ops record: the same but inside
    ``inference_mode``, where an ``enable_grad`` block records nothing, as in PyTorch."""

    def __init__(self) -> None:
        self.enabled = self.requested = True
        self.inference = False


GRAD = _GradState()


def request_grad(enabled: bool) -> None:
    """Sets the grad mode as entering ``set_grad_enabled(enabled)`` does (the caller saves
    and restores ``GRAD``'s three flags itself: the engine's per-pass switch, without a
    context manager object)."""
    GRAD.requested = enabled
    GRAD.enabled = enabled and not GRAD.inference


def is_grad_enabled() -> bool:
    """Whether the grad mode is on (ops record the tape, but inside ``inference_mode``)."""
    return GRAD.requested


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active."""
    return GRAD.inference


class _Mode:
    """Base of the grad-mode switches: sets the state on enter, restores it on exit."""

    enabled: bool = True
    inference: bool | None = None  # None: leave as it is

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # bare ``@no_grad`` (no parentheses), as PyTorch allows: the function comes as the
        # argument, and the decorated function is returned in place of a mode
        if len(args) == 1 and not kwargs and callable(args[0]):
            return cls()(args[0])
        return super().__new__(cls)

    def __enter__(self) -> None:
        self._saved = (GRAD.enabled, GRAD.requested, GRAD.inference)
        if self.inference is not None:
            GRAD.inference = self.inference
        request_grad(self.enabled)

    def __exit__(self, *exc: object) -> None:
        GRAD.enabled, GRAD.requested, GRAD.inference = self._saved

    def __call__(self, fn: Callable) -> Callable:
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn: Callable) -> Callable:
        """A decorated generator runs in the mode each time it resumes, not only while the
        call that creates it runs (which is before any of its code)."""
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            gen = fn(*args, **kwargs)
            send, value = gen.send, None
            while True:
                try:
                    with self._fresh():
                        item = send(value)
                except StopIteration as stop:
                    return stop.value
                try:
                    value, send = (yield item), gen.send
                except GeneratorExit:
                    with self._fresh():
                        gen.close()
                    raise
                except BaseException as exc:  # thrown in by the caller: passed on to gen
                    value, send = exc, gen.throw
        return wrapper

    def _fresh(self) -> _Mode:
        """A new instance with this one's settings (one ``with`` block each)."""
        return self.__class__(*self._args())

    def _args(self) -> tuple:
        return ()


class no_grad(_Mode):
    """Ops inside record nothing: no graph, no saved tensors.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    enabled = False


class enable_grad(_Mode):
    """Turns recording back on inside a ``no_grad`` block."""

    enabled = True


class set_grad_enabled(_Mode):
    """Turns recording on or off: ``with ember.set_grad_enabled(is_training): …``.

    Unlike the others it also acts at once when called as a function, as PyTorch's does.
    """

    def __init__(self, mode: bool) -> None:
        self.enabled = bool_flag("set_grad_enabled", "mode", mode)
        self._previous = (GRAD.enabled, GRAD.requested)
        request_grad(self.enabled)

    def __enter__(self) -> None:
        self._saved = (*self._previous, GRAD.inference)
        request_grad(self.enabled)

    def _args(self) -> tuple:
        return (self.enabled,)

    def __call__(self, fn: Callable) -> Callable:
        GRAD.enabled, GRAD.requested = self._previous  # (a decorator: no switch when defined)
        return super().__call__(fn)


class _InferenceMemory:
    """While any ``inference_mode(True)`` block is open in some thread, new memory takes a
    counter saying whether its thread is in inference mode; outside, the plain factory."""

    open_blocks = 0
    lock = threading.Lock()

    @classmethod
    def opened(cls) -> None:
        from ember.tensor import set_counter_factory
        from ember.version_counter import InferenceCounter, VersionCounter

        def counter() -> VersionCounter:  # (names bound here: runs for every new tensor)
            return InferenceCounter() if GRAD.inference else VersionCounter()

        with cls.lock:
            cls.open_blocks += 1
            if cls.open_blocks == 1:
                set_counter_factory(counter)

    @classmethod
    def closed(cls) -> None:
        from ember.tensor import set_counter_factory

        with cls.lock:
            cls.open_blocks -= 1
            if cls.open_blocks == 0:
                set_counter_factory(None)


def is_inference(input: Any) -> bool:
    """Whether ``input`` is an inference tensor: its memory was made inside
    ``inference_mode``. As in PyTorch, views of it (made anywhere) are inference tensors too,
    while a view made inside the mode of a normal tensor is not.

    Example:
        >>> with ember.inference_mode():
        ...     y = ember.ones(2) * 2
        >>> y.is_inference(), y[0].is_inference(), ember.ones(2).is_inference()
        (True, True, False)
    """
    from ember.tensor import Tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference: expected a Tensor, got {type_name(input)}")
    return input._vc.inference


def inference_tensors_may_exist() -> bool:
    """Whether an inference tensor exists (memory made in ``inference_mode`` is alive; else a
    look for one may be skipped: ops' records pay nothing for an eval loop run before).

    Example:
        >>> with ember.inference_mode():
        ...     y = ember.ones(2)
        >>> inference_tensors_may_exist()
        True
    """
    return bool(INFERENCE_ALIVE)


def refuse_inference_write(t: Any, name: str) -> None:
    """Raises, as PyTorch does, when ``t`` is an inference tensor (or a view of one) and no
    ``inference_mode`` block is active: its memory was made without version counting, so a
    graph that read it could not notice the write. Every in-place path checks before it
    writes (``out=``, an optimizer's step, ``.grad`` accumulation too); the hot ones test
    ``t._vc.inference and not GRAD.inference`` themselves and call this only to raise."""
    if t._vc.inference and not GRAD.inference:
        from ember.errors import GradError

        raise GradError(f"{name}: Inplace update to inference tensor outside InferenceMode is "
                        f"not allowed (a tensor of shape {tuple(t.shape)} made under "
                        "ember.inference_mode(), or a view of one). Hint: clone() it to get a "
                        "normal tensor before the in-place update, or update it inside "
                        "`with ember.inference_mode():`")


def refuse_inference_saved(op: str, i: int, t: Any) -> None:
    """Raises, as PyTorch does, for an inference tensor ``t`` (input ``i`` of ``op``) that a
    node recorded for backward would keep to read: its memory is not version counted, so a
    later write to it could not be noticed. Callers test ``t._vc.inference`` (and first
    :func:`inference_tensors_may_exist`)."""
    from ember.errors import GradError

    raise GradError(f"{op}: Inference tensors cannot be saved for backward (input {i}, shape "
                    f"{tuple(t.shape)}, was made under ember.inference_mode()). Hint: clone() "
                    "it outside the mode to get a normal tensor, or use ember.no_grad() "
                    "instead of ember.inference_mode()")


def refuse_inference_requires_grad(t: Any) -> None:
    """Raises, as PyTorch does, when an inference tensor is made to require grad outside
    ``inference_mode`` (``requires_grad_()``, ``nn.Parameter``)."""
    if t._vc.inference and not GRAD.inference:
        from ember.errors import GradError

        raise GradError(f"requires_grad_: Setting requires_grad=True on inference tensor "
                        f"outside InferenceMode is not allowed (a tensor of shape "
                        f"{tuple(t.shape)} made under ember.inference_mode()). Hint: clone() it "
                        "to get a normal tensor, which may require grad")


class inference_mode(_Mode):
    """Like ``no_grad``, for code that never needs gradients; the tensors it makes are
    inference tensors (:func:`is_inference`). ``mode=False`` turns it off and, as in PyTorch,
    turns recording on (also inside ``no_grad``)."""

    def __init__(self, mode: bool = True) -> None:
        self.enabled = not mode
        self.inference = bool(mode)

    def __enter__(self) -> None:
        super().__enter__()
        if self.inference:
            _InferenceMemory.opened()

    def __exit__(self, *exc: object) -> None:
        if self.inference:
            _InferenceMemory.closed()
        super().__exit__(*exc)

    def _args(self) -> tuple:
        return (self.inference,)


class _Multithreading(threading.local):
    def __init__(self) -> None:
        self.enabled = True


_MULTITHREADING = _Multithreading()


class set_multithreading_enabled:
    """Whether backward may run on per-device worker threads, as
    ``torch.autograd.set_multithreading_enabled``: a switch when called, restored at the end
    of a ``with`` block or of a decorated call; per thread. Ember's backward always runs in
    the calling thread, so the flag changes only what :func:`is_multithreading_enabled` says
    (code written for PyTorch runs unchanged).

    Example:
        >>> with ember.autograd.set_multithreading_enabled(False):
        ...     ember.autograd.is_multithreading_enabled()
        False
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous = _MULTITHREADING.enabled
        _MULTITHREADING.enabled = self.mode

    def __enter__(self) -> None:
        _MULTITHREADING.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _MULTITHREADING.enabled = self._previous

    def __call__(self, fn: Callable) -> Callable:
        _MULTITHREADING.enabled = self._previous  # (a decorator: no switch when defined)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_multithreading_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


def is_multithreading_enabled() -> bool:
    """Whether :class:`set_multithreading_enabled` is on in this thread (True by default)."""
    return _MULTITHREADING.enabled
