"""Grad modes: whether ops record the tape.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` work as context
managers and as decorators, as in PyTorch; each thread has its own mode.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class _GradState(threading.local):
    """The flags, one pair per thread (as PyTorch's): a thread starts recording, whatever
    mode the thread that started it is in."""

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


GRAD = _GradState()


def is_grad_enabled() -> bool:
    """Whether ops currently record the tape."""
    return GRAD.enabled


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active."""
    return GRAD.inference


class _Mode:
    """Base of the grad-mode switches: sets the state on enter, restores it on exit."""

    enabled: bool | None = True  # None: leave as it is
    inference: bool | None = None

    def __enter__(self) -> None:
        self._saved = (GRAD.enabled, GRAD.inference)
        if self.enabled is not None:
            GRAD.enabled = self.enabled
        if self.inference is not None:
            GRAD.inference = self.inference

    def __exit__(self, *exc: object) -> None:
        GRAD.enabled, GRAD.inference = self._saved

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self) -> tuple:
        return ()


class no_grad(_Mode):
    """Ops inside record nothing: no graph, no saved tensors.

    Example:
        >>> with ember.no_grad():
        ...     y = x * 2          # y.requires_grad is False
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
        self.enabled = bool(mode)
        self._previous = GRAD.enabled
        GRAD.enabled = self.enabled

    def __enter__(self) -> None:
        self._saved = (self._previous, GRAD.inference)
        GRAD.enabled = self.enabled

    def _args(self) -> tuple:
        return (self.enabled,)

    def __call__(self, fn: Callable) -> Callable:
        GRAD.enabled = self._previous  # used as a decorator: do not switch at definition time
        return super().__call__(fn)


class inference_mode(_Mode):
    """Like ``no_grad``, for code that never needs gradients (``mode=False`` turns it off)."""

    def __init__(self, mode: bool = True) -> None:
        self.enabled = False if mode else None
        self.inference = bool(mode)

    def _args(self) -> tuple:
        return (self.inference,)
