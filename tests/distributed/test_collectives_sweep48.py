"""What a sweep of ember.distributed against torch.distributed (gloo) found different, on 2
and 3 ranks (ranks/sweep48_checks.py): all_to_all dtype checks, barrier's async_op,
destroy_process_group of a sub-group."""

from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


@pytest.mark.parametrize("n", [2, 3])
def test_sweep_differences_fixed(n):
    done = run_ranks(RANKS / "sweep48_checks.py", n, timeout=120)
    assert reports(done) == {r: ["ok"] for r in range(n)}
