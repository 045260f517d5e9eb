"""Random ops on DTensors and the generator they share (``torch.distributed.tensor._random``).

PyTorch's DTensor random ops draw from an offset-based RNG tracker: every rank starts from
rank 0's generator state and each shard reads its own offset of one Philox stream, so a
``Replicate`` DTensor gets the same values on every rank and the shards of a sharded one get
distinct pieces. Ember keeps that contract with a simpler mechanism: one generator that is
in the same state on every rank (rank 0's default generator state, copied on first use, or
:func:`manual_seed`) draws the values for the **global** shape, and each rank keeps its
piece. So a ``Replicate`` (or ``Partial``) input gets one mask on every rank, the shards of
a sharded input get independent masks, and the result equals a single process drawing from
a generator in the same state (PyTorch's sharded values differ from its single-process
ones). The cost: each rank draws the global shape's numbers.

Example (2 ranks):
    >>> manual_seed(0, mesh)
    >>> d = F.dropout(distribute_tensor(ember.ones(4, 2), mesh, [Shard(0)]), p=0.5)
    >>> d.to_local().shape, sorted(set(d.full_tensor().flatten().tolist())) == [0.0, 2.0]
    (ember.Size([2, 2]), True)
"""

from __future__ import annotations

from collections.abc import Callable

from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.object_collectives import broadcast_object_list
from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.ops import rule
from ember.distributed.tensor.redistribute import local_piece
from ember.ops.creation import ones
from ember.ops.dropout import dropout
from ember.ops.random import Generator, default_generator

__all__ = ["manual_seed"]

_shared: Generator | None = None


def manual_seed(seed: int, device_mesh: DeviceMesh) -> None:
    """Seeds the generator DTensor random ops share on the ranks of ``device_mesh``; every
    one of them must pass the same ``seed`` (as in PyTorch, not checked).

    Example (2 ranks):
        >>> manual_seed(1234, mesh)
    """
    global _shared
    _shared = Generator().manual_seed(seed)


def shared_generator() -> Generator:
    """The generator in one state on every rank: rank 0's default generator state, copied
    on first use (a collective over the world)."""
    global _shared
    if _shared is None:
        state = [default_generator.get_state()]
        broadcast_object_list(state, src=0)
        _shared = Generator().set_state(state[0])
    return _shared


@rule(dropout)
def _dropout(op: Callable, input: DTensor, p: float = 0.5, training: bool = True, *,
             inplace: bool = False, generator: Generator | None = None) -> DTensor:
    local = input._local_tensor
    if not training or p == 0.0:
        op(local, p, training)  # checks p
        return input
    scaled_mask = op(ones(*input.shape, dtype=local.dtype), p, True,
                     generator=generator if generator is not None else shared_generator())
    piece = local_piece(scaled_mask, input.device_mesh, input.placements)
    out = local.mul_(piece) if inplace else local * piece
    return input if inplace else DTensor(out, input.device_mesh, input.placements, input.shape)
