"""Checks run inside the ranks of the 2-rank collective test: one FileStore shared by
processes (counters, a value one rank waits for, compare_set electing one winner)."""

import os
import tempfile

import ember.distributed as dist


def check_file_store() -> None:
    """Every rank calls it, after init_process_group."""
    rank, n = dist.get_rank(), dist.get_world_size()
    path = [tempfile.mkdtemp() if rank == 0 else None]
    dist.broadcast_object_list(path, src=0)
    store = dist.FileStore(os.path.join(path[0], "store"), n)
    for _ in range(20):  # concurrent read-modify-writes lose nothing
        store.add("count", 1)
    winner = store.compare_set("leader", "", f"rank {rank}")
    if rank == n - 1:
        store.set("from_last", b"\x00hi")
    assert store.get("from_last") == b"\x00hi"  # the others wait for it
    dist.barrier()
    assert store.get("count") == str(20 * n).encode()
    assert store.get("leader") == winner  # everyone saw the same single winner
