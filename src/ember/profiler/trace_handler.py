"""``tensorboard_trace_handler``: an ``on_trace_ready`` callback that writes each finished
trace of a scheduled profile as a Chrome-trace JSON file, named as PyTorch names them
(``<worker>.<time in ns>.pt.trace.json[.gz]``), which TensorBoard's profiler plugin, Perfetto
and chrome://tracing open.

Example:
    >>> with ember.profiler.profile(
    ...         schedule=ember.profiler.schedule(wait=1, warmup=1, active=2),
    ...         on_trace_ready=ember.profiler.tensorboard_trace_handler("runs/prof")) as prof:
    ...     for batch in loader:
    ...         train_step(batch)
    ...         prof.step()
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any


def tensorboard_trace_handler(dir_name: str | os.PathLike, worker_name: str | None = None,
                              use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """A callback writing ``prof``'s trace to a new file in ``dir_name`` (made if missing).

    ``worker_name`` should differ per process in a distributed job (default
    ``"<hostname>_<pid>"``); ``use_gzip`` compresses the file (``.json.gz``).
    ``use_python_export`` is accepted for PyTorch's signature (the trace is always written
    from Python here).
    """

    def handler(prof: Any) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as exc:
            raise RuntimeError(f"tensorboard_trace_handler: can't create directory "
                               f"{os.fspath(dir_name)!r}: {exc}") from exc
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler
