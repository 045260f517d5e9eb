"""nn.SyncBatchNorm across 2 ranks against one process's BatchNorm on the whole batch."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
def test_sync_batch_norm_matches_batch_norm_on_the_global_batch():
    done = run_ranks(RANKS / "sync_batch_norm_ranks.py", 2, timeout=90)
    assert reports(done) == {0: ["ok"], 1: ["ok"]}
