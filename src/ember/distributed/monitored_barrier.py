"""``monitored_barrier``: a barrier that names the ranks that did not come.

A plain ``barrier`` with a missing rank waits forever. Here every rank reports to the group's
rank 0 with a point-to-point message, and rank 0 releases them all once everyone has reported;
whoever waits longer than ``timeout`` raises :class:`~ember.distributed.DistBackendError`
(rank 0 naming the missing ranks). In PyTorch only the Gloo backend has it; Ember builds it on
MPI's non-blocking send and receive, with tags from a reserved range (see ``_TAG_BASE``) so
user messages never match.

Example (under ``ember launch -n 2``):
    >>> dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import numpy as np

from ember.distributed.buffers import mpi
from ember.distributed.process_group import (
    DistBackendError,
    GroupMember,
    ProcessGroup,
    resolve,
)
from ember.errors import ArgumentError

_TAG_BASE, _TAG_SPAN = 31000, 1700  # within the 32767 every MPI allows; user tags stay below
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # PyTorch's default process-group timeout
_POLL_S = 0.001


def monitored_barrier(group: ProcessGroup | None = None,
                      timeout: datetime.timedelta | float | None = None,
                      wait_all_ranks: bool = False) -> None:
    """Waits until every rank of ``group`` (the world by default) arrives, at most
    ``timeout`` (a ``timedelta``, or seconds; 30 minutes by default).

    On timeout, rank 0 of the group raises :class:`DistBackendError` naming the first world
    rank that did not arrive (all of them with ``wait_all_ranks=True``), and the other ranks
    raise because rank 0 never released them. A rank outside ``group`` returns at once.
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    g = resolve(group, "monitored_barrier")
    seconds = _seconds(timeout)
    if g.size() == 1:
        return
    tag = _TAG_BASE + g.monitored_barriers % _TAG_SPAN
    g.monitored_barriers += 1
    MPI = mpi()
    if g.rank() == 0:
        arrivals = {r: g.comm.Irecv(_token(), source=r, tag=tag) for r in range(1, g.size())}
        missing = _wait(list(arrivals.values()), seconds)
        if missing:
            for i in missing:
                _cancel(arrivals[i + 1])
            late = [g.ranks[i + 1] for i in missing]
            named = late if wait_all_ranks else late[:1]
            raise DistBackendError(
                f"monitored_barrier: {'ranks' if len(named) > 1 else 'rank'} "
                f"{', '.join(map(str, named))} failed to pass monitored_barrier in "
                f"{seconds:g} s (group of world ranks {g.ranks}). Hint: those ranks are "
                "stuck or took another code path before this barrier"
            )
        MPI.Request.Waitall([g.comm.Isend(_token(), dest=r, tag=tag) for r in arrivals])
        return
    sent = g.comm.Isend(_token(), dest=0, tag=tag)
    release = g.comm.Irecv(_token(), source=0, tag=tag)
    if _wait([release], seconds):
        _cancel(release)
        raise DistBackendError(
            f"monitored_barrier: rank {g.ranks[g.rank()]} was not released by rank "
            f"{g.ranks[0]} within {seconds:g} s: another rank of the group {g.ranks} did not "
            f"arrive (rank {g.ranks[0]} names it)"
        )
    sent.Wait()


def _cancel(request: Any) -> None:
    """Withdraws a receive nobody answered (a late message then waits unmatched: its tag is
    this call's, which the next calls do not use)."""
    request.Cancel()
    request.Wait()


def _token() -> np.ndarray:
    """The one-byte message each side sends (the buffer a request keeps alive)."""
    return np.zeros(1, np.uint8)


def _seconds(timeout: Any) -> float:
    if timeout is None:
        timeout = _DEFAULT_TIMEOUT
    seconds = (timeout.total_seconds() if isinstance(timeout, datetime.timedelta)
               else float(timeout))
    if seconds <= 0:
        raise ArgumentError(f"monitored_barrier: timeout must be positive, got {timeout!r}")
    return seconds


def _wait(requests: list, seconds: float) -> list[int]:
    """Polls ``requests`` until all complete or ``seconds`` pass; the indices still open."""
    deadline = time.monotonic() + seconds
    done = [False] * len(requests)
    while True:
        for i, req in enumerate(requests):
            if not done[i]:
                done[i] = req.Test()
        if all(done) or time.monotonic() >= deadline:
            return [i for i, d in enumerate(done) if not d]
        time.sleep(_POLL_S)
