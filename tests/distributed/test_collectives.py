"""In-place collectives on 2 ranks (every op, dtypes, async, objects) and groups on 4; both runs
also check device meshes, sub-groups, batched p2p and monitored_barrier (ranks/mesh_checks.py)
and split_group (ranks/c10d_checks.py); the 2-rank run also the stores (ranks/store_checks.py),
coalesced collectives and DDP communication hooks (ranks/comm_hooks.py)."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


def test_every_collective_on_two_ranks():
    done = run_ranks(RANKS / "collective_ops.py", 2, timeout=150)
    assert reports(done) == {0: ["ok"], 1: ["ok"]}


def test_differentiable_collectives_gradcheck_across_ranks():
    done = run_ranks(RANKS / "functional_ops.py", 2, timeout=120)
    assert reports(done) == {0: ["ok"], 1: ["ok"]}


def test_groups_on_four_ranks():
    done = run_ranks(RANKS / "groups.py", 4, timeout=90)
    assert reports(done) == {r: ["ok"] for r in range(4)}

