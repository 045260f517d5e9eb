"""Differentiable collectives: primitives with vjp and jvp rules, returning new tensors.

Two conventions, for two uses:

* ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast`` differentiate the sum of
  every rank's loss (each rank's loss counts): the vjp of a collective is its transpose
  (all_reduce ↔ all_reduce, all_gather ↔ reduce_scatter, broadcast ↔ reduce to ``src``).
* Megatron's pairs, for tensor parallelism, where every rank of the group computes the same
  (replicated) loss: ``copy_to_group`` (identity forward, all-reduce backward) and
  ``reduce_from_group`` (all-reduce forward, identity backward); ``scatter_to_group`` (keep
  this rank's chunk; backward all-gathers) and ``gather_from_group`` (all-gather; backward
  keeps this rank's chunk).

Every rank of the group must call these in the same order, forward and backward alike.

Example (under ``ember launch -n 2``):
    >>> x = ember.ones(3, requires_grad=True)
    >>> y = dist.functional.all_reduce(x)          # 2 * x on both ranks
    >>> y.sum().backward()
    >>> x.grad                                     # every rank's loss counts
    tensor([2., 2., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.distributed.buffers import ReduceOp, Reducible, call, mpi
from ember.distributed.process_group import ProcessGroup, resolve
from ember.errors import ShapeError
from ember.ops.creation import zeros_like
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import where
from ember.tensor import Tensor


def _allreduce(a: np.ndarray, op: str, group: ProcessGroup) -> np.ndarray:
    red = Reducible([np.array(a, copy=True)], op, "all_reduce")
    call(group.comm, "Allreduce", mpi().IN_PLACE, red.buf, red.op)
    return red.result(red.buf, group.size()).reshape(a.shape)


def _allgather(a: np.ndarray, dim: int, group: ProcessGroup) -> np.ndarray:
    send = np.ascontiguousarray(a)
    recv = np.empty((group.size(), *a.shape), a.dtype)
    call(group.comm, "Allgather", send.reshape(-1).view(np.uint8), recv.reshape(-1).view(np.uint8))
    return np.concatenate(list(recv), axis=dim)


def _chunk_spec(x: TensorSpec, dim: int, group: ProcessGroup, name: str) -> TensorSpec:
    n = group.size()
    if x.shape[dim] % n:
        raise ShapeError(
            f"{name}: dim {dim} of {x} does not split into {n} equal chunks, one "
            "per rank. Hint: pad it to a multiple of the group size"
        )
    shape = list(x.shape)
    shape[dim] //= n
    return TensorSpec(tuple(shape), x.dtype)


def _dim(x: Tensor, dim: int) -> int:
    return dim + x.ndim if dim < 0 else dim


class _Linear(Primitive):
    """A collective that is a linear map of its input: its jvp is the map itself."""

    save_inputs = False
    pure = False  # every rank runs it, in the same order: compiled graphs keep each one

    def jvp(self, ctx, dx):
        return apply(self, dx, **ctx.params)


class _AllReduceForward(Primitive):
    """The all-reduce computation, shared by ``all_reduce`` and ``reduce_from_group``."""

    save_inputs = False
    pure = False  # every rank runs it, in the same order: compiled graphs keep each one

    def forward(self, xp, a, *, op, group):
        return _allreduce(a, op, group)

    def infer(self, x, *, op, group):
        return x


@primitive
class AllReduce(_AllReduceForward):
    name = "all_reduce"
    save_inputs = True
    save_outputs = True

    def reads(self, ctx, i):
        return ctx.params["op"] in ("max", "min", "product")

    def vjp(self, ctx, g):
        op, group = ctx.params["op"], ctx.params["group"]
        if op in ("sum", "mean"):
            return all_reduce(g, op, group)
        return all_reduce(g, "sum", group) * self._local_slope(ctx)

    def jvp(self, ctx, dx):
        op, group = ctx.params["op"], ctx.params["group"]
        if op in ("sum", "mean"):
            return all_reduce(dx, op, group)
        return all_reduce(dx * self._local_slope(ctx), "sum", group)

    @staticmethod
    def _local_slope(ctx: Any) -> Tensor:
        """d out / d (this rank's x): the product of the other ranks' x for a product; for
        max and min, the indicator of the ranks holding the extreme, shared equally between
        ties."""
        (x,), y, group = ctx.inputs, ctx.out, ctx.params["group"]
        if ctx.params["op"] == "product":
            return _product_of_others(x.detach(), group)
        hit = (x.detach() == y.detach()).to(x.dtype)
        return hit / all_reduce(hit, "sum", group)


def _product_of_others(x: Tensor, group: ProcessGroup) -> Tensor:
    """The product over the other ranks of their ``x``, elementwise, also where some ``x``
    are 0 (``product / x`` there is 0 / 0): the product of the nonzero values, divided by
    this rank's own if nonzero, and 0 where another rank holds a zero."""
    zero = x == 0
    nonzero = where(zero, 1, x)
    product = all_reduce(nonzero, "product", group)
    zeros_elsewhere = all_reduce(zero.to(x.dtype), "sum", group) - zero.to(x.dtype)
    return where(zeros_elsewhere > 0, 0, product / nonzero)


@primitive
class ReduceFromGroup(_AllReduceForward):
    name = "reduce_from_group"

    def vjp(self, ctx, g):
        return g

    def jvp(self, ctx, dx):
        return all_reduce(dx, ctx.params["op"], ctx.params["group"])


class _AllGatherForward(_Linear):
    save_inputs = False

    def forward(self, xp, a, *, dim, group):
        return _allgather(a, dim, group)

    def infer(self, x, *, dim, group):
        shape = list(x.shape)
        shape[dim] *= group.size()
        return TensorSpec(tuple(shape), x.dtype)


@primitive
class AllGather(_AllGatherForward):
    name = "all_gather"

    def vjp(self, ctx, g):
        return reduce_scatter(g, ctx.params["dim"], ctx.params["group"])


@primitive
class GatherFromGroup(_AllGatherForward):
    name = "gather_from_group"

    def vjp(self, ctx, g):
        return scatter_to_group(g, ctx.params["dim"], ctx.params["group"])


@primitive
class ReduceScatter(_Linear):
    name = "reduce_scatter"

    def forward(self, xp, a, *, dim, group):
        n = group.size()
        send = np.ascontiguousarray(np.stack(np.split(a, n, axis=dim)))
        red = Reducible([send], "sum", "reduce_scatter")
        recv = np.empty(send.size // n, red.buf.dtype)
        call(group.comm, "Reduce_scatter_block", red.buf, recv, red.op)
        return red.result(recv, n).reshape(send.shape[1:])

    def infer(self, x, *, dim, group):
        return _chunk_spec(x, dim, group, "reduce_scatter")

    def vjp(self, ctx, g):
        return all_gather(g, ctx.params["dim"], ctx.params["group"])


@primitive
class ScatterToGroup(_Linear):
    name = "scatter_to_group"

    def forward(self, xp, a, *, dim, group):
        return np.split(a, group.size(), axis=dim)[group.rank()].copy()

    def infer(self, x, *, dim, group):
        return _chunk_spec(x, dim, group, "scatter_to_group")

    def vjp(self, ctx, g):
        return gather_from_group(g, ctx.params["dim"], ctx.params["group"])


@primitive
class Broadcast(_Linear):
    name = "broadcast"

    def forward(self, xp, a, *, src, group):
        out = np.array(a, copy=True, order="C")
        call(group.comm, "Bcast", out.reshape(-1).view(np.uint8), root=group.group_rank(src))
        return out

    def infer(self, x, *, src, group):
        return x

    def vjp(self, ctx, g):
        src, group = ctx.params["src"], ctx.params["group"]
        total = all_reduce(g, "sum", group)  # every rank joins the reduction to src
        return total if group.ranks[group.rank()] == src else zeros_like(g)


@primitive
class CopyToGroup(_Linear):
    """Identity forward; backward all-reduces the gradients with ``op`` (``"sum"``, or
    ``"mean"`` where the output is a rank's term of an average)."""

    name = "copy_to_group"

    def forward(self, xp, a, *, group, op="sum"):
        return a.copy()

    def infer(self, x, *, group, op="sum"):
        return x

    def vjp(self, ctx, g):
        return all_reduce(g, ctx.params.get("op", "sum"), ctx.params["group"])


def _op_name(op: Any) -> str:
    return ReduceOp.parse(op, "all_reduce").value


def all_reduce(x: Tensor, op: Any = "sum", group: ProcessGroup | None = None) -> Tensor:
    """``op`` (sum, mean, max, min, product) of ``x`` over the group's ranks, as a new tensor.

    Its gradient is the all-reduce of the gradients (sum and mean); for max and min it flows
    to the ranks holding the extreme (split between ties).

    Example:
        >>> y = dist.functional.all_reduce(x, "mean")
    """
    return apply(AllReduce, x, op=_op_name(op), group=resolve(group, "all_reduce"))


def all_gather(x: Tensor, dim: int = 0, group: ProcessGroup | None = None) -> Tensor:
    """Every rank's ``x`` concatenated along ``dim`` in rank order (same shape on each rank);
    its vjp is :func:`reduce_scatter` of the gradient.

    Example:
        >>> dist.functional.all_gather(ember.ones(2, 3), dim=0).shape   # 2 ranks
        (4, 3)
    """
    return apply(AllGather, x, dim=_dim(x, dim), group=resolve(group, "all_gather"))


def reduce_scatter(x: Tensor, dim: int = 0, group: ProcessGroup | None = None) -> Tensor:
    """Chunk i (along ``dim``) of the sum of every rank's ``x``, on rank i; its vjp is
    :func:`all_gather`.

    Example:
        >>> dist.functional.reduce_scatter(ember.ones(4, 3), dim=0)      # 2 ranks: 2 × 3 of 2s
    """
    return apply(ReduceScatter, x, dim=_dim(x, dim), group=resolve(group, "reduce_scatter"))


def broadcast(x: Tensor, src: int, group: ProcessGroup | None = None) -> Tensor:
    """Rank ``src``'s ``x`` (a world rank), on every rank; the gradients of all ranks flow
    back to ``src`` (summed), the others get zero.

    Example:
        >>> w = dist.functional.broadcast(w, src=0)
    """
    return apply(Broadcast, x, src=src, group=resolve(group, "broadcast"))


def copy_to_group(x: Tensor, group: ProcessGroup | None = None) -> Tensor:
    """Identity forward, all-reduce backward (Megatron's ``f``): the input of a
    column-parallel layer, whose replicated input gets gradients from every shard.

    Example:
        >>> h = column_linear(dist.functional.copy_to_group(x, tp_group))
    """
    return apply(CopyToGroup, x, group=resolve(group, "copy_to_group"))


def reduce_from_group(x: Tensor, group: ProcessGroup | None = None) -> Tensor:
    """All-reduce (sum) forward, identity backward (Megatron's ``g``): the output of a
    row-parallel layer, whose partial sums become the replicated result.

    Example:
        >>> y = dist.functional.reduce_from_group(x_shard @ w_shard.T, tp_group)
    """
    return apply(ReduceFromGroup, x, op="sum", group=resolve(group, "reduce_from_group"))


def scatter_to_group(x: Tensor, dim: int = -1, group: ProcessGroup | None = None) -> Tensor:
    """This rank's chunk of a replicated ``x`` along ``dim``; backward all-gathers.

    Example:
        >>> x_shard = dist.functional.scatter_to_group(x, dim=-1, group=tp_group)
    """
    return apply(ScatterToGroup, x, dim=_dim(x, dim), group=resolve(group, "scatter_to_group"))


def gather_from_group(x: Tensor, dim: int = -1, group: ProcessGroup | None = None) -> Tensor:
    """The chunks of all ranks concatenated along ``dim`` (a replicated result); backward
    keeps this rank's chunk of the gradient.

    Example:
        >>> logits = dist.functional.gather_from_group(logits_shard, dim=-1, group=tp_group)
    """
    return apply(GatherFromGroup, x, dim=_dim(x, dim), group=resolve(group, "gather_from_group"))
