"""DTensor and tensor.parallel on 2 real MPI ranks (one launch), and the placements."""

from pathlib import Path

from ember.distributed.tensor import Partial, Replicate, Shard
from ember.distributed.tensor.placement import chunk_bounds
from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
def test_dtensor_on_two_ranks():
    done = run_ranks(RANKS / "dtensor_ranks.py", 2, timeout=120)
    assert reports(done) == {0: ["ok"], 1: ["ok"]}


def test_placements():
    assert Shard(1) == Shard(1) != Shard(0) and Replicate() == Replicate()
    assert Partial() == Partial("sum") != Partial("avg")
    assert repr([Shard(0), Replicate(), Partial()]) == "[Shard(dim=0), Replicate(), Partial(sum)]"
    assert Shard(0).is_shard() and Shard(0).is_shard(0) and not Shard(0).is_shard(1)
    assert len({Shard(0), Shard(0), Replicate()}) == 2


def test_chunk_bounds_match_torch_chunk():
    import torch

    for size in range(0, 9):
        for chunks in range(1, 5):
            pieces = torch.arange(size).chunk(chunks)
            for i in range(chunks):
                lo, hi = chunk_bounds(size, chunks, i)
                want = pieces[i].tolist() if i < len(pieces) else []
                assert list(range(lo, hi)) == want, (size, chunks, i)
