"""PyTorch's coalesced collectives (deprecated there, kept for old scripts): several tensors
in one MPI call, and the ``*_single`` names of the one-tensor collectives.

Example (under ``ember launch -n 2``):
    >>> a, b = ember.ones(2), ember.ones(3) * dist.get_rank()
    >>> dist.all_reduce_coalesced([a, b])           # one Allreduce for both
    >>> a, b
    (tensor([2., 2.]), tensor([1., 1., 1.]))
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember.distributed.buffers import (
    ReduceOp,
    Reducible,
    as_bytes,
    call,
    host_array,
    mpi,
    write,
)
from ember.distributed.collectives import all_gather_into_tensor, reduce_scatter_tensor
from ember.distributed.debug import entered
from ember.distributed.process_group import ProcessGroup, member_only
from ember.errors import DTypeError, ShapeError
from ember.futures import Future
from ember.tensor import Tensor

all_gather_single = all_gather_into_tensor  # PyTorch's other names of these two
reduce_scatter_single = reduce_scatter_tensor


def _deprecated(name: str) -> None:
    warnings.warn(f"`ember.distributed.{name}` will be deprecated (as in PyTorch); use one "
                  "collective per tensor, or flatten them into one", FutureWarning, stacklevel=3)


def _same_dtype(who: str, what: str, tensors: list[Tensor]) -> None:
    if not tensors or any(not isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{who}: {what} must be a non-empty list of tensors")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise DTypeError(f"{who}: {what} mixes dtypes {sorted(d.name for d in dtypes)}; "
                         "they must all have one dtype")


def _done(async_op: bool, outputs: list[Tensor]) -> Future | None:
    """PyTorch's coalesced calls return a future (not a Work) with ``async_op=True``."""
    if not async_op:
        return None
    fut: Future = Future()
    fut.set_result(outputs)
    return fut


@member_only()
def all_reduce_coalesced(
    tensors: list[Tensor] | Tensor,
    op: Any = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Future | None:
    """:func:`all_reduce` of every tensor of ``tensors`` (one dtype), in place, in a single
    Allreduce of their concatenation; with ``async_op=True`` a completed future of them.

    Example:
        >>> dist.all_reduce_coalesced([ember.ones(2), ember.ones(3)])
    """
    _deprecated("all_reduce_coalesced")
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    _same_dtype("all_reduce_coalesced", "tensors", tensors)
    g = entered(group, "all_reduce_coalesced", tensors[0])
    red = Reducible([host_array(t, "all_reduce_coalesced") for t in tensors], op,
                    "all_reduce_coalesced")
    call(g.comm, "Allreduce", mpi().IN_PLACE, red.buf, red.op)
    values = red.result(red.buf, g.size())
    at = 0
    for t in tensors:
        write(t, values[at : at + t.numel()])
        at += t.numel()
    return _done(async_op, tensors)


@member_only()
def all_gather_coalesced(
    output_tensor_lists: list[list[Tensor]],
    input_tensor_list: list[Tensor],
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Future | None:
    """``output_tensor_lists[r][i]`` receives rank r's ``input_tensor_list[i]``, for every
    rank r, in a single Allgather; with ``async_op=True`` a completed future of the outputs.

    Example:
        >>> outs = [[ember.zeros(2), ember.zeros(1)] for _ in range(dist.get_world_size())]
        >>> dist.all_gather_coalesced(outs, [ember.ones(2), ember.zeros(1)])
    """
    _deprecated("all_gather_coalesced")
    who = "all_gather_coalesced"
    _same_dtype(who, "input_tensor_list", list(input_tensor_list))
    if not isinstance(output_tensor_lists, list):
        raise TypeError(f"{who}: output_tensor_lists should be a list (one list per rank)")
    g = entered(group, who, input_tensor_list[0])
    if len(output_tensor_lists) != g.size():
        raise ShapeError(f"{who}: output_tensor_lists has {len(output_tensor_lists)} lists, "
                         f"expected one per rank ({g.size()})")
    def kinds(tensors: list[Tensor]) -> list[str]:
        return [f"{t.dtype.name}{list(t.shape)}" for t in tensors]

    for r, outs in enumerate(output_tensor_lists):  # (as torch: same dtypes and shapes)
        if kinds(outs) != kinds(input_tensor_list):
            raise ShapeError(f"{who}: output_tensor_lists[{r}] holds {kinds(outs)}, expected "
                             f"{kinds(input_tensor_list)} like input_tensor_list")
    sizes = [t.nbytes for t in input_tensor_list]
    send = np.concatenate([as_bytes(t, who) for t in input_tensor_list])
    recv = np.empty(send.size * g.size(), np.uint8)
    call(g.comm, "Allgather", send, recv)
    cuts = np.cumsum(sizes)[:-1]
    for outs, block in zip(output_tensor_lists, np.split(recv, g.size())):
        for out, part in zip(outs, np.split(block, cuts)):
            write(out, part)
    return _done(async_op, [t for outs in output_tensor_lists for t in outs])
