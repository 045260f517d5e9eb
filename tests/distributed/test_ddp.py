"""DistributedDataParallel: the same losses and parameters as one process with the global
batch (mlp and cnn, 2 and 4 ranks), bucketing, no_sync, unused parameters."""

from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_matches_one_process_with_the_global_batch(n):
    done = run_ranks(RANKS / "ddp_equivalence.py", n, timeout=150, args=("mlp", "cnn", "unused"))
    worst = reports(done)
    assert sorted(worst) == list(range(n))
    assert max(v[0] for v in worst.values()) <= 1e-5
