"""ZeroRedundancyOptimizer: DDP's trajectory with 1/N of the optimizer state per rank."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


def test_zero_stages_follow_ddp_with_a_shard_of_the_state():
    got = reports(run_ranks(RANKS / "zero_ddp.py", 2, timeout=120))
    assert sorted(got) == [0, 1]
    for (r,) in got.values():
        assert r["worst"] <= 1e-6
        assert r["moved"][0] > 0.1 and r["moved"][1:] == [0.0, 0.0]  # the unused layer stays
        for stage in ("zero1_state_bytes", "zero2_state_bytes"):
            # Adam's two moments per element, plus step counts and at most one padding element
            assert abs(r[stage] / r["full_state_bytes"] - 1 / 2) < 0.01
