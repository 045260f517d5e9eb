"""``TCPStore``: a key-value store served over TCP by one process (the master) to all of a
job's processes, as PyTorch's.

The master runs a server thread (one more thread per connection) around a
:class:`~ember.distributed.HashStore`; every process, the master included, is a client of it,
with one connection per thread that uses the store (so one thread may wait for a key that
another thread sets). Messages are length-prefixed JSON (data only, never pickle). ``get`` and
``wait`` block in the server until the keys exist or the timeout passes, then raise
:class:`~ember.distributed.DistStoreError`; a client that cannot connect within the timeout
raises :class:`~ember.distributed.DistNetworkError`.

Example:
    >>> store = dist.TCPStore("127.0.0.1", 29500, world_size=2, is_master=rank == 0)
    >>> store.set(f"rank{rank}", "ready")
    >>> store.get("rank1")                        # rank 0 waits for rank 1
    b'ready'
"""

from __future__ import annotations

import contextlib
import datetime
import json
import socket
import socketserver
import struct
import threading
import time
import weakref
from typing import Any

from ember.distributed.process_group import DistNetworkError, DistStoreError
from ember.distributed.store import _DEFAULT_TIMEOUT, HashStore, Store
from ember.errors import ArgumentError

_HEADER = struct.Struct("!I")


def _encode(value: Any) -> Any:
    """JSON-ready form of a request or answer: bytes become {"b": latin-1 text}."""
    if isinstance(value, bytes):
        return {"b": value.decode("latin-1")}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return value["b"].encode("latin-1")
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _send(sock: socket.socket, message: Any) -> None:
    data = json.dumps(_encode(message)).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _receive_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            return None  # the other side closed the connection
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(sock: socket.socket) -> Any:
    header = _receive_exactly(sock, _HEADER.size)
    body = None if header is None else _receive_exactly(sock, _HEADER.unpack(header)[0])
    return None if body is None else _decode(json.loads(body))


class _Server(socketserver.ThreadingTCPServer):
    """The master's server: a HashStore, the count of clients that joined and the open
    connections (closed with the server, so no client is served by a store nobody owns)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.store = HashStore()
        self.joined = 0
        self.changed = threading.Condition()
        self.connections: set[socket.socket] = set()
        self.closed = False

    def track(self, sock: socket.socket, is_open: bool) -> None:
        """Notes a connection opened or ended; one opened after :meth:`close` is cut."""
        with self.changed:
            if is_open and not self.closed:
                self.connections.add(sock)
                return
            self.connections.discard(sock)
        if is_open:
            _hang_up(sock)

    def close(self) -> None:
        """Stops accepting clients and ends every connection (their calls raise)."""
        self.shutdown()
        self.server_close()
        with self.changed:
            self.closed = True
            connections, self.connections = self.connections, set()
        for sock in connections:
            _hang_up(sock)

    def wait_for_clients(self, world_size: int, seconds: float | None) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: self.joined >= world_size, seconds):
                raise DistStoreError(f"TCPStore: timed out after {seconds:g} seconds waiting "
                                     f"for clients. {self.joined}/{world_size} clients joined.")


class _Handler(socketserver.BaseRequestHandler):
    """Answers one client's requests, in order, until it disconnects."""

    def setup(self) -> None:
        self.server.track(self.request, True)  # type: ignore[attr-defined]

    def finish(self) -> None:
        self.server.track(self.request, False)  # type: ignore[attr-defined]

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # the client went, or the server closed
            self._serve(self.server)  # type: ignore[arg-type]

    def _serve(self, server: _Server) -> None:
        while (message := _receive(self.request)) is not None:
            op, args = message
            try:
                if op == "join":
                    with server.changed:
                        server.joined += 1
                        server.changed.notify_all()
                    answer = ["ok", None]
                else:
                    answer = ["ok", server.store._request(op, *args)]
            except ValueError as exc:  # (add on a value that is no integer)
                answer = ["ValueError", str(exc)]
            except Exception as exc:  # noqa: BLE001 - the client raises it
                answer = ["DistStoreError", f"{type(exc).__name__}: {exc}"]
            _send(self.request, answer)


class TCPStore(Store):
    """A store that the master process serves over TCP (``torch.distributed.TCPStore``).

    Args:
        host_name: the master's address (the master listens on it).
        port: the master's port; 0 on the master picks a free one (read :attr:`port`).
        world_size: the number of processes that will open the store (None: unknown).
        is_master: whether this process runs the server (exactly one does).
        timeout: how long to wait to connect, for clients to join, and in ``get``/``wait``.
        wait_for_workers: the master waits in the constructor until ``world_size`` processes
            (itself included) have connected.
        multi_tenant: PyTorch's sharing of one server by several masters in a process; not
            provided (True is refused).

    Example:
        >>> master = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True)
        >>> client = dist.TCPStore("127.0.0.1", master.port)
        >>> client.set("k", "v"); master.get("k")
        b'v'
    """

    def __init__(
        self,
        host_name: str,
        port: int,
        world_size: int | None = None,
        is_master: bool = False,
        timeout: datetime.timedelta = _DEFAULT_TIMEOUT,
        wait_for_workers: bool = True,
        multi_tenant: bool = False,
    ) -> None:
        super().__init__(timeout)
        if multi_tenant:
            raise ArgumentError("TCPStore: multi_tenant=True (several masters sharing one "
                                "server in a process) is not provided; make one master store "
                                "and share it, or use a PrefixStore per user")
        if world_size is not None and world_size < 1:
            raise ArgumentError(f"TCPStore: world_size must be positive or None, got {world_size}")
        self.host = host_name
        self._server: _Server | None = None
        if is_master:
            try:
                self._server = _Server((host_name, port))
            except OSError as exc:
                raise DistNetworkError(f"TCPStore: the master cannot listen on "
                                       f"({host_name}, {port}): {exc}") from exc
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True,
                             name=f"TCPStore server :{port}").start()
        self.port = port
        self._local = threading.local()  # this thread's connection
        self._sockets: list[socket.socket] = []
        self._socket()
        weakref.finalize(self, _close, self._sockets, self._server)
        if world_size is not None:
            self._request("join")
            if self._server is not None and wait_for_workers:
                self._server.wait_for_clients(world_size, self._seconds())

    def _seconds(self) -> float | None:
        return self.timeout.total_seconds() or None

    def _socket(self) -> socket.socket:
        """This thread's connection to the server (made on its first request)."""
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = self._local.sock = self._connect()
            self._sockets.append(sock)
        return sock

    def _connect(self) -> socket.socket:
        seconds = self._seconds()
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=seconds)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DistNetworkError(
                        f"TCPStore: the client socket has timed out after {seconds:g} s while "
                        f"trying to connect to ({self.host}, {self.port}): {exc}. Hint: start "
                        "the master (is_master=True) at that address") from exc
                time.sleep(0.05)

    def _request(self, op: str, *args: Any) -> Any:
        # the server answers a wait when it ends; other requests at once
        limit = args[1] if op == "missing_after" else self._seconds()
        sock = self._socket()
        sock.settimeout(None if limit is None else limit + 30)
        try:
            _send(sock, [op, list(args)])
            answer = _receive(sock)
        except OSError as exc:
            raise DistNetworkError(f"TCPStore: {op} to ({self.host}, {self.port}) failed: "
                                   f"{exc}") from exc
        if answer is None:
            raise DistNetworkError(f"TCPStore: the server at ({self.host}, {self.port}) closed "
                                   f"the connection during {op}")
        kind, value = answer
        if kind == "ok":
            return value
        raise (ValueError if kind == "ValueError" else DistStoreError)(value)

    @property
    def libuvBackend(self) -> bool:  # noqa: N802 - PyTorch's name
        """False: the server is Python's ``socketserver``, not libuv."""
        return False


def _close(sockets: list[socket.socket], server: _Server | None) -> None:
    for sock in sockets:
        sock.close()
    if server is not None:
        server.close()


def _hang_up(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # (the client may have gone already)
        sock.shutdown(socket.SHUT_RDWR)
