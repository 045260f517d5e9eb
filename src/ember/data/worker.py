"""The worker-process side of a :class:`~ember.data.DataLoader`: the loop each worker runs,
:func:`get_worker_info`, and the wrapper that carries a worker's exception (with its original
traceback) back to the main process."""

from __future__ import annotations

import os
import pickle
import queue
import random
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember.data import shared
from ember.data.fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

POLL_S = 0.1  # how often a waiting process checks that its peer is alive


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker: its ``id``, ``num_workers``, ``seed`` and its copy of the
    ``dataset``; ``None`` in the main process.

    Example:
        >>> get_worker_info() is None
        True
    """
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, with its formatted traceback, to re-raise in the
    main process."""

    def __init__(self, where: str) -> None:
        exc_type, exc, _ = sys.exc_info()
        self.name = exc_type.__name__
        try:  # a class defined inside a function cannot cross to the main process
            pickle.dumps(exc_type)
            self.exc_type = exc_type
        except Exception:
            self.exc_type = RuntimeError
        self.where = where
        self.msg = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))

    def reraise(self) -> None:
        msg = f"Caught {self.name} {self.where}.\nOriginal {self.msg}"
        if self.exc_type is KeyError:  # KeyError shows repr(msg): keep the lines readable
            msg = _ReprAsStr(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # an exception class whose constructor wants other arguments
            exc = RuntimeError(msg)
        try:
            raise exc
        finally:  # exc -> its traceback -> this frame -> exc: a cycle that kept the iterator
            del exc


class _ReprAsStr(str):
    """A message whose ``repr`` is itself (``KeyError`` prints its argument's ``repr``)."""

    def __repr__(self) -> str:
        return str(self)


class IterableEnd:
    """Sent by a worker whose iterable dataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back when reached."""


def send(result_queue: Any, idx: Any, data: Any, worker_id: int) -> None:
    """Puts ``(idx, data)`` on the queue, pickled here: the queue's feeder thread would only
    print a pickling error and drop the item, leaving the main process waiting forever."""
    try:
        payload = pickle.dumps((idx, data), pickle.HIGHEST_PROTOCOL)
    except Exception:
        shared.release(data)
        error = ExceptionWrapper(f"in DataLoader worker process {worker_id} while sending a "
                                 f"batch to the main process (batches must be picklable: "
                                 f"tensors, arrays, numbers, strings, and dicts, lists or "
                                 f"tuples of them)")
        payload = pickle.dumps((idx, error), pickle.HIGHEST_PROTOCOL)
    result_queue.put(payload)


def receive(result_queue: Any, timeout: float) -> tuple[Any, Any]:
    """The next ``(idx, data)`` a worker sent with :func:`send` (``queue.Empty`` if none
    comes within ``timeout`` seconds)."""
    return pickle.loads(result_queue.get(timeout=timeout))


def _seed_worker(seed: int, worker_id: int) -> None:
    random.seed(seed)
    ember.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, seed]).generate_state(1)[0])


def _left_to_the_main_process(signum: int, frame: Any) -> None:
    """A worker's SIGINT handler: nothing (see :func:`worker_loop`)."""


def worker_loop(dataset: Any, is_iterable: bool, index_queue: Any, result_queue: Any,
                auto_collation: bool, collate_fn: Callable, drop_last: bool, base_seed: int,
                init_fn: Callable | None, worker_id: int, num_workers: int, shm_prefix: str,
                use_shm: bool) -> None:
    """Runs in a worker: read ``(idx, indices)`` tasks, send back ``(idx, packed batch)``."""
    global _worker_info
    # Ctrl-C reaches the whole process group: the main process gets the KeyboardInterrupt
    # (and ends the workers, or goes on using them); here it would only print one more
    # traceback per worker, or kill a worker the main process still needs. (A handler, not
    # SIG_IGN: a program the dataset runs gets the default back at exec, and stops on Ctrl-C)
    signal.signal(signal.SIGINT, _left_to_the_main_process)
    parent = os.getppid()
    seed = base_seed + worker_id
    _seed_worker(seed, worker_id)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    fetcher = None
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
    count = 0
    iterable_done = False
    while True:
        try:
            task = index_queue.get(timeout=POLL_S)
        except queue.Empty:
            if os.getppid() != parent:  # the main process is gone
                return
            continue
        if task is None:  # shutdown: exit now even if results are still buffered
            result_queue.cancel_join_thread()
            return
        if isinstance(task, ResumeIteration):
            if is_iterable and init_error is None:
                fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                         drop_last)
            iterable_done = False
            send(result_queue, task, None, worker_id)
            continue
        idx, index = task
        if iterable_done:
            send(result_queue, idx, IterableEnd(worker_id), worker_id)
            continue
        if init_error is not None:  # each task fails; a stream ends at its first error
            send(result_queue, idx, init_error, worker_id)
            iterable_done = is_iterable
            continue
        try:
            count += 1
            data = shared.pack(fetcher.fetch(index), f"{shm_prefix}{worker_id}-{count}", use_shm)
        except StopIteration:
            if is_iterable:
                iterable_done = True
                data = IterableEnd(worker_id)
            else:  # (a map-style item's: re-raised in the main process, it ends the epoch
                # there, as without workers; as the end of this worker's share, the batches
                # after it came on and the one that raised was silently dropped)
                data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        except Exception:
            data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        send(result_queue, idx, data, worker_id)
        del data
