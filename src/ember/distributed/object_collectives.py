"""Collectives on picklable Python objects (PyTorch's ``*_object`` functions).

Each object is pickled by mpi4py; use them for small things (configs, metrics, RNG states),
and the tensor collectives for data.

Example (under ``ember launch -n 2``):
    >>> out = [None, None]
    >>> dist.all_gather_object(out, {"rank": dist.get_rank()})
    >>> out
    [{'rank': 0}, {'rank': 1}]
"""

from __future__ import annotations

from typing import Any

from ember.distributed.buffers import check_count, mpi
from ember.distributed.process_group import ProcessGroup, member_only, resolve
from ember.errors import ArgumentError, ShapeError


@member_only()
def broadcast_object_list(
    object_list: list,
    src: int | None = None,
    group: ProcessGroup | None = None,
    device: Any = None,
    group_src: int | None = None,
) -> None:
    """Replaces ``object_list``'s items, on every rank, by those of rank ``src`` (world rank
    0 when neither ``src`` nor the group rank ``group_src`` is given; every rank's list has
    the same length, as in PyTorch). ``device`` is accepted as PyTorch's (where it stages
    the pickles) and changes nothing here: the objects travel as MPI pickles."""
    g = resolve(group, "broadcast_object_list")
    root = g.root(src, group_src, "broadcast_object_list", default=0)
    got = g.comm.bcast(list(object_list) if g.rank() == root else None, root=root)
    _fill("broadcast_object_list", object_list, got, g.ranks[root])


@member_only()
def all_gather_object(object_list: list, obj: Any, group: ProcessGroup | None = None) -> None:
    """Sets ``object_list[i]`` to rank i's ``obj`` on every rank."""
    g = resolve(group, "all_gather_object")
    check_count("all_gather_object", "object_list", object_list, g.size())
    object_list[:] = g.comm.allgather(obj)


@member_only()
def gather_object(
    obj: Any,
    object_gather_list: list | None = None,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    group_dst: int | None = None,
) -> None:
    """Rank ``dst`` (or group rank ``group_dst``; world rank 0 by default) receives every
    rank's ``obj`` in ``object_gather_list``."""
    g = resolve(group, "gather_object")
    root = g.root(dst, group_dst, "gather_object", default=0)
    if g.rank() == root:
        check_count("gather_object", "object_gather_list", object_gather_list, g.size())
    got = g.comm.gather(obj, root=root)
    if g.rank() == root:
        object_gather_list[:] = got


@member_only()
def scatter_object_list(
    scatter_object_output_list: list,
    scatter_object_input_list: list | None = None,
    src: int | None = None,
    group: ProcessGroup | None = None,
    group_src: int | None = None,
) -> None:
    """Rank i's ``scatter_object_output_list[0]`` becomes item i of rank ``src``'s (or group
    rank ``group_src``'s; world rank 0 by default) input."""
    g = resolve(group, "scatter_object_list")
    if not scatter_object_output_list:
        raise ArgumentError(
            "scatter_object_list: scatter_object_output_list must be a list of at least one "
            "item (item 0 receives the object)"
        )
    root = g.root(src, group_src, "scatter_object_list", default=0)
    if g.rank() == root:
        check_count(
            "scatter_object_list",
            "scatter_object_input_list",
            scatter_object_input_list,
            g.size(),
        )
    scatter_object_output_list[0] = g.comm.scatter(
        list(scatter_object_input_list) if g.rank() == root else None, root=root
    )


@member_only()
def send_object_list(
    object_list: list,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    device: Any = None,
    group_dst: int | None = None,
    use_batch: bool = False,
    *,
    tag: int = 0,
) -> None:
    """Sends the items of ``object_list`` to rank ``dst`` (or group rank ``group_dst``).
    ``device`` and ``use_batch`` are accepted as PyTorch's and change nothing here (one MPI
    message of pickles)."""
    g = resolve(group, "send_object_list")
    dest = g.peer(dst, group_dst, "send_object_list", "destination")
    g.comm.send(list(object_list), dest=dest, tag=tag)


@member_only(outside=-1)
def recv_object_list(
    object_list: list,
    src: int | None = None,
    group: ProcessGroup | None = None,
    device: Any = None,
    group_src: int | None = None,
    use_batch: bool = False,
    *,
    tag: int = 0,
) -> int:
    """Fills ``object_list`` with the items sent by rank ``src`` (or group rank
    ``group_src``; any rank when both are None); returns the sender's world rank.
    ``device`` and ``use_batch`` are accepted as PyTorch's and change nothing here."""
    g = resolve(group, "recv_object_list")
    status = mpi().Status()
    source = (mpi().ANY_SOURCE if src is None and group_src is None
              else g.peer(src, group_src, "recv_object_list", "source"))
    got = g.comm.recv(source=source, tag=tag, status=status)
    sender = g.ranks[status.Get_source()]
    _fill("recv_object_list", object_list, got, sender)
    return sender


def _fill(who: str, object_list: list, got: list, sender: int) -> None:
    """Puts the received items in ``object_list``, which must have as many entries: PyTorch's
    lists keep their length (a list of another length raises there too)."""
    if len(got) != len(object_list):
        raise ShapeError(
            f"{who}: rank {sender} sent {len(got)} objects, object_list here has "
            f"{len(object_list)} entries; give every rank a list of the same length"
        )
    object_list[:] = got
