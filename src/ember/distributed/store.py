"""Key-value stores (``torch.distributed``'s ``Store`` family): small shared state for
coordination outside collectives — flags, counters, addresses.

:class:`HashStore` lives in one process (its threads share it); :class:`FileStore` lives in a
file, so every process that opens the same path (on a shared file system, across machines)
sees one store; each call locks the file (``fcntl``) for its read-modify-write. Values are
bytes (a ``str`` is stored UTF-8 encoded); ``get`` and ``wait`` block until the keys exist, at
most ``timeout``, then raise :class:`~ember.distributed.DistStoreError`. MPI needs no store to
start a job, so none is made by ``init_process_group``.

Example:
    >>> store = dist.FileStore("/tmp/job.store")          # every process, the same path
    >>> store.add("arrived", 1)                           # 1, 2, … in arrival order
    1
    >>> store.set("address", "10.0.0.1:29500")
    >>> store.get("address")
    b'10.0.0.1:29500'
"""

from __future__ import annotations

import abc
import contextlib
import datetime
import fcntl
import json
import operator
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ember.distributed.process_group import DistStoreError
from ember.errors import ArgumentError

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)  # PyTorch's default store timeout
Value = str | bytes


def _as_bytes(value: Value, who: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise TypeError(f"Store.{who}: values are str or bytes, got {type(value).__name__}")


def _key(key: Any, who: str) -> str:
    """``key`` as text: a str, or bytes read as UTF-8 (as torch)."""
    if isinstance(key, bytes):
        return key.decode()
    if not isinstance(key, str):
        raise TypeError(f"Store.{who}: keys are str, got {type(key).__name__} {key!r}")
    return key


def _keys(keys: Any, who: str) -> list[str]:
    if isinstance(keys, str | bytes):
        raise TypeError(f"Store.{who}: expected a list of str keys, got {keys!r}")
    return [_key(k, who) for k in keys]


def _add(d: dict[str, bytes], key: str, amount: int) -> int:
    old = d.get(key, b"0")
    try:
        total = int(old) + int(amount)
    except ValueError:
        raise ArgumentError(f"Store.add: the value of {key!r} is {old!r}, not an integer") from None
    d[key] = str(total).encode()
    return total


def _compare_set(d: dict[str, bytes], key: str, expected: bytes, desired: bytes) -> bytes:
    if key not in d:
        if expected:
            return expected
    elif d[key] != expected:
        return d[key]
    d[key] = desired
    return desired


# One atomic step per request on the key -> bytes mapping, and whether it writes; every
# store's API is made of these (a TCPStore's server runs them for its clients).
_STEPS: dict[str, tuple[Callable[..., Any], bool]] = {
    "set": (lambda d, key, data: d.__setitem__(key, data), True),
    "get": (lambda d, key: d[key], False),
    "add": (_add, True),
    "append": (lambda d, key, data: d.__setitem__(key, d.get(key, b"") + data), True),
    "compare_set": (_compare_set, True),
    "multi_set": (lambda d, keys, values: d.update(zip(keys, values)), True),
    "multi_get": (lambda d, keys: [d[k] for k in keys], False),
    "check": (lambda d, keys: all(k in d for k in keys), False),
    "delete_key": (lambda d, key: d.pop(key, None) is not None, True),
    "num_keys": (len, False),
}


class Store(abc.ABC):
    """What every store does (``torch.distributed.Store``). A subclass gives
    :meth:`_request`: one step of ``_STEPS`` (or ``"missing_after"``: wait for keys) by name,
    its first argument a key or a list of keys."""

    def __init__(self, timeout: datetime.timedelta = _DEFAULT_TIMEOUT) -> None:
        self.set_timeout(timeout)

    @abc.abstractmethod
    def _request(self, op: str, *args: Any) -> Any:
        """Runs the step ``op`` atomically; ``missing_after(keys, seconds)`` waits until every
        key is set or ``seconds`` pass (None: no limit) and gives the keys still missing."""

    # -- the API -------------------------------------------------------------------------------
    @property
    def timeout(self) -> datetime.timedelta:
        """How long :meth:`get` and :meth:`wait` wait for a missing key (zero: no limit)."""
        return self._timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        """Sets the default :attr:`timeout`."""
        if not isinstance(timeout, datetime.timedelta):
            raise TypeError(f"Store.set_timeout: expected a datetime.timedelta, got {timeout!r}")
        self._timeout = timeout

    def set(self, key: str, value: Value) -> None:
        """Stores ``value`` under ``key`` (replacing what was there)."""
        self._request("set", _key(key, "set"), _as_bytes(value, "set"))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting for it to be set (at most :attr:`timeout`)."""
        key = _key(key, "get")
        self.wait([key])
        return self._request("get", key)

    def add(self, key: str, amount: int) -> int:
        """Adds ``amount`` to the integer under ``key`` (0 when missing) and returns the sum.

        Example:
            >>> store = dist.HashStore()
            >>> store.add("n", 5), store.add("n", -2), store.get("n")
            (5, 3, b'3')
        """
        try:
            amount = operator.index(amount)
        except TypeError:
            raise TypeError(f"Store.add: the amount is an integer, got {amount!r}") from None
        return self._request("add", _key(key, "add"), amount)

    def append(self, key: str, value: Value) -> None:
        """Appends ``value`` to the bytes under ``key`` (sets it when missing)."""
        self._request("append", _key(key, "append"), _as_bytes(value, "append"))

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        """Sets ``key`` to ``desired_value`` if it now holds ``expected_value`` (or is missing
        and ``expected_value`` is empty); returns the value ``key`` then has, or
        ``expected_value`` when ``key`` is missing and stays so.

        Example:
            >>> store = dist.HashStore()
            >>> store.compare_set("leader", "", "rank 1"), store.compare_set("leader", "", "rank 2")
            (b'rank 1', b'rank 1')
        """
        return self._request("compare_set", _key(key, "compare_set"),
                             _as_bytes(expected_value, "compare_set"),
                             _as_bytes(desired_value, "compare_set"))

    def multi_set(self, keys: list[str], values: list[Value]) -> None:
        """Sets each key to its value, all in one step."""
        if len(keys) != len(values):
            raise ArgumentError(f"Store.multi_set: {len(keys)} keys but {len(values)} values")
        self._request("multi_set", _keys(keys, "multi_set"),
                      [_as_bytes(v, "multi_set") for v in values])

    def multi_get(self, keys: list[str]) -> list[bytes]:
        """The values of ``keys``, waiting for all of them."""
        keys = _keys(keys, "multi_get")
        self.wait(keys)
        return self._request("multi_get", keys)

    def check(self, keys: list[str]) -> bool:
        """Whether every key in ``keys`` is set (no waiting)."""
        return self._request("check", _keys(keys, "check"))

    def delete_key(self, key: str) -> bool:
        """Removes ``key``; whether it was there."""
        return self._request("delete_key", _key(key, "delete_key"))

    def num_keys(self) -> int:
        """How many keys are set."""
        return self._request("num_keys")

    def wait(self, keys: list[str], timeout: datetime.timedelta | float | None = None) -> None:
        """Blocks until every key in ``keys`` is set, at most ``timeout`` (default
        :attr:`timeout`; zero means no limit, as in PyTorch); then raises
        :class:`DistStoreError` naming the missing ones."""
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            timeout = datetime.timedelta(seconds=timeout)  # (seconds, as torch takes them)
        elif timeout is not None and not isinstance(timeout, datetime.timedelta):
            raise TypeError(f"Store.wait: timeout must be a datetime.timedelta or seconds, got "
                            f"{timeout!r}")
        limit = (self._timeout if timeout is None else timeout).total_seconds()
        missing = self._request("missing_after", _keys(keys, "wait"), limit or None)
        if missing:
            raise DistStoreError(f"{type(self).__name__}: wait timeout after {limit:g} s; "
                                 f"keys not set: {missing}")


class _LocalStore(Store):
    """A store whose mapping this process reaches directly: a subclass gives
    :meth:`_transact` and :meth:`_missing_after`."""

    @abc.abstractmethod
    def _transact(self, step: Callable[[dict[str, bytes]], Any], writes: bool) -> Any:
        """Runs ``step`` on the mapping atomically (saving it when ``writes``)."""

    @abc.abstractmethod
    def _missing_after(self, keys: list[str], seconds: float | None) -> list[str]:
        """Waits until every key is set or ``seconds`` pass (None: no limit); the keys still
        missing."""

    def _request(self, op: str, *args: Any) -> Any:
        if op == "missing_after":
            return self._missing_after(*args)
        step, writes = _STEPS[op]
        return self._transact(lambda d: step(d, *args), writes)


class HashStore(_LocalStore):
    """A store in this process's memory, shared by its threads (a waiting thread wakes when
    another one writes).

    Example:
        >>> store = dist.HashStore()
        >>> store.set("ready", "1"); store.check(["ready"]), store.num_keys()
        (True, 1)
    """

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[str, bytes] = {}
        self._changed = threading.Condition()

    def _transact(self, step: Callable[[dict[str, bytes]], Any], writes: bool) -> Any:
        with self._changed:
            out = step(self._data)
            if writes:
                self._changed.notify_all()
            return out

    def _missing_after(self, keys: list[str], seconds: float | None) -> list[str]:
        with self._changed:
            self._changed.wait_for(lambda: all(k in self._data for k in keys), seconds)
            return [k for k in keys if k not in self._data]


class FileStore(_LocalStore):
    """A store in the file ``file_name``, shared by every process that opens the same path.

    ``world_size`` is PyTorch's argument and is only checked; the file stays after the
    processes end (delete it, or use a fresh path per job). Waiting polls the file every few
    milliseconds.
    """

    _POLL_S = 0.005

    def __init__(self, file_name: str | os.PathLike, world_size: int = -1) -> None:
        super().__init__()
        if world_size == 0 or world_size < -1:
            raise ArgumentError(f"FileStore: world_size must be positive or -1, got {world_size}")
        self.path = os.fspath(file_name)
        try:
            open(self.path, "ab").close()
        except OSError as exc:
            raise DistStoreError(f"FileStore: cannot open {self.path!r}: {exc}") from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Any]:
        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield f
            finally:
                f.flush()  # the write must reach the file before another process may read it
                fcntl.flock(f, fcntl.LOCK_UN)

    def _transact(self, step: Callable[[dict[str, bytes]], Any], writes: bool) -> Any:
        # JSON with bytes as latin-1 text: a store file is data only, never code (not pickle)
        with self._locked() as f:
            raw = f.read()
            data = {k: v.encode("latin-1") for k, v in json.loads(raw).items()} if raw else {}
            out = step(data)
            if writes:
                f.seek(0)
                f.truncate()
                f.write(json.dumps({k: v.decode("latin-1") for k, v in data.items()}).encode())
            return out

    def _missing_after(self, keys: list[str], seconds: float | None) -> list[str]:
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            missing = self._transact(lambda d: [k for k in keys if k not in d], writes=False)
            if not missing or (deadline is not None and time.monotonic() >= deadline):
                return missing
            time.sleep(self._POLL_S)
