"""DTensor var/std/norm/prod/max/min/argmax/argmin/cumsum/cumprod (methods and ember.*
functions; they raised "no DTensor rule") and sum/mean over dim=()/[] (every dim, as torch;
they reduced none, review58mg) match the op on the full tensor, values and gradients, for
Shard/Replicate/Partial placements and uneven shards (sweep58g)."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi


def test_reductions_and_scans():
    got = reports(run_ranks(Path(__file__).parent / "ranks" / "dtensor_reduce_ranks.py", 2,
                            timeout=180))
    assert got == {0: [[280, {}, 1]], 1: [[280, {}, 1]]}
