"""``DistributedDataParallel.join()``: training on uneven inputs (PyTorch's ``Join`` for DDP).

Inside the context every forward of a rank that still has inputs first all-reduces a notice:
which ranks are active, and whether this iteration broadcasts buffers and all-reduces
gradients. A rank that ran out of inputs leaves the block and, in ``__exit__``, answers each
notice with a zero and shadows the iteration's collectives (the buffer broadcast, each
bucket's gradient all-reduce with zeros, the unused-parameter check), so the active ranks
never wait on it. Their gradients are divided by the initial world size (default) or by the
number of active ranks. When no rank is active, the last ranks to finish broadcast their
parameters and buffers to every rank, so all replicas end equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.distributed.buffers import broadcast_from_first, call, mpi

__all__ = ["DDPJoin"]


class DDPJoin:
    """The context manager :meth:`DistributedDataParallel.join` returns."""

    def __init__(self, ddp: Any, divide_by_initial_world_size: bool, enable: bool,
                 throw_on_early_termination: bool) -> None:
        self.ddp, self.enable = ddp, enable
        self.divide_by_initial = divide_by_initial_world_size
        self.throw = throw_on_early_termination

    def __enter__(self) -> DDPJoin:
        if self.enable:
            object.__setattr__(self.ddp, "_join", self)
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if not self.enable:
            return
        object.__setattr__(self.ddp, "_join", None)
        self.ddp._divisor = self.ddp._group.size()
        if exc_type is None:
            self._sync_final(self._shadow())

    def _notice(self, active: bool, buffers: bool, grads: bool) -> tuple[int, int, bool, bool]:
        """All-reduces one notice; (active ranks, the last active rank, buffers, grads)."""
        group = self.ddp._group
        n = group.size()
        v = np.zeros(n + 2, np.int64)
        v[group.rank()], v[n], v[n + 1] = active, active and buffers, active and grads
        call(group.comm, "Allreduce", mpi().IN_PLACE, v, mpi().SUM)
        alive = np.flatnonzero(v[:n])
        count = len(alive)
        if self.throw and 0 < count < n:  # (none active: all ended together, as torch)
            raise RuntimeError("DistributedDataParallel.join: detected at least one rank that "
                               "exhausted its inputs (throw_on_early_termination=True); "
                               "throwing on all ranks")
        return count, int(alive[-1]) if count else -1, bool(v[n]), bool(v[n + 1])

    def forward_notice(self, buffers: bool, grads: bool) -> int:
        """From an active rank's forward: sends the notice, sets the gradients' divisor and
        gives the rank whose buffers are broadcast (the last active one, as PyTorch's)."""
        count, root, _, _ = self._notice(True, buffers, grads)
        self.ddp._divisor = self.ddp._group.size() if self.divide_by_initial else count
        return root

    def _shadow(self) -> bool:
        """Answers the active ranks' iterations until none is left; whether this rank was a
        last joiner (it shadowed nothing)."""
        ddp, last = self.ddp, True
        while True:
            count, root, buffers, grads = self._notice(False, False, False)
            if count == 0:
                return last
            last = False
            if buffers:
                broadcast_from_first(ddp._group, list(ddp.module.buffers()), root)
            if grads:
                self._shadow_backward()

    def _shadow_backward(self) -> None:
        ddp = self.ddp
        for b, bucket in enumerate(ddp._buckets):
            bucket.flat[...] = 0
            if ddp._comm_hook is None:
                req = call(ddp._group.comm, "Iallreduce", mpi().IN_PLACE, bucket.flat,
                           mpi().SUM)
                call(req, "Wait")
            else:
                ddp._call_hook(b).wait()
        if ddp.find_unused_parameters:  # every parameter is unused here: MIN leaves theirs
            flags = np.ones(sum(len(b.params) for b in ddp._buckets), np.uint8)
            call(ddp._group.comm, "Allreduce", mpi().IN_PLACE, flags, mpi().MIN)

    def _sync_final(self, last: bool) -> None:
        """Broadcasts the parameters and buffers of the highest last joiner to every rank."""
        group = self.ddp._group
        root = np.array([group.rank() if last else -1], np.int64)
        call(group.comm, "Allreduce", mpi().IN_PLACE, root, mpi().MAX)
        module = self.ddp.module
        broadcast_from_first(group, list(module.parameters()) + list(module.buffers()),
                             int(root[0]))
