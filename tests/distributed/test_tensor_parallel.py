"""Tensor-parallel layers and GPT against the unsharded model, on 2 and 4 ranks."""

from pathlib import Path

import pytest

import ember
from ember.distributed.tensor_parallel import shard, unshard
from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_tensor_parallel_matches_unsharded(n):
    done = run_ranks(RANKS / "tensor_parallel_ranks.py", n, timeout=60)
    assert reports(done) == {r: ["ok"] for r in range(n)}


def test_shard_and_unshard_in_one_process():
    x = ember.arange(24).view(2, 12)
    parts = [shard(x, 1, r, 2, stride=3) for r in range(2)]
    assert parts[0].tolist() == [[0, 1, 4, 5, 8, 9], [12, 13, 16, 17, 20, 21]]
    assert unshard(parts, 1, stride=3).tolist() == x.tolist()
    assert unshard([shard(x, 0, r, 2) for r in range(2)], 0).tolist() == x.tolist()
    with pytest.raises(ValueError, match="size 12 does not split into 4 ranks × 2 blocks"):
        shard(x, 1, 0, 4, stride=2)
