"""Moving a DTensor's local tensor from one list of placements to another, one mesh dimension
at a time, with differentiable collectives on that dimension's process group.

Each step is built from :mod:`ember.distributed.functional`'s Megatron pairs, so its backward
is the reverse redistribution, as in PyTorch, under one convention for the local gradient of
a placement: a ``Shard`` holds its piece of the global gradient, a ``Replicate`` and a
``Partial`` the whole of it (PyTorch turns the gradient of a ``Partial`` into a
``Replicate``):

=====================  ===================================  =============================
step                   forward                              backward
=====================  ===================================  =============================
Shard → Replicate      pad to the chunk size, all-gather    keep this rank's chunk
Replicate → Shard      keep this rank's chunk               all-reduce (of zero-padded)
Partial → Replicate    all-reduce (sum or mean)             identity
Replicate → Partial    divide by the group size (sum)       identity
=====================  ===================================  =============================

Other steps pass through ``Replicate`` (Shard(i) → Shard(j), Partial → Shard,
Shard → Partial). Pieces follow ``torch.chunk``, so uneven sizes work.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember.distributed import functional as dfn
from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.functional import ReduceFromGroup
from ember.distributed.tensor.placement import Partial, Placement, Replicate, Shard, chunk_bounds
from ember.func.batching import rule
from ember.ops.pad import pad
from ember.ops.primitive import Primitive, apply, primitive
from ember.tensor import Tensor

__all__ = ["local_bounds", "local_piece", "local_shape", "partition", "redistribute_local"]


@primitive
class PartitionValue(Primitive):
    """Replicate → Partial: each rank's term is ``x * scale``; the gradient of the value the
    terms add up to is ``x``'s own, so backward is the identity."""

    name = "partition_value"
    save_inputs = False

    def forward(self, xp, a, *, scale):
        return a * scale if scale != 1 else a.copy()

    def infer(self, x, *, scale):
        return x

    def vjp(self, ctx, g):
        return g

    def jvp(self, ctx, dx):
        return dx


@rule(PartitionValue.name)
def _batch_partition(b: int, xs: tuple, bs: tuple, *, scale: float) -> Tensor:
    """vmap: each sample's term is scaled alike (the batch axis in front changes nothing)."""
    return apply(PartitionValue, xs[0], scale=scale)


def local_bounds(size: int, dim: int, mesh: DeviceMesh, placements: Sequence[Placement],
                 upto: int | None = None) -> tuple[int, int]:
    """``[start, end)`` of this rank's piece of tensor dimension ``dim`` (global size
    ``size``) under ``placements`` (only mesh dimensions before ``upto``): the mesh
    dimensions that shard ``dim`` chunk it in turn, in mesh order."""
    start, end = 0, size
    coordinate = mesh.get_coordinate()
    for m, p in enumerate(placements[:upto]):
        if isinstance(p, Shard) and p.dim == dim:
            lo, hi = chunk_bounds(end - start, mesh.size(m), coordinate[m])
            start, end = start + lo, start + hi
    return start, end


def local_shape(shape: Sequence[int], mesh: DeviceMesh,
                placements: Sequence[Placement]) -> tuple[int, ...]:
    """The shape of this rank's local tensor for a global ``shape``."""
    return tuple(hi - lo for lo, hi in (local_bounds(s, d, mesh, placements)
                                        for d, s in enumerate(shape)))


def local_piece(full: Tensor, mesh: DeviceMesh, placements: Sequence[Placement]) -> Tensor:
    """This rank's piece of ``full``, a whole global tensor, under ``placements`` (whole along
    ``Replicate`` and ``Partial`` mesh dimensions): no communication."""
    for dim, size in enumerate(full.shape):
        lo, hi = local_bounds(size, dim, mesh, placements)
        full = full.narrow(dim, lo, hi - lo)
    return full


def _gather(x: Tensor, dim: int, size: int, group: object) -> Tensor:
    """Shard → Replicate along one mesh dimension: ``size`` is the length the group's
    pieces make up."""
    piece = chunk_bounds(size, group.size(), 0)[1]  # the first (largest) piece
    if x.shape[dim] < piece:  # (pad, not cat: cat drops an empty 1-d piece from the graph)
        x = pad(x, [0, 0] * (x.ndim - 1 - dim) + [0, piece - x.shape[dim]])
    return dfn.gather_from_group(x, dim, group).narrow(dim, 0, size)


def _scatter(x: Tensor, dim: int, group: object, index: int) -> Tensor:
    """Replicate → Shard: this rank's ``torch.chunk`` piece, gradients all-reduced."""
    lo, hi = chunk_bounds(x.shape[dim], group.size(), index)
    return dfn.copy_to_group(x, group).narrow(dim, lo, hi - lo)


def _reduce(x: Tensor, placement: Partial, group: object) -> Tensor:
    """Partial → Replicate."""
    op = "mean" if placement.reduce_op == "avg" else "sum"
    return apply(ReduceFromGroup, x, op=op, group=group)


def partition(x: Tensor, placement: Partial, group: object) -> Tensor:
    """Replicate → Partial: terms that reduce to ``x``."""
    scale = 1.0 / group.size() if placement.reduce_op == "sum" else 1.0
    return apply(PartitionValue, x, scale=scale)


def _step(x: Tensor, current: Placement, target: Placement, m: int, mesh: DeviceMesh,
          shape: Sequence[int], placements: list[Placement]) -> Tensor:
    """Changes mesh dimension ``m`` from ``current`` to ``target``; ``placements`` are the
    current ones of every mesh dimension (for the sizes of nested shards)."""
    group = mesh.get_group(m)
    if isinstance(current, Shard):
        lo, hi = local_bounds(shape[current.dim], current.dim, mesh, placements, upto=m)
        x = _gather(x, current.dim, hi - lo, group)
    elif isinstance(current, Partial):
        x = _reduce(x, current, group)
    if isinstance(target, Shard):
        return _scatter(x, target.dim, group, mesh.get_coordinate()[m])
    if isinstance(target, Partial):
        return partition(x, target, group)
    return x


def _to_unshard(current: Sequence[Placement], target: Sequence[Placement]) -> set[int]:
    """The mesh dimensions to take to Replicate first, last one first: every changed one, and
    any later one sharding a tensor dimension that a changed one shards (before or after),
    since nested pieces are cut in mesh order."""
    changed = {m for m, (c, t) in enumerate(zip(current, target)) if c != t}
    grew = True
    while grew:
        grew = False
        for m in sorted(changed):
            dims = {p.dim for p in (current[m], target[m]) if isinstance(p, Shard)}
            for later in range(m + 1, len(current)):
                p = current[later]
                if later not in changed and isinstance(p, Shard) and p.dim in dims:
                    changed.add(later)
                    grew = True
    return changed


def redistribute_local(x: Tensor, mesh: DeviceMesh, shape: Sequence[int],
                       current: Sequence[Placement], target: Sequence[Placement]) -> Tensor:
    """This rank's local tensor under ``target``, from ``x``, its local tensor under
    ``current``, of a DTensor of global ``shape``; every rank of the mesh must call it."""
    placements = list(current)
    todo = _to_unshard(current, target)
    for m in sorted(todo, reverse=True):  # Shard → Replicate first, inner pieces first
        if isinstance(placements[m], Shard):
            x = _step(x, placements[m], Replicate(), m, mesh, shape, placements)
            placements[m] = Replicate()
    for m in sorted(todo):
        if placements[m] != target[m]:
            x = _step(x, placements[m], target[m], m, mesh, shape, placements)
            placements[m] = target[m]
    return x
