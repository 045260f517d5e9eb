"""Collectives on tensors, in place, with PyTorch's ``torch.distributed`` signatures.

Each writes its result into the tensors it is given (bumping their version) and returns None,
or a :class:`~ember.distributed.buffers.Work` handle with ``async_op=True``. Ranks (``src``,
``dst``) are world ranks, as in PyTorch, also inside a sub-group; ``group_src`` / ``group_dst``
give a rank inside the group instead. These calls are not recorded
by autograd; :mod:`ember.distributed.functional` has the differentiable versions.

Example (under ``ember launch -n 2``):
    >>> t = ember.tensor([float(dist.get_rank() + 1)])
    >>> dist.all_reduce(t)
    >>> t
    tensor([3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.distributed.buffers import (
    ReduceOp,
    Reducible,
    Work,
    as_bytes,
    call,
    check_count,
    check_like,
    host_array,
    in_place_sum,
    mpi,
    reducible,
    run,
    write,
)
from ember.distributed.debug import entered
from ember.distributed.process_group import ProcessGroup, member_only, resolve
from ember.errors import DTypeError, ShapeError
from ember.tensor import Tensor

Group = ProcessGroup | None


@member_only()
def all_reduce(
    tensor: Tensor, op: Any = ReduceOp.SUM, group: Group = None, async_op: bool = False
) -> Work | None:
    """Combines ``tensor`` over the ranks (sum, product, max, min, mean), result on all."""
    g = entered(group, "all_reduce", tensor)
    if not async_op and in_place_sum(tensor, op):
        call(g.comm, "Allreduce", mpi().IN_PLACE, tensor._data, mpi().SUM)
        tensor._vc.value += 1
        return None
    red = reducible(tensor, op, "all_reduce")
    return run(
        g.comm,
        "Allreduce",
        (mpi().IN_PLACE, red.buf, red.op),
        async_op,
        lambda: write(tensor, red.result(red.buf, g.size())),
        [tensor],
    )


@member_only()
def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: Any = ReduceOp.SUM,
    group: Group = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Like :func:`all_reduce`, but only rank ``dst`` receives the result."""
    g = entered(group, "reduce", tensor)
    root = g.root(dst, group_dst, "reduce")
    red = reducible(tensor, op, "reduce")
    mine = g.rank() == root
    send = mpi().IN_PLACE if mine else red.buf
    return run(
        g.comm,
        "Reduce",
        (send, red.buf if mine else None, red.op, root),
        async_op,
        (lambda: write(tensor, red.result(red.buf, g.size()))) if mine else None,
        [tensor],
    )


@member_only()
def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: Group = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copies ``tensor`` of rank ``src`` (or of group rank ``group_src``) into ``tensor`` on
    every rank."""
    g = entered(group, "broadcast", tensor)
    buf = as_bytes(tensor, "broadcast")
    root = g.root(src, group_src, "broadcast")
    return run(g.comm, "Bcast", (buf, root), async_op, lambda: write(tensor, buf), [tensor])


@member_only()
def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Group = None, async_op: bool = False
) -> Work | None:
    """Fills ``tensor_list[i]`` with rank i's ``tensor``, on every rank."""
    g = entered(group, "all_gather", tensor)
    check_count("all_gather", "tensor_list", tensor_list, g.size())
    for i, out in enumerate(tensor_list):
        check_like("all_gather", f"tensor_list[{i}]", out, tensor)
    send = as_bytes(tensor, "all_gather")
    recv = np.empty(send.size * g.size(), np.uint8)

    def finish() -> None:
        for out, part in zip(tensor_list, np.split(recv, g.size())):
            write(out, part)

    return run(g.comm, "Allgather", (send, recv), async_op, finish, list(tensor_list))


@member_only()
def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Group = None, async_op: bool = False
) -> Work | None:
    """``output_tensor`` (world size × the input's elements, e.g. concatenated along dim 0)
    receives every rank's ``input_tensor`` in rank order."""
    g = entered(group, "all_gather_into_tensor", input_tensor)
    _check_total("all_gather_into_tensor", output_tensor, input_tensor, g.size())
    send = as_bytes(input_tensor, "all_gather_into_tensor")
    recv = np.empty(send.size * g.size(), np.uint8)
    return run(g.comm, "Allgather", (send, recv), async_op, lambda: write(output_tensor, recv),
               [output_tensor])


@member_only()
def reduce_scatter(
    output: Tensor,
    input_list: list[Tensor],
    op: Any = ReduceOp.SUM,
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Rank i's ``output`` = the reduction over ranks of their ``input_list[i]``."""
    g = entered(group, "reduce_scatter", output)
    check_count("reduce_scatter", "input_list", input_list, g.size())
    for i, t in enumerate(input_list):
        check_like("reduce_scatter", f"input_list[{i}]", t, output)
    arrays = [host_array(t, "reduce_scatter") for t in input_list]
    return _reduce_scatter(g, output, arrays, op, async_op, "reduce_scatter")


@member_only()
def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: Any = ReduceOp.SUM,
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Rank i's ``output`` = the reduction of block i of every rank's ``input`` (``input`` has
    world size × the output's elements, e.g. stacked along dim 0)."""
    g = entered(group, "reduce_scatter_tensor", output)
    _check_total("reduce_scatter_tensor", input, output, g.size())
    arrays = [host_array(input, "reduce_scatter_tensor")]
    return _reduce_scatter(g, output, arrays, op, async_op, "reduce_scatter_tensor")


def _reduce_scatter(
    g: ProcessGroup, output: Tensor, arrays: list, op: Any, async_op: bool, who: str
) -> Work | None:
    red = Reducible(arrays, op, who)
    recv = np.empty(output.numel(), red.buf.dtype)
    return run(
        g.comm,
        "Reduce_scatter_block",
        (red.buf, recv, red.op),
        async_op,
        lambda: write(output, red.result(recv, g.size())),
        [output],
    )


def _check_total(who: str, big: Tensor, small: Tensor, n: int) -> None:
    if big.numel() != n * small.numel() or big.dtype is not small.dtype:
        raise ShapeError(
            f"{who}: {tuple(big.shape)} {big.dtype.name} must hold the world size "
            f"({n}) times {tuple(small.shape)} {small.dtype.name}"
        )


@member_only()
def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int | None = None,
    group: Group = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Rank ``dst`` receives every rank's ``tensor`` into ``gather_list``."""
    g = entered(group, "gather", tensor)
    root = g.root(dst, group_dst, "gather", default=0)
    send = as_bytes(tensor, "gather")
    if g.rank() != root:
        return run(g.comm, "Gather", (send, None, root), async_op)
    check_count("gather", "gather_list", gather_list, g.size())
    for i, out in enumerate(gather_list):
        check_like("gather", f"gather_list[{i}]", out, tensor)
    recv = np.empty(send.size * g.size(), np.uint8)

    def finish() -> None:
        for out, part in zip(gather_list, np.split(recv, g.size())):
            write(out, part)

    return run(g.comm, "Gather", (send, recv, root), async_op, finish, list(gather_list))


@member_only()
def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int | None = None,
    group: Group = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Rank i's ``tensor`` receives ``scatter_list[i]`` of rank ``src``."""
    g = entered(group, "scatter", tensor)
    root = g.root(src, group_src, "scatter", default=0)
    recv = np.empty(tensor.nbytes, np.uint8)
    send = None
    if g.rank() == root:
        check_count("scatter", "scatter_list", scatter_list, g.size())
        for i, t in enumerate(scatter_list):
            check_like("scatter", f"scatter_list[{i}]", t, tensor)
        send = np.concatenate([as_bytes(t, "scatter") for t in scatter_list])
    return run(g.comm, "Scatter", (send, recv, root), async_op, lambda: write(tensor, recv),
               [tensor])


@member_only()
def all_to_all(
    output_tensor_list: list[Tensor],
    input_tensor_list: list[Tensor],
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Rank i sends ``input_tensor_list[j]`` to rank j, which stores it in its
    ``output_tensor_list[i]`` (sizes may differ between pairs)."""
    g = entered(group, "all_to_all")
    check_count("all_to_all", "output_tensor_list", output_tensor_list, g.size())
    check_count("all_to_all", "input_tensor_list", input_tensor_list, g.size())
    _check_dtypes("all_to_all", [*output_tensor_list, *input_tensor_list])
    send = np.concatenate([as_bytes(t, "all_to_all") for t in input_tensor_list])
    recv_counts = [t.nbytes for t in output_tensor_list]
    recv = np.empty(sum(recv_counts), np.uint8)

    def finish() -> None:
        for out, part in zip(output_tensor_list, np.split(recv, np.cumsum(recv_counts)[:-1])):
            write(out, part)

    args = ([send, [t.nbytes for t in input_tensor_list]], [recv, recv_counts])
    return run(g.comm, "Alltoallv", args, async_op, finish, list(output_tensor_list))


@member_only()
def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: list[int] | None = None,
    input_split_sizes: list[int] | None = None,
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """:func:`all_to_all` on slices along dim 0 of one tensor (equal slices by default)."""
    g = entered(group, "all_to_all_single")
    _check_dtypes("all_to_all_single", [output, input])
    n = g.size()
    send = as_bytes(input, "all_to_all_single")
    send_counts = _split_bytes(input, input_split_sizes, n, "input_split_sizes")
    recv_counts = _split_bytes(output, output_split_sizes, n, "output_split_sizes")
    recv = np.empty(output.nbytes, np.uint8)
    return run(
        g.comm,
        "Alltoallv",
        ([send, send_counts], [recv, recv_counts]),
        async_op,
        lambda: write(output, recv),
        [output],
    )


def _check_dtypes(who: str, tensors: list[Tensor]) -> None:
    """One dtype for every tensor (else MPI would mix their bytes or fail on a short message)."""
    dtypes = sorted({t.dtype.name for t in tensors if isinstance(t, Tensor)})
    if len(dtypes) > 1:
        raise DTypeError(f"{who}: the output and input tensors have different dtypes {dtypes}. "
                         "Hint: give them all one dtype (as PyTorch asks)")


def _split_bytes(t: Tensor, sizes: list[int] | None, n: int, what: str) -> list[int]:
    rows = t.shape[0] if t.ndim else 1
    row = t.nbytes // rows if rows else 0
    if sizes is None:
        if rows % n:
            raise ShapeError(
                f"all_to_all_single: dim 0 of {tuple(t.shape)} does not split in "
                f"{n} equal parts; pass {what}"
            )
        return [rows // n * row] * n
    if len(sizes) != n or sum(sizes) != rows:
        raise ShapeError(
            f"all_to_all_single: {what} {list(sizes)} must have {n} entries "
            f"summing to dim 0 of {tuple(t.shape)}"
        )
    return [int(s) * row for s in sizes]


@member_only()
def send(tensor: Tensor, dst: int | None = None, group: Group = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Sends ``tensor`` to rank ``dst`` (or group rank ``group_dst``); blocks until the buffer
    may be reused."""
    g = resolve(group, "send")
    buf, peer = as_bytes(tensor, "send"), g.peer(dst, group_dst, "send", "destination")
    run(g.comm, "Send", (buf, peer, tag), False)


@member_only(outside=-1)
def recv(tensor: Tensor, src: int | None = None, group: Group = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receives into ``tensor`` from rank ``src`` (or group rank ``group_src``; any rank when
    neither is given); returns the sender's world rank."""
    g = resolve(group, "recv")
    buf = np.empty(tensor.nbytes, np.uint8)
    status = mpi().Status()
    source = _source(g, src, group_src, "recv")
    run(g.comm, "Recv", (buf, source, tag, status), False,
        lambda: _write_received(tensor, buf, status, g, "recv"))
    return g.ranks[status.Get_source()]


def _source(g: ProcessGroup, world_rank: int | None, group_rank: int | None, who: str) -> int:
    """A receive's source: any rank when neither rank is given."""
    if world_rank is None and group_rank is None:
        return mpi().ANY_SOURCE
    return g.peer(world_rank, group_rank, who, "source")


def _write_received(tensor: Tensor, buf: np.ndarray, status: Any, g: ProcessGroup,
                    who: str) -> None:
    """Stores a received message into ``tensor``; one shorter than the tensor is refused (the
    rest of ``buf`` is not data)."""
    got = status.Get_count(mpi().BYTE)
    if got != buf.size:
        raise ShapeError(
            f"{who}: the message from rank {g.ranks[status.Get_source()]} holds {got} bytes, "
            f"the tensor {tuple(tensor.shape)} {tensor.dtype.name} {buf.size}. Hint: receive "
            "into a tensor of the sent shape and dtype"
        )
    write(tensor, buf)


@member_only()
def isend(tensor: Tensor, dst: int | None = None, group: Group = None, tag: int = 0,
          group_dst: int | None = None) -> Work:
    """Non-blocking :func:`send`; keep ``tensor`` unchanged until ``wait()``."""
    g = resolve(group, "isend")
    buf = as_bytes(tensor, "isend")
    dest = g.peer(dst, group_dst, "isend", "destination")
    return Work(call(g.comm, "Isend", buf, dest=dest, tag=tag))


@member_only()
def irecv(tensor: Tensor, src: int | None = None, group: Group = None, tag: int = 0,
          group_src: int | None = None) -> Work:
    """Non-blocking :func:`recv`: ``tensor`` holds the message after ``wait()``, and the
    work's ``source_rank()`` its sender."""
    g = resolve(group, "irecv")
    buf = np.empty(tensor.nbytes, np.uint8)
    source = _source(g, src, group_src, "irecv")
    status = mpi().Status()
    return Work(call(g.comm, "Irecv", buf, source=source, tag=tag),
                lambda: _write_received(tensor, buf, status, g, "irecv"), [tensor], status,
                lambda: g.ranks[status.Get_source()])
