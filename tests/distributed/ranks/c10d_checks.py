"""Checks run inside the ranks of the 2-rank collective job and the 4-rank groups job:
coalesced collectives, the *_single names, complex reductions, split_group, and the
module-level names PyTorch's scripts read (group.WORLD, reduce_op, backend queries)."""

import numpy as np
import pytest

import ember
import ember.distributed as dist


def check_coalesced_and_names() -> None:
    rank, n = dist.get_rank(), dist.get_world_size()
    a, b = ember.ones(2) * (rank + 1), ember.arange(3.0) * rank
    with pytest.warns(FutureWarning, match="all_reduce_coalesced"):
        assert dist.all_reduce_coalesced([a, b]) is None
    assert a.tolist() == [n * (n + 1) / 2] * 2
    assert b.tolist() == [0.0, sum(range(n)), 2.0 * sum(range(n))]
    c = ember.ones(2) * rank
    with pytest.warns(FutureWarning):
        fut = dist.all_reduce_coalesced(c, op="max", async_op=True)
    assert fut.wait()[0] is c and c.tolist() == [n - 1.0] * 2
    outs = [[ember.zeros(2, dtype=ember.int64), ember.zeros(1, dtype=ember.int64)]
            for _ in range(n)]
    with pytest.warns(FutureWarning, match="all_gather_coalesced"):
        dist.all_gather_coalesced(outs, [ember.tensor([rank, rank + 1]), ember.tensor([-rank])])
    assert [[t.tolist() for t in o] for o in outs] == [[[r, r + 1], [-r]] for r in range(n)]
    wrong = [[ember.zeros(1, dtype=ember.int32)] for _ in range(n)]  # (same bytes, not dtype)
    with pytest.raises(ember.ShapeError, match="like input_tensor_list"), \
            pytest.warns(FutureWarning):
        dist.all_gather_coalesced(wrong, [ember.ones(1)])
    with pytest.raises(ember.DTypeError, match="mixes dtypes"), pytest.warns(FutureWarning):
        dist.all_reduce_coalesced([ember.ones(1), ember.ones(1, dtype=ember.float64)])
    assert dist.all_gather_single is dist.all_gather_into_tensor
    assert dist.reduce_scatter_single is dist.reduce_scatter_tensor
    z = ember.tensor(np.array([1 + 2j, 3j]) * (rank + 1))
    dist.all_reduce(z)
    np.testing.assert_allclose(z.numpy(), np.array([1 + 2j, 3j]) * n * (n + 1) / 2)
    with pytest.raises(ValueError, match="does not support MAX on complex tensors"):
        dist.all_reduce(z, op=dist.ReduceOp.MAX)
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    assert dist.get_backend_config() == "cpu:mpi"
    assert dist.get_default_backend_for_device("cpu") == "mpi"


def check_split_group() -> None:
    """split_group of the world and of a sub-group (ranks of the parent translated)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    last = dist.split_group(split_ranks=[[n - 1]])
    assert (last is None) == (rank != n - 1)
    if last is not None:
        assert dist.get_process_group_ranks(last) == [n - 1]
    parent = dist.new_group(list(range(1, n)))  # world ranks 1 … n-1
    if parent is dist.GroupMember.NON_GROUP_MEMBER:
        return
    halves = dist.split_group(parent, [part for part in (list(range(0, n - 1, 2)),
                                                         list(range(1, n - 1, 2))) if part])
    expected = [r for r in range(1, n) if (r - 1) % 2 == (rank - 1) % 2]
    assert dist.get_process_group_ranks(halves) == expected
    t = ember.tensor([float(rank)])
    dist.all_reduce(t, group=halves)
    assert t.item() == sum(expected)
    with pytest.raises(ValueError, match="non-empty list of lists"):
        dist.split_group(parent, [])
    with pytest.raises(ValueError, match="cannot be empty"):  # (as torch)
        dist.split_group(parent, [[0], []])
    with pytest.raises(ValueError, match="duplicate ranks"):
        dist.split_group(parent, [[0, 0]])
