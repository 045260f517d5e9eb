"""The :class:`DataLoader`: batches from a dataset, in the main process or in worker
processes that send batches back through shared memory (PyTorch's
``torch.utils.data.DataLoader``)."""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.context
import numbers
import os
import queue
import signal
import time
import uuid
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Generic

import ember
from ember.data import shared
from ember.data.collate import default_collate, default_convert
from ember.data.dataset import Dataset, IterableDataset
from ember.data.fetch import create_fetcher
from ember.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    T_co,
    check_generator,
)
from ember.data.worker import (
    POLL_S,
    ExceptionWrapper,
    IterableEnd,
    ResumeIteration,
    receive,
    worker_loop,
)
from ember.errors import ArgumentError, ArgumentTypeError, type_name

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """The "sampler" of an iterable dataset: ``None`` forever (the dataset decides the end)."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


_FIXED = frozenset(("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                    "persistent_workers"))


class DataLoader(Generic[T_co]):
    """Iterates over ``dataset`` in batches.

    Arguments, defaults and behaviour are PyTorch's: ``batch_size=1``, ``shuffle`` (a new
    order each epoch, drawn from ``generator`` or the default generator), ``sampler`` or
    ``batch_sampler``, ``drop_last``, ``collate_fn`` (:func:`default_collate` when batching,
    :func:`default_convert` with ``batch_size=None``), ``num_workers`` worker processes with
    ``prefetch_factor`` batches in flight per worker, ``worker_init_fn(worker_id)``,
    ``persistent_workers`` (kept between epochs), ``timeout`` (seconds to wait for a batch from
    the workers, 0 for no limit; with no workers only 0, as PyTorch). ``pin_memory`` is
    accepted: each iteration warns, as PyTorch's without an accelerator, that nothing is pinned.

    Ember's workers are forked by default (the datasets need no pickling) and return batches
    through POSIX shared memory. A worker that raises re-raises in the main process with its
    original traceback (``next`` then goes on with the following batches, as without
    workers); one that dies is reported by id, pid and exit code within a fraction
    of a second. Batches come in sampler order; with ``in_order=False`` (and workers) each
    comes as soon as it is ready, so a slow one does not hold back the rest.

    Over an :class:`IterableDataset`, once ``len(loader)`` was asked, an epoch that yields more
    batches than it said warns once. (PyTorch compares the batches with ``len(dataset)``, the
    number of samples, so with batches of more than one sample it rarely warns; and it warns at
    every batch past it.)

    Example:
        >>> ds = ember.utils.data.TensorDataset(ember.arange(10.0), ember.arange(10))
        >>> xb, yb = next(iter(DataLoader(ds, batch_size=4)))
        >>> xb
        tensor([0., 1., 2., 3.])
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None,
                 generator: ember.Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        _check_types(num_workers, timeout, prefetch_factor, sampler, batch_sampler, collate_fn,
                     worker_init_fn, generator)
        if num_workers < 0:
            raise ArgumentError("num_workers option should be non-negative; use num_workers=0 to "
                                "disable multiprocessing.")
        if timeout < 0:
            raise ArgumentError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ArgumentError("prefetch_factor option could only be specified in "
                                "multiprocessing. let num_workers > 0 to enable multiprocessing, "
                                "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 1:
            raise ArgumentError(f"prefetch_factor should be a positive integer, got "
                                f"{prefetch_factor}")
        if persistent_workers and num_workers == 0:
            raise ArgumentError("persistent_workers option needs num_workers > 0")
        if num_workers == 0 and timeout > 0:
            raise ArgumentError(f"timeout option ({timeout}) needs num_workers > 0: without "
                                f"workers a batch is read in this process, with no time limit")
        context = _checked_context(multiprocessing_context, num_workers)
        self.is_iterable = isinstance(dataset, IterableDataset)
        if self.is_iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ArgumentError(f"DataLoader with IterableDataset: expected unspecified "
                                        f"{name} option, but got {name}={value!r}")
        elif sampler is not None and shuffle:
            raise ArgumentError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ArgumentError("batch_sampler option is mutually exclusive with batch_size, "
                                    "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ArgumentError("batch_size=None option disables auto-batching and is mutually "
                                "exclusive with drop_last")
        if sampler is None:
            if self.is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.collate_fn = collate_fn or (default_collate if self._auto_collation
                                         else default_convert)
        self._iterator: _MultiProcessIter | None = None
        self._reported_len: int | None = None  # len(self) of an iterable dataset, once asked
        _warn_if_more_workers_than_cpus(num_workers)

    def __setattr__(self, name: str, value: Any) -> None:
        # the samplers are built from these in __init__: a later change would be ignored
        if name in _FIXED and "_iterator" in self.__dict__:
            raise ArgumentError(f"{name} attribute should not be set after DataLoader is "
                                f"initialized; make a new DataLoader")
        super().__setattr__(name, value)

    @property
    def multiprocessing_context(self) -> Any:
        """The workers' multiprocessing context (None: the default); a start method's name
        set here becomes its context, checked as in the constructor (PyTorch's property)."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, value: Any) -> None:
        self._multiprocessing_context = _checked_context(value, self.num_workers)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if (self.persistent_workers and self._iterator is not None
                and self._iterator._finalizer.alive):
            self._iterator._reset(self._reported_len)
            return self._iterator
        _warn_if_more_workers_than_cpus(self.num_workers)  # (at each start, as PyTorch)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        self._iterator = _MultiProcessIter(self)
        return self._iterator

    def __len__(self) -> int:
        n = _num_batches(*self._len_args())
        if self.is_iterable:
            self._reported_len = n
        return n

    def _len_args(self) -> tuple[Any, int | None, bool]:
        if self.is_iterable:
            return self.dataset, self.batch_size, self.drop_last
        return self._index_sampler, None, False

    def _base_seed(self) -> int:
        return int(ember.randint(0, 2 ** 62, (), dtype=ember.int64,
                                 generator=self.generator).item())


def _check_types(num_workers: Any, timeout: Any, prefetch_factor: Any, sampler: Any,
                 batch_sampler: Any, collate_fn: Any, worker_init_fn: Any,
                 generator: Any) -> None:
    """ArgumentTypeError for an argument of the wrong kind (before it fails deep inside)."""
    for name, value, ok, expected in (
            ("num_workers", num_workers, isinstance(num_workers, numbers.Integral), "an int"),
            ("timeout", timeout, isinstance(timeout, numbers.Real), "a number of seconds"),
            ("prefetch_factor", prefetch_factor,
             prefetch_factor is None or isinstance(prefetch_factor, numbers.Integral),
             "an int or None"),
            ("sampler", sampler, sampler is None or _iterable(sampler), "an iterable of indices"),
            ("batch_sampler", batch_sampler, batch_sampler is None or _iterable(batch_sampler),
             "an iterable of lists of indices"),
            ("collate_fn", collate_fn, collate_fn is None or callable(collate_fn), "a callable"),
            ("worker_init_fn", worker_init_fn, worker_init_fn is None or callable(worker_init_fn),
             "a callable")):
        if not ok:
            raise ArgumentTypeError(f"DataLoader: {name} should be {expected}, but got "
                                    f"{name}={value!r:.80} of type {type_name(value)}")
    check_generator("DataLoader", generator)


def _warn_if_more_workers_than_cpus(num_workers: int) -> None:
    """Warns, as PyTorch does, when the workers outnumber the CPUs this process may run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if num_workers and (cpus is None or num_workers > cpus):
        have = (f"the {cpus} CPU{'s' * (cpus > 1)} this process may use" if cpus
                else "an unknown number of CPUs")
        warnings.warn(f"This DataLoader will create {num_workers} worker processes, more than "
                      f"{have}: the workers compete for them and loading can get slow or "
                      f"freeze. Hint: num_workers at most {cpus or 1}", stacklevel=3)


def _iterable(value: Any) -> bool:
    """Whether ``iter(value)`` works, without calling it (a sampler draws when iterated): an
    ``__iter__``, or only a ``__getitem__`` (Python's old sequence protocol, as PyTorch takes)."""
    return hasattr(value, "__iter__") or hasattr(value, "__getitem__")


def _checked_context(spec: Any, num_workers: int) -> Any:
    """None, or the context of a start method's name or a context object, as PyTorch checks
    them (a name becomes its context)."""
    if spec is None:
        return None
    if num_workers == 0:
        raise ArgumentError("multiprocessing_context can only be used with multi-process "
                            "loading (num_workers > 0), but got num_workers=0")
    if isinstance(spec, str):
        methods = multiprocessing.get_all_start_methods()
        if spec not in methods:
            raise ArgumentError(f"multiprocessing_context option should specify a valid start "
                                f"method in {methods}, but got multiprocessing_context={spec!r}")
        return multiprocessing.get_context(spec)
    if not isinstance(spec, multiprocessing.context.BaseContext):
        raise ArgumentTypeError(f"multiprocessing_context option should be a valid context "
                                f"object or a string naming a start method, but got "
                                f"multiprocessing_context={spec!r:.80}")
    return spec


def _num_batches(sized: Any, batch_size: int | None, drop_last: bool) -> int:
    """``len(sized)`` items in batches of ``batch_size`` (None: the items themselves)."""
    n = len(sized)
    if batch_size is None:
        return n
    return n // batch_size if drop_last else -(-n // batch_size)


class _BaseIter:
    def __init__(self, loader: DataLoader) -> None:
        # (not the loader: a persistent one holds its iterator, and the cycle would keep the
        # workers alive after the loader is dropped, until the garbage collector ran)
        self._index_sampler = loader._index_sampler
        self._len_args = loader._len_args()
        self._sampler_iter = iter(self._index_sampler)
        # drawn in every iterator, as PyTorch does, so the sampler's stream does not
        # depend on num_workers
        self._base_seed = loader._base_seed()
        self._dataset = loader.dataset
        self._reported_len = loader._reported_len
        self._yielded = 0
        self._workers_hint = loader.num_workers > 0
        if loader.pin_memory:  # (PyTorch's warnings without an accelerator, as Ember always is;
            # from this line, as torch's from its own: the default filter shows each once)
            if loader.pin_memory_device:
                warnings.warn("pin_memory_device is deprecated, the current accelerator will "
                              "be used as the device,ignore "
                              f"pin_memory_device={loader.pin_memory_device!r}.", stacklevel=1)
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=1)

    def __iter__(self) -> _BaseIter:
        return self

    def __len__(self) -> int:
        return _num_batches(*self._len_args)

    def __next__(self) -> Any:
        batch = self._next_batch()
        self._yielded += 1
        if self._reported_len is not None and self._yielded == self._reported_len + 1:
            hint = (" With workers, each worker holds a replica of the dataset: split the work "
                    "by ember.data.get_worker_info() in its __iter__."
                    if self._workers_hint else "")
            warnings.warn(f"Length of IterableDataset {self._dataset!r} was reported as "
                          f"{self._reported_len} batches (by len(dataloader)), but "
                          f"{self._yielded} batches have been fetched.{hint}", stacklevel=2)
        return batch


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = create_fetcher(loader.is_iterable, loader.dataset,
                                       loader._auto_collation, loader.collate_fn,
                                       loader.drop_last)

    def _next_batch(self) -> Any:
        return self._fetcher.fetch(next(self._sampler_iter))


def _context(spec: Any) -> Any:
    if spec is None:
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else None)
    return spec  # (a context object: names became theirs when set)


def _describe_exit(worker_id: int, proc: Any) -> str:
    code = proc.exitcode
    how = f"exit code {code}"
    if code is not None and code < 0:
        try:
            how = f"signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"signal {-code}"
        if -code == signal.SIGKILL:
            how += " (often the out-of-memory killer: try fewer workers or smaller batches)"
    return f"DataLoader worker {worker_id} (pid {proc.pid}) exited unexpectedly with {how}"


def _shutdown(owner: int, workers: list, index_queues: list, result_queue: Any,
              prefix: str) -> None:
    """Stops the workers (politely, then by force), frees batches still in flight; nothing in
    a process forked later (whose copy of the iterator may be collected there)."""
    if os.getpid() != owner:
        return
    for q in index_queues:
        try:
            q.put(None)
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + 2.0
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        try:  # keep reading so no worker blocks on a full pipe
            shared.release(receive(result_queue, 0.02)[1])
        except (queue.Empty, OSError, EOFError, ValueError):
            pass
    for w in workers:
        if w.is_alive():
            w.terminate()
            w.join(1.0)
        else:
            w.join(0)
    while True:
        try:
            shared.release(receive(result_queue, 0.01)[1])
        except (queue.Empty, OSError, EOFError, ValueError):
            break
    for q in (*index_queues, result_queue):
        q.cancel_join_thread()
        q.close()
    shared.remove_leftovers(prefix)


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        ctx = _context(loader.multiprocessing_context)
        n = loader.num_workers
        self._num_workers = n
        self._prefetch = loader.prefetch_factor * n
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        self._next_check = 0.0  # (out of order: when to look at the workers again)
        prefix = f"ember-dl-{os.getpid()}-{uuid.uuid4().hex[:12]}-"
        use_shm = shared.shared_memory_available()
        self._result_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        for i in range(n):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=worker_loop, daemon=True,
                            args=(loader.dataset, loader.is_iterable, iq, self._result_queue,
                                  loader._auto_collation, loader.collate_fn, loader.drop_last,
                                  self._base_seed, loader.worker_init_fn, i, n, prefix, use_shm))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._finalizer = weakref.finalize(self, _shutdown, os.getpid(), self._workers,
                                           self._index_queues, self._result_queue, prefix)
        self._start_epoch()

    def _start_epoch(self) -> None:
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._active = [True] * self._num_workers
        self._pending = [0] * self._num_workers  # tasks sent to each worker, not yet taken back
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._try_put_index()

    def _reset(self, reported_len: int | None) -> None:
        """A new epoch on the same (persistent) workers."""
        self._reported_len, self._yielded = reported_len, 0
        if not self._finalizer.alive:
            raise RuntimeError("DataLoader: the persistent workers were shut down by an error; "
                               "make a new DataLoader")
        self._sampler_iter = iter(self._index_sampler)
        for info in self._task_info.values():  # batches that came early and were never used
            if len(info) == 2:
                shared.release(info[1])
        for q in self._index_queues:
            q.put(ResumeIteration())
        waiting = self._num_workers
        try:
            while waiting:  # results of the last epoch's unfinished tasks come first: drop them
                idx, data = self._get_data()
                if isinstance(idx, ResumeIteration):
                    waiting -= 1
                else:
                    shared.release(data)
        except RuntimeError:  # (a timeout: the echoes still owed would later read as batches;
            self._shutdown()  # the next epoch starts new workers)
            raise
        self._start_epoch()

    def _try_put_index(self) -> None:
        # out of order, a worker takes a task only while it holds less than its share of
        # those in flight: round robin would pile them all on a slow worker. (The worker is
        # chosen first: an index drawn with none to take it would be lost.)
        share = None if self._in_order else self._prefetch // max(sum(self._active), 1)
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._active[wid] and (share is None or self._pending[wid] < share):
                break
        else:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._pending[wid] += 1
        self._send_idx += 1

    def _get_data(self) -> tuple[Any, Any]:
        start = time.monotonic()
        while True:
            try:
                got = receive(self._result_queue, POLL_S)
            except queue.Empty:
                got = None
            if got is not None:
                # out of order the live workers keep the queue full (in order they soon wait
                # for a dead one's batch): look at the workers after a batch too, once per POLL_S
                if not self._in_order and time.monotonic() >= self._next_check:
                    self._next_check = time.monotonic() + POLL_S
                    self._check_workers(got[1])
                return got
            self._check_workers()
            if self._timeout and time.monotonic() - start > self._timeout:
                # (the workers go on: a caller that catches this gets the batch later, as
                # with PyTorch; the epoch does not end there)
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds "
                                   f"waiting for a batch from its workers")

    def _check_workers(self, received: Any = None) -> None:
        """Stops everything and raises if a worker died (freeing a batch just received)."""
        for i, w in enumerate(self._workers):
            if not w.is_alive():
                shared.release(received)
                self._shutdown()
                raise RuntimeError(_describe_exit(i, w))

    def _next_batch(self) -> Any:
        if not self._finalizer.alive:
            raise StopIteration
        while True:
            # skip tasks of exhausted workers (and, out of order, those already taken)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                return self._process(self._rcvd_idx, info[1])
            idx, data = self._get_data()
            if isinstance(data, IterableEnd):
                self._active[data.worker_id] = False  # (its tasks count no more)
                self._task_info.pop(idx, None)  # (the skip above may have dropped it)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx or not self._in_order:
                return self._process(idx, data)
            self._task_info[idx] += (data,)  # early: keep it until its turn

    def _process(self, idx: int, data: Any) -> Any:
        self._pending[self._task_info.pop(idx)[0]] -= 1
        if idx == self._rcvd_idx:
            self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):  # the iterator goes on to the next batches
            data.reraise()
        return shared.unpack(data)

    def _shutdown(self) -> None:
        self._finalizer()
