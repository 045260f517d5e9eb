"""``init_process_group``'s ``init_method``: PyTorch's rendezvous URLs on an MPI job.

MPI already knows every rank, so a URL only names where the ranks meet to check that they
are one job, as a ``store`` does: ``env://`` (the default) checks the ``RANK`` and
``WORLD_SIZE`` variables, when set, against MPI's; ``tcp://host:port`` meets in a
``TCPStore`` that rank 0 serves there; ``file:///path`` meets in a ``FileStore``. A
``?rank=..&world_size=..`` query is checked against MPI, as the ``rank`` argument is.
"""

from __future__ import annotations

import datetime
import os
import urllib.parse

from ember.distributed.store import FileStore, Store

__all__ = ["rendezvous_store"]


def _error(scheme: str, msg: str) -> ValueError:
    return ValueError(f"init_process_group: error initializing using {scheme}:// rendezvous: "
                      f"{msg}")


def _check(scheme: str, what: str, given: str | None, actual: int) -> None:
    """``given`` (a URL query value or an environment variable) must be MPI's ``actual``."""
    if given is None:
        return
    try:
        value = int(given)
    except ValueError:
        raise _error(scheme, f"{what}={given!r} is not an integer") from None
    if value != actual:
        raise _error(scheme, f"{what}={value}, but MPI's {what} of this process is {actual}. "
                     "Hint: the launcher sets both (ember launch -n N script.py, or "
                     "mpiexec -n N)")


def rendezvous_store(
    init_method: object, rank: int, world_size: int, timeout: datetime.timedelta | None
) -> Store | None:
    """The store the ranks of ``init_method`` meet in (None: nothing to meet in); a
    ValueError for a URL that misses its port or path or disagrees with MPI, a RuntimeError
    (as PyTorch's) for an unknown scheme or a non-string.

    Example:
        >>> rendezvous_store("env://", 0, 2, None) is None
        True
    """
    if not isinstance(init_method, str):
        raise RuntimeError(f"init_process_group: init_method must be a URL string such as "
                           f"'env://', 'tcp://host:port' or 'file:///path', got "
                           f"{type(init_method).__name__}: {init_method!r}")
    url = urllib.parse.urlparse(init_method)
    if url.scheme not in ("env", "tcp", "file"):
        raise RuntimeError(f"init_process_group: no rendezvous handler for {url.scheme}:// "
                           f"(init_method={init_method!r}). Hint: use 'env://', "
                           "'tcp://host:port' or 'file:///path'")
    query = dict(urllib.parse.parse_qsl(url.query))
    names = ("RANK", "WORLD_SIZE") if url.scheme == "env" else ("rank", "world_size")
    source = os.environ if url.scheme == "env" else query
    _check(url.scheme, "rank", source.get(names[0]), rank)
    _check(url.scheme, "world_size", source.get(names[1]), world_size)
    if url.scheme == "env":
        return None
    if url.scheme == "file":
        if not url.path:
            raise _error("file", "path missing")
        return FileStore(url.path, world_size)
    try:
        port = url.port
    except ValueError as exc:  # not a number, or out of 0..65535
        raise _error("tcp", str(exc)) from None
    if port is None or not url.hostname:
        raise _error("tcp", "port number missing" if url.hostname else "host name missing")
    from ember.distributed.tcp_store import TCPStore

    kwargs = {} if timeout is None else {"timeout": timeout}
    return TCPStore(url.hostname, port, world_size, is_master=rank == 0, **kwargs)
