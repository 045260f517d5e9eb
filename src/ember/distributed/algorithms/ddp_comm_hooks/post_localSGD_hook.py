"""Post-local SGD (Lin et al., ICLR 2020), PyTorch's DDP hook: plain gradient averaging for
``start_localSGD_iter`` steps, then averaging only within a subgroup (or not at all); pair it
with :class:`~ember.distributed.algorithms.model_averaging.averagers.PeriodicModelAverager`,
which averages the parameters over all ranks every few steps.

Example:
    >>> subgroup, _ = dist.new_subgroups(2)
    >>> state = PostLocalSGDState(process_group=None, subgroup=subgroup, start_localSGD_iter=100)
    >>> ddp_model.register_comm_hook(state, post_localSGD_hook)
    >>> averager = PeriodicModelAverager(period=4, warmup_steps=100)
    >>> ...; opt.step(); averager.average_parameters(ddp_model.parameters())
"""

from __future__ import annotations

import logging

from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_fut
from ember.distributed.grad_bucket import GradBucket
from ember.distributed.process_group import ProcessGroup
from ember.errors import ArgumentError
from ember.futures import Future
from ember.tensor import Tensor

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]

logger = logging.getLogger(__name__)


class PostLocalSGDState:
    """The hook's configuration and step count (PyTorch's).

    Args:
        process_group: the group of the warm-up averaging (None: the world).
        subgroup: the group averaged over after the warm-up (e.g. the ranks of one machine,
            from ``new_subgroups``). PyTorch's None means one group per machine's GPUs; the
            MPI backend has no such default, so give it when ``post_local_gradient_allreduce``.
        start_localSGD_iter: steps of plain averaging first.
        post_local_gradient_allreduce: average within ``subgroup`` afterwards (else each rank
            keeps its own gradients).

    Example:
        >>> state = PostLocalSGDState(None, subgroup=None, start_localSGD_iter=10,
        ...                           post_local_gradient_allreduce=False)
        >>> state.iter
        0
    """

    __slots__ = ("process_group", "subgroup", "start_localSGD_iter",
                 "post_local_gradient_allreduce", "iter")

    def __init__(self, process_group: ProcessGroup | None, subgroup: ProcessGroup | None,
                 start_localSGD_iter: int, post_local_gradient_allreduce: bool = True) -> None:
        self.process_group = process_group
        self.subgroup = subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket: GradBucket) -> None:
        """Counts a step when the last bucket of the step is seen."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state: PostLocalSGDState, bucket: GradBucket) -> Future[Tensor]:
    """The mean over ``state.process_group`` for the first ``state.start_localSGD_iter``
    steps, then over ``state.subgroup`` (or this rank's own gradients, with
    ``post_local_gradient_allreduce=False``).

    Example:
        >>> ddp_model.register_comm_hook(state, post_localSGD_hook)
    """
    buffer = bucket.buffer()
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_fut(state.process_group, buffer)
    if not state.post_local_gradient_allreduce:
        fut: Future[Tensor] = Future()
        fut.set_result(buffer)
        return fut
    if state.subgroup is None:
        raise ArgumentError("post_localSGD_hook: PostLocalSGDState.subgroup is None; PyTorch then "
                            "makes one group per machine's CUDA devices, which the MPI backend has "
                            "not. Hint: pass subgroup=dist.new_subgroups(group_size)[0]")
    return allreduce_fut(state.subgroup, buffer)
