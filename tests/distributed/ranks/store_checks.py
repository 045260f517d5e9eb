"""Checks run inside the ranks of the 2-rank collective test: one FileStore shared by
processes (counters, a value one rank waits for, compare_set electing one winner)."""

import os
import tempfile

import pytest

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


def check_tcp_store() -> None:
    """Every rank calls it, last: rank 0 serves a TCPStore on a free port and every rank
    connects; counters, waiting for another rank's key, one compare_set winner, PrefixStores
    over it; then the default group is made again with init_process_group(store=...)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    store = dist.TCPStore("127.0.0.1", 0, n, True, wait_for_workers=False) if rank == 0 else None
    port = [store.port if rank == 0 else None]
    dist.broadcast_object_list(port, src=0)
    if rank:
        store = dist.TCPStore("127.0.0.1", port[0], n)
    for _ in range(20):
        store.add("count", 1)
    winner = store.compare_set("leader", "", f"rank {rank}")
    dist.PrefixStore(f"rank{rank}", store).set("hello", f"from {rank}")
    other = (rank + 1) % n
    assert dist.PrefixStore(f"rank{other}", store).get("hello") == f"from {other}".encode()
    dist.barrier()
    assert store.get("count") == str(20 * n).encode() and store.get("leader") == winner
    dist.barrier()  # (nobody reads the store below before everyone has read it above)
    dist.destroy_process_group()
    world = dist.init_process_group(store=dist.PrefixStore("init", store))
    assert world is dist.group.WORLD and store.get(f"init/rank/{rank}") == str(n).encode()
    with pytest.raises(TypeError, match="store must be an ember.distributed.Store"):
        dist.destroy_process_group()
        dist.init_process_group(store={})
    dist.init_process_group()
