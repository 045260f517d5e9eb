"""Plugs ``ember.distributed`` into :class:`ember.nn.SyncBatchNorm` (``nn`` cannot import this
package): importing it registers the sum of the batch statistics over a process group's
ranks, a differentiable ``all_reduce``.

Example (under ``ember launch -n 2``):
    >>> import ember.distributed as dist          # registers the reducer
    >>> dist.init_process_group()
    >>> bn = nn.SyncBatchNorm(3)                    # statistics over both ranks' batches
"""

from __future__ import annotations

from collections.abc import Callable

from ember.distributed import functional
from ember.distributed.process_group import ProcessGroup, is_initialized, resolve
from ember.nn.sync_batch_norm import register_stat_reducer
from ember.tensor import Tensor


def sum_across_ranks(group: ProcessGroup | None) -> Callable[[Tensor], Tensor] | None:
    """The differentiable sum over ``group``'s ranks (the world when None), or None when
    there is one process (no process group, or a group of one)."""
    if group is None and not is_initialized():
        return None
    group = resolve(group, "SyncBatchNorm")
    if group.size() == 1:
        return None
    return lambda t: functional.all_reduce(t, "sum", group)


register_stat_reducer(sum_across_ranks)
