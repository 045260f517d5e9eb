"""Starting jobs: ``ember launch`` runs a script on N MPI ranks, restarts it after a failure
(``--max-restarts``), and every rank runs with a hook that aborts the whole job when it raises.

Without the hook a rank that raises while the others wait in a collective leaves them waiting
forever (and MPI_Finalize at exit waits for them too). With it, the failing rank prints its
traceback, tagged with its rank, and calls ``MPI_Abort``, which ends every rank at once.
``init_process_group`` installs the hook too, so plain ``mpiexec`` runs get it.

Each rank runs ``python -m ember.distributed.launch script.py args…``: this module's main
installs the hook and runs the script as ``__main__``. ``EMBER_RESTART_COUNT`` tells the
script which attempt it is (0 first), so it can resume from its last checkpoint.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import threading
import traceback
from typing import Any

from ember.distributed.mpi_env import mpi_env, mpiexec_command
from ember.errors import ArgumentError

_INSTALLED = False


def install_abort_hook() -> None:
    """Makes an uncaught exception on this rank (main thread or any other) print its
    traceback and abort the whole MPI job. Safe to call more than once."""
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    previous = sys.excepthook

    def hook(kind: type, exc: BaseException, tb: Any) -> None:
        _abort(kind, exc, tb, previous)

    def thread_hook(args: Any) -> None:
        _abort(args.exc_type, args.exc_value, args.exc_traceback, previous)

    sys.excepthook = hook
    threading.excepthook = thread_hook


def _abort(kind: type, exc: BaseException, tb: Any, previous: Any) -> None:
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    text = "".join(traceback.format_exception(kind, exc, tb))
    lines = "".join(f"[rank {rank}] {line}\n" for line in text.rstrip().split("\n"))
    sys.stderr.write(
        f"{lines}[rank {rank}] ember.distributed: rank {rank} of {size} failed "
        f"with {kind.__name__}; aborting the job\n"
    )
    sys.stderr.flush()
    sys.stdout.flush()
    if size == 1:  # nothing to bring down: the usual report and exit
        previous(kind, exc, tb)
    world.Abort(1)


def launch(
    nprocs: int,
    argv: list[str],
    max_restarts: int = 0,
    hostfile: str | None = None,
    mpiexec_args: list[str] | None = None,
) -> int:
    """Runs ``python argv…`` on ``nprocs`` ranks; after a failure starts the job again, up to
    ``max_restarts`` times. Returns the exit status of the last attempt.

    Example:
        >>> launch(4, ["train.py", "--epochs", "3"], max_restarts=2)
        0
    """
    if nprocs < 1:
        raise ArgumentError(f"ember launch: -n must be at least 1, got {nprocs}")
    rc = 0
    for attempt in range(max_restarts + 1):
        env = mpi_env(nprocs, single_host=hostfile is None)
        env["EMBER_RESTART_COUNT"] = str(attempt)
        env["EMBER_MAX_RESTARTS"] = str(max_restarts)
        extra = list(mpiexec_args or [])
        if hostfile:  # Open MPI passes only its own variables to other hosts unless told
            extra += [
                a
                for var in ("EMBER_RESTART_COUNT", "EMBER_MAX_RESTARTS", "PYTHONPATH")
                if var in env
                for a in ("-x", var)
            ]
        cmd = mpiexec_command(nprocs, ["-m", "ember.distributed.launch", *argv], hostfile, extra)
        rc = subprocess.call(cmd, env=env)
        if rc == 0:
            return 0
        if attempt < max_restarts:
            print(
                f"ember launch: the job exited with status {rc}; restart {attempt + 1} of "
                f"{max_restarts}",
                file=sys.stderr,
                flush=True,
            )
    return rc


def _run_rank(argv: list[str]) -> None:
    """A rank's entry point: the abort hook, then the script as ``__main__``.

    ``sys.exit`` with an error status bypasses the hook, and MPI_Finalize at exit would wait
    for the other ranks forever; mpi4py is told to abort the job at exit instead."""
    if not argv:
        raise SystemExit("usage: python -m ember.distributed.launch script.py [args…]")
    install_abort_hook()
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        mpi = sys.modules.get("mpi4py.MPI")  # (a script that never started MPI cannot hang)
        if exc.code not in (None, 0) and mpi is not None and mpi.COMM_WORLD.Get_size() > 1:
            from mpi4py.run import set_abort_status

            rank, size = mpi.COMM_WORLD.Get_rank(), mpi.COMM_WORLD.Get_size()
            sys.stderr.write(f"[rank {rank}] ember.distributed: rank {rank} of {size} exited "
                             f"with status {exc.code!r}; aborting the job\n")
            set_abort_status(exc)
        raise


if __name__ == "__main__":
    _run_rank(sys.argv[1:])
