"""Checks run inside the ranks of the 2-rank collective test: at DebugLevel.DETAIL collectives
that do not match across ranks raise on every rank, naming what each rank runs."""

import pytest

import ember
import ember.distributed as dist


def check_debug_level() -> None:
    """Every rank calls it, after init_process_group (with TORCH_DISTRIBUTED_DEBUG unset)."""
    rank = dist.get_rank()
    assert dist.get_debug_level() is dist.DebugLevel.OFF
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        t = ember.ones(3)
        dist.all_reduce(t)  # matching calls pass
        assert t.tolist() == [2.0] * 3
        with pytest.raises(dist.DistError, match=r"rank 0 runs all_reduce on \(3,\) float32, "
                                                 r"rank 1 runs all_reduce on \(4,\) float32"):
            dist.all_reduce(ember.ones(3 + rank))
        with pytest.raises(dist.DistError, match="rank 0 runs all_reduce on .* rank 1 runs "
                                                 "broadcast on"):
            if rank == 0:
                dist.all_reduce(ember.ones(2))
            else:
                dist.broadcast(ember.ones(2), src=0)
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)
