"""Rank code (4 ranks): sub-groups — collectives inside each, world ranks as src/dst,
group ranks in world order whatever the order given (PyTorch sorts), non-members."""

import numpy as np
import pytest
from tests.distributed.harness import report
from tests.distributed.ranks.c10d_checks import check_split_group
from tests.distributed.ranks.mesh_checks import check_mesh_and_subgroups

import ember
import ember.distributed as dist
import ember.distributed.functional as F

dist.init_process_group("mpi")
rank = dist.get_rank()
assert dist.get_world_size() == 4
pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # every rank makes every group
mine = pairs[rank // 2]
reversed_world = dist.new_group([3, 2, 1, 0])
evens = dist.new_group([0, 2])

assert (
    mine.size() == 2
    and mine.rank() == rank % 2
    and mine.ranks == [rank // 2 * 2, rank // 2 * 2 + 1]
)
assert dist.get_rank(reversed_world) == rank and reversed_world.ranks == [0, 1, 2, 3]
other = pairs[1 - rank // 2]
assert other is dist.GroupMember.NON_GROUP_MEMBER
assert dist.get_rank(other) == -1 and dist.get_world_size(other) == -1
with pytest.warns(UserWarning, match="does not belong to the given group"):
    outside = ember.ones(1)
    assert dist.all_reduce(outside, group=other) is None and outside.item() == 1.0  # (PyTorch's)

t = ember.tensor([float(rank)])
dist.all_reduce(t, group=mine)
assert t.item() == {0: 1.0, 1: 1.0, 2: 5.0, 3: 5.0}[rank]
t = ember.tensor([float(rank)])
dist.broadcast(t, src=mine.ranks[1], group=mine)  # src is a world rank
assert t.item() == mine.ranks[1]
if rank < 2:
    with pytest.raises(dist.DistributedError, match="rank 3 is not in the group"):
        dist.broadcast(t, src=3, group=mine)
outs = [ember.zeros(1) for _ in range(4)]
dist.all_gather(outs, ember.tensor([float(rank)]), group=reversed_world)
assert [o.item() for o in outs] == [0.0, 1.0, 2.0, 3.0]
if evens is not dist.GroupMember.NON_GROUP_MEMBER:
    objs = [None, None]
    dist.all_gather_object(objs, rank, group=evens)
    assert objs == [0, 2]
    t = ember.zeros(1)
    if rank == 0:
        dist.send(ember.tensor([7.0]), dst=2, group=evens)
    else:
        assert dist.recv(t, src=0, group=evens) == 0 and t.item() == 7.0

# a differentiable collective inside a group
x = ember.tensor([float(rank + 1)], requires_grad=True)
y = F.all_gather(x, group=mine)
np.testing.assert_array_equal(y.detach().numpy(), np.array(mine.ranks, dtype=np.float32) + 1)
(y * ember.tensor([1.0, 10.0])).sum().backward()
assert x.grad.item() == (2.0 if rank % 2 == 0 else 20.0)
dist.barrier(mine)
check_mesh_and_subgroups()
check_split_group()
report("ok")
