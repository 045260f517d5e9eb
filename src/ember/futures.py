"""``torch.futures``: :class:`Future`, a value that arrives later, and callbacks chained on it.

A future is completed once, with a result or an exception. :meth:`Future.then` chains a
callback that runs when it completes and returns a new future of the callback's result.
Futures from collectives (``Work.get_future()`` in :mod:`ember.distributed`) complete when
waited on: ``wait()`` of the work, or ``wait()`` (``done()``, once the request is done) on any
future of a chain, finishes the communication and runs the callbacks in order, on that thread
(MPI moves a request along only inside MPI calls). A future made with ``Future()`` completes
when some code (another thread, say) calls :meth:`Future.set_result`.

Example:
    >>> fut = ember.futures.Future()
    >>> doubled = fut.then(lambda f: f.value() * 2)
    >>> fut.set_result(21)
    >>> doubled.wait()
    42
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

logger = logging.getLogger(__name__)

__all__ = ["Future", "collect_all", "wait_all"]


class Future(Generic[T]):
    """A result that arrives later (``torch.futures.Future``).

    ``Future[ember.Tensor]`` works as a type annotation, as in PyTorch.

    Example:
        >>> fut = ember.futures.Future()
        >>> fut.done()
        False
        >>> fut.set_result(ember.tensor([1., 2.]))
        >>> fut.wait()
        tensor([1., 2.])
    """

    def __init__(self, *, devices: Any = None) -> None:
        self._lock = threading.Condition()
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []
        # completes this future from what it depends on; its argument says whether to block
        self._driver: Callable[[bool], None] | None = None

    @classmethod
    def _driven_by(cls, driver: Callable[[bool], None]) -> Future:
        """A future that ``driver(block)`` completes (when it can, or at once with block)."""
        fut = cls()
        fut._driver = driver
        return fut

    def _drive(self, block: bool) -> None:
        if not self._done and self._driver is not None:
            self._driver(block)

    def done(self) -> bool:
        """Whether the future holds a result or an exception (never blocks)."""
        self._drive(False)
        return self._done

    def wait(self) -> T:
        """Blocks until the future completes; returns its result or raises its exception."""
        self._drive(True)
        with self._lock:
            self._lock.wait_for(lambda: self._done)
        return self.value()

    def value(self) -> T:
        """The result of a completed future (raises its exception if it has one)."""
        if not self._done:
            raise RuntimeError("Future.value: the future is not completed yet. Hint: call "
                               "wait() first, or read value() inside a then() callback")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback: Callable[[Future[T]], Any]) -> Future:
        """A new future of ``callback(self)``, run when this one completes (at once if it
        has); an exception raised by ``callback`` completes the new future with it.

        Example:
            >>> fut = ember.futures.Future()
            >>> chained = fut.then(lambda f: f.value() + 1).then(lambda f: f.value() * 10)
            >>> fut.set_result(1)
            >>> chained.wait()
            20
        """
        if not callable(callback):
            raise TypeError(f"Future.then: the callback must be callable, got "
                            f"{type(callback).__name__}")
        child = Future._driven_by(self._drive)

        def run(parent: Future) -> None:
            try:
                result = callback(parent)
            except Exception as exc:  # (as torch: the chained future holds the error)
                child.set_exception(RuntimeError(
                    f"Got the following error when running the callback: "
                    f"{type(exc).__name__}: {exc}"))
                child._error.__cause__ = exc
            else:
                child.set_result(result)

        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Runs ``callback(self)`` when the future completes (at once if it has). An exception
        it raises is logged and dropped, as in PyTorch (use :meth:`then` to keep it)."""
        if not callable(callback):
            raise TypeError(f"Future.add_done_callback: the callback must be callable, got "
                            f"{type(callback).__name__}")
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        _run_logged(callback, self)

    def set_result(self, result: T) -> None:
        """Completes the future with ``result`` and runs its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Completes the future with the exception ``result`` (``wait`` raises it)."""
        if not isinstance(result, BaseException):
            raise TypeError(f"Future.set_exception: expected an exception, got {result!r}")
        self._complete(None, result)

    def _complete(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done:
                raise RuntimeError("Future: attempting to mark a completed Future as complete "
                                   "again; a Future can only be marked completed once")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._lock.notify_all()
        for callback in callbacks:
            _run_logged(callback, self)

    def __repr__(self) -> str:
        return f"<ember.futures.Future ({'done' if self._done else 'pending'})>"


def _run_logged(callback: Callable[[Future], None], fut: Future) -> None:
    """Runs a done-callback; its exception is logged, not raised (the other callbacks run)."""
    try:
        callback(fut)
    except Exception:
        logger.exception("Got the following error when running the callback")


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future that completes with the list ``futures`` once all of them have completed, or
    with the first exception among them (in the order they completed), as in PyTorch.

    Example:
        >>> a, b = ember.futures.Future(), ember.futures.Future()
        >>> both = ember.futures.collect_all([a, b])
        >>> a.set_result(1); b.set_result(2)
        >>> [f.value() for f in both.wait()]
        [1, 2]
    """
    futures = list(futures)

    def drive(block: bool) -> None:
        for fut in futures:
            fut._drive(block)

    out = Future._driven_by(drive)
    remaining = [len(futures)]
    errors: list[BaseException] = []
    lock = threading.Lock()

    def arrived(fut: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
            if fut._error is not None:
                errors.append(fut._error)
        if last and errors:
            out.set_exception(errors[0])
        elif last:
            out.set_result(futures)

    if not futures:
        out.set_result(futures)
    for fut in futures:
        fut.add_done_callback(arrived)
    return out


def wait_all(futures: list[Future]) -> list:
    """Waits for every future and returns their results (raising the first exception, as
    :func:`collect_all`).

    Example:
        >>> a = ember.futures.Future(); a.set_result(3)
        >>> ember.futures.wait_all([a])
        [3]
    """
    return [fut.wait() for fut in collect_all(futures).wait()]
