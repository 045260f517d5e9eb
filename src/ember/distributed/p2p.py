"""Batched point-to-point messages: :class:`P2POp` describes one ``isend`` or ``irecv``, and
:func:`batch_isend_irecv` starts a list of them at once (e.g. a ring exchange, where blocking
sends in the same order on every rank would deadlock).

Example (under ``ember launch -n 2``):
    >>> me, n = dist.get_rank(), dist.get_world_size()
    >>> out, inbox = ember.tensor([float(me)]), ember.zeros(1)
    >>> ops = [dist.P2POp(dist.isend, out, (me + 1) % n),
    ...        dist.P2POp(dist.irecv, inbox, (me - 1) % n)]
    >>> for work in dist.batch_isend_irecv(ops):
    ...     work.wait()
    >>> inbox                                            # on rank 0
    tensor([1.])
"""

from __future__ import annotations

from collections.abc import Callable

from ember.distributed.buffers import Work
from ember.distributed.collectives import irecv, isend
from ember.distributed.process_group import ProcessGroup, resolve
from ember.errors import ArgumentError
from ember.tensor import Tensor


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`.

    Args:
        op: :func:`~ember.distributed.isend` or :func:`~ember.distributed.irecv`.
        tensor: what to send, or where to receive.
        peer: the other side's world rank (or give ``group_peer``, its rank in ``group``).
        group: the group (the world when None).
        tag: matches a send with a receive.
        group_peer: the other side's rank inside ``group``.
    """

    def __init__(self, op: Callable, tensor: Tensor, peer: int | None = None,
                 group: ProcessGroup | None = None, tag: int = 0,
                 group_peer: int | None = None) -> None:
        if op is not isend and op is not irecv:
            raise ArgumentError("P2POp: op must be ember.distributed.isend or irecv, got "
                                f"{getattr(op, '__name__', op)!r}")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"P2POp: tensor must be an ember.Tensor, got {type(tensor).__name__}")
        self.op, self.tensor, self.tag = op, tensor, tag
        self.group = resolve(group, "P2POp")
        if (peer is None) == (group_peer is None):
            raise ArgumentError(f"P2POp: give exactly one of peer ({peer}) and "
                                f"group_peer ({group_peer})")
        if peer is None:
            if not 0 <= group_peer < self.group.size():
                raise ArgumentError(f"P2POp: group_peer {group_peer} is not a rank of the group "
                                    f"of world ranks {self.group.ranks}")
            peer = self.group.ranks[group_peer]
        self.peer = peer
        self.group_peer = self.group.group_rank(peer)

    def __repr__(self) -> str:
        return (f"P2POp({self.op.__name__}, peer={self.peer}, tag={self.tag}, "
                f"{tuple(self.tensor.shape)} {self.tensor.dtype.name})")


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Starts every operation in ``p2p_op_list`` (all on one group) and returns their
    :class:`~ember.distributed.Work` handles, in order; ``wait()`` on each before reading a
    received tensor or changing a sent one."""
    if (not isinstance(p2p_op_list, list) or not p2p_op_list
            or not all(isinstance(p, P2POp) for p in p2p_op_list)):
        raise ArgumentError("batch_isend_irecv: expected a non-empty list of "
                            "ember.distributed.P2POp")
    group = p2p_op_list[0].group
    if any(p.group is not group for p in p2p_op_list):
        raise ArgumentError("batch_isend_irecv: all ops need to use the same group")
    return [p.op(p.tensor, p.peer, group, p.tag) for p in p2p_op_list]
