"""A 4-rank world as a 2 × 2 grid: data × tensor and data × pipeline parallelism against one
process."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


def test_two_by_two_grids_match_one_process():
    done = run_ranks(RANKS / "hybrid_ranks.py", 4, timeout=60)
    assert reports(done) == {r: ["dp x tp ok", "dp x pp ok"] for r in range(4)}
