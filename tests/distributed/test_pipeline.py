"""Pipeline parallelism (GPipe and 1F1B) against the unsplit model, on 2 and 4 ranks."""

from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


@pytest.mark.parametrize("n", [2, 4])
def test_pipeline_matches_unsplit_model(n):
    done = run_ranks(RANKS / "pipeline_ranks.py", n, timeout=60)
    found = reports(done)
    assert all(found[r][-1] == "ok" for r in range(n)), found
    # the default cut spreads the layers over every stage
    assert sum(found[r][0] for r in range(n)) == 2 * n + 4
