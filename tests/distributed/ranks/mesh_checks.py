"""Checks run inside the ranks of the 2-rank and 4-rank collective tests (so they cost no
launch of their own): DeviceMesh and its sub-communicators, new_subgroups, rank translation,
batch_isend_irecv, monitored_barrier (passing, and naming late ranks)."""

import time

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh


def check_mesh_and_subgroups() -> None:
    """Every rank of an even-sized world calls it, after init_process_group."""
    rank, n = dist.get_rank(), dist.get_world_size()
    count = dist.get_pg_count()
    mesh = init_device_mesh("cpu", (2, n // 2), mesh_dim_names=("dp", "tp"))
    assert dist.get_pg_count() == count + n // 2 + 2  # n // 2 columns, 2 rows
    dp, tp = divmod(rank, n // 2)
    assert mesh.get_coordinate() == (dp, tp) and mesh.ndim == 2 and mesh.shape == (2, n // 2)
    assert mesh.mesh.tolist() == np.arange(n).reshape(2, n // 2).tolist()
    assert mesh.size() == n and mesh.size("tp") == mesh.size(1) == n // 2
    assert mesh.get_local_rank("dp") == dp and mesh.get_local_rank(1) == tp
    row = [dp * (n // 2) + j for j in range(n // 2)]
    column = [tp, n // 2 + tp]
    assert dist.get_process_group_ranks(mesh.get_group("tp")) == row
    assert dist.get_process_group_ranks(mesh.get_group(0)) == column
    assert mesh["tp"].mesh.tolist() == row and mesh["tp"].get_group() is mesh.get_group("tp")
    assert mesh["dp"].get_local_rank() == dp and mesh["dp", "tp"].get_coordinate() == (dp, tp)
    assert mesh.mesh_dim_names == ("dp", "tp") and mesh["dp"].mesh_dim_names == ("dp",)
    with pytest.raises(RuntimeError, match="pass mesh_dim"):
        mesh.get_group()
    with pytest.raises(KeyError, match="ascending order"):
        mesh["tp", "dp"]
    with pytest.raises(KeyError, match="Invalid mesh_dim_names"):
        mesh["pp"]
    with pytest.raises(RuntimeError, match="'cuda' is not supported"):
        init_device_mesh("cuda", (n,))
    with pytest.raises(RuntimeError, match=r"holds 3 ranks, but the world has"):
        init_device_mesh("cpu", (3,))

    # the groups are real communicators: reduce along a column, gather along a row
    t = ember.tensor([float(rank)])
    dist.all_reduce(t, group=mesh.get_group("dp"))
    assert t.item() == sum(column)
    parts = [ember.zeros(1) for _ in row]
    dist.all_gather(parts, ember.tensor([float(rank)]), group=mesh["tp"].get_group())
    assert [p.item() for p in parts] == row

    # a mesh given explicitly, in an order that is not the world's: groups follow world order
    transposed = DeviceMesh("cpu", np.arange(n).reshape(n // 2, 2).T, mesh_dim_names=("a", "b"))
    assert transposed.get_coordinate() == (rank % 2, rank // 2)
    assert dist.get_process_group_ranks(transposed.get_group("a")) == [rank - rank % 2,
                                                                       rank - rank % 2 + 1]

    # new_subgroups, and translating ranks
    mine, pairs = dist.new_subgroups(2)
    assert len(pairs) == n // 2 and pairs[rank // 2] is mine
    others = [g for i, g in enumerate(pairs) if i != rank // 2]
    assert all(g is dist.GroupMember.NON_GROUP_MEMBER for g in others)
    assert dist.get_global_rank(mine, 1) == rank // 2 * 2 + 1
    assert dist.get_group_rank(mine, rank) == rank % 2
    with pytest.raises(ValueError, match="not part of the group"):
        dist.get_group_rank(mine, n)
    with pytest.raises(ValueError, match="must not exceed the world size"):
        dist.new_subgroups(n + 1)
    if n == 4:
        with pytest.raises(ValueError, match="must be divisible"):
            dist.new_subgroups(3)
    odd, groups = dist.new_subgroups_by_enumeration([[r] for r in range(1, n, 2)])
    assert (odd is None) == (rank % 2 == 0) and len(groups) == n // 2
    with pytest.raises(ValueError, match="has appeared in both subgroup"):
        dist.new_subgroups_by_enumeration([[0, 1], [1]])

    # a ring exchange in one batch (blocking sends in this order would deadlock)
    inbox = ember.zeros(2)
    ops = [dist.P2POp(dist.isend, ember.tensor([rank, 10.0 * rank]), (rank + 1) % n),
           dist.P2POp(dist.irecv, inbox, (rank - 1) % n)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert inbox.tolist() == [(rank - 1) % n, 10.0 * ((rank - 1) % n)]
    inbox = ember.zeros(1)
    ops = [dist.P2POp(dist.isend, ember.tensor([float(rank)]), group=mine, group_peer=1 - rank % 2),
           dist.P2POp(dist.irecv, inbox, group=mine, group_peer=1 - rank % 2)]
    [w.wait() for w in dist.batch_isend_irecv(ops)]
    assert inbox.item() == rank ^ 1
    with pytest.raises(ValueError, match="isend or irecv"):
        dist.P2POp(dist.send, inbox, 0)

    # monitored_barrier: all on time, then the upper half late
    dist.monitored_barrier(timeout=30)
    late = rank >= n // 2
    if late:
        time.sleep(1.0)
    with pytest.raises(dist.DistBackendError) as caught:
        dist.monitored_barrier(timeout=0.3, wait_all_ranks=True)
    if rank == 0:
        named = ", ".join(str(r) for r in range(n // 2, n))
        assert f"{'ranks' if n > 2 else 'rank'} {named} failed to pass" in str(caught.value)
    else:
        assert "was not released by rank 0" in str(caught.value)
    dist.monitored_barrier(timeout=30)  # the late messages of the failed call do not match this one
