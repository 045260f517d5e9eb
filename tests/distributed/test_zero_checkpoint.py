"""ZeroRedundancyOptimizer's checkpoints, sharded and consolidated, saved at any point."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


def test_zero_checkpoints_resume_the_uninterrupted_run_and_match_torch():
    got = reports(run_ranks(RANKS / "zero_checkpoint.py", 2, timeout=180))
    assert sorted(got) == [0, 1]
    for rank, (r,) in sorted(got.items()):
        assert len(r["worst"]) == 2 * 2 * 3 * 2
        assert max(r["worst"].values()) <= 1e-12, r["worst"]
        assert r["parity"]["from_torch"] <= 1e-12
        assert r["parity"]["unconsolidated"]
        if rank == 0:
            assert r["parity"]["keys"] and r["parity"]["groups"], r["parity"]
            assert r["parity"]["state"] <= 1e-12
