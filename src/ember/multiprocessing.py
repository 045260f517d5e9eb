"""``torch.multiprocessing``: Python's :mod:`multiprocessing` (every public name of it, so
``import torch.multiprocessing as mp`` ports by its import), plus :func:`spawn` /
:func:`start_processes`, which run ``fn(index, *args)`` in ``nprocs`` processes and raise in
the parent when one of them fails, and the sharing-strategy queries.

Tensors sent through a ``Queue`` or ``Pipe``, or as arguments of a process started with
``spawn`` or ``forkserver``, share their memory with the receiver as PyTorch's do (they move into
shared memory and travel as a file descriptor: :mod:`ember.tensor_sharing`), so Hogwild-style
training works with any start method; ``tensor.share_memory_()`` / ``module.share_memory()``
before a ``fork`` shares them with the forked process.

Example:
    >>> import ember.multiprocessing as mp
    >>> mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    True
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable

from ember.errors import ArgumentError

_STDLIB_NAMES = [name for name in multiprocessing.__all__ if not name.startswith("_")]
globals().update({name: getattr(multiprocessing, name) for name in _STDLIB_NAMES})

__all__ = [*_STDLIB_NAMES, "ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "get_all_sharing_strategies", "get_sharing_strategy",
           "set_sharing_strategy", "spawn", "start_processes"]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set[str]:
    """The strategies :func:`set_sharing_strategy` takes (PyTorch's Linux set)."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current sharing strategy (recorded: Ember always sends a tensor's memory as a file
    descriptor, PyTorch's ``file_descriptor`` strategy, and leaves no named files behind)."""
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Records the strategy; one that is not in :func:`get_all_sharing_strategies` raises."""
    if new_strategy not in _STRATEGIES:
        raise ArgumentError(f"set_sharing_strategy: unknown strategy {new_strategy!r}; the "
                            f"strategies are {sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    """A process started by :func:`spawn` failed; ``error_index`` is its index, ``pid`` its
    process id."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The process's function raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a nonzero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _run_one(fn: Callable, index: int, args: tuple, error_file: str) -> None:
    """The body of each started process: the traceback of a failure goes to ``error_file``."""
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent stopped it
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call; :meth:`join` waits for them."""

    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids, by index."""
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds (None: until one fails or all finish). Returns True
        when all have finished, False when some still run; when one failed, stops the others
        and raises :class:`ProcessRaisedException` or :class:`ProcessExitedException`."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        self.sentinels.clear()
        self._raise(failed)
        return True  # not reached

    def _raise(self, index: int) -> None:
        proc, path = self.processes[index], self.error_files[index]
        if os.path.exists(path) and os.path.getsize(path):
            with open(path) as f:
                text = f.read()
            raise ProcessRaisedException(f"\n\n-- Process {index} terminated with the following "
                                         f"error:\n{text}", index, proc.pid)
        code = proc.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {index} terminated with signal {name}",
                                         index, proc.pid, code, name)
        raise ProcessExitedException(f"process {index} terminated with exit code {code}",
                                     index, proc.pid, code)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Starts ``nprocs`` processes running ``fn(index, *args)`` with ``start_method``;
    with ``join`` waits for all and returns None, else returns the :class:`ProcessContext`.

    Example:
        >>> import ember.multiprocessing as mp
        >>> ctx = mp.start_processes(abs, nprocs=1, join=False,
        ...                          start_method="fork")
        >>> while not ctx.join():
        ...     pass
    """
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for index in range(nprocs):
        handle, path = tempfile.mkstemp(prefix="ember_mp_error_")
        os.close(handle)
        error_files.append(path)
        process = context.Process(target=_run_one, args=(fn, index, args, path), daemon=daemon)
        process.start()
        processes.append(process)
    procs = ProcessContext(processes, error_files)
    if not join:
        return procs
    try:
        while not procs.join():
            pass
    finally:
        for path in error_files:
            os.unlink(path)
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """``torch.multiprocessing.spawn``: :func:`start_processes` with ``"spawn"`` (``fn`` must
    then be importable: defined at the top of a module); another start method warns, as
    PyTorch's does (use :func:`start_processes` for it).

    Example:
        >>> import ember.multiprocessing as mp
        >>> mp.spawn(print, args=("rank",), nprocs=2)  # doctest: +SKIP
    """
    if start_method != "spawn":
        warnings.warn(f"spawn: only supports start_method=spawn (got: {start_method}); use "
                      "start_processes for other start methods", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method)


