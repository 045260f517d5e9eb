"""ember.distributed against torch.distributed (gloo) run on the same ranks with the same
inputs (ranks/torch_parity.py), on 2 and 3 ranks."""

from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_match_torch_gloo(n, tmp_path):
    done = run_ranks(RANKS / "torch_parity.py", n, timeout=180, args=(tmp_path / "store",))
    assert reports(done) == {r: ["ok"] for r in range(n)}
