"""MPI's own failures raise DistBackendError on the ranks MPI fails, whichever entry point
made the call (ranks/backend_errors48.py): the differentiable functional collectives and the
coalesced ones raised a wrapped OpError (review48c)."""

from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


@pytest.mark.parametrize("n", [2])  # (3 ranks of unequal sizes can hang in MPI itself)
def test_a_truncated_message_is_a_dist_backend_error(n):
    got = reports(run_ranks(RANKS / "backend_errors48.py", n, timeout=120))
    for rank, (calls, probes) in got.items():
        mpi_calls = {k: v for k, v in calls.items() if "all_reduce" in k}
        assert len(mpi_calls) == 4
        assert set(mpi_calls.values()) <= {"ok", "DistBackendError"}, (rank, calls)
        # a destroyed group's comm: a missing name for hasattr/getattr, a DistError in use
        assert probes == {"hasattr": False, "getattr": "default",
                          "getattr of a public name": "default"}, probes
        assert calls["use of a destroyed group"] == "_Destroyed"
        assert calls["send to itself by group rank"] == "ArgumentError"
        # DDP's failed step leaves every gradient None (none half-written); the next works
        for name in ("Wait", "Test"):
            assert calls[f"ddp step failing in {name}"] == ("DistBackendError", "ok")[rank]
            assert calls[f"ddp grads after the failure in {name}"] == [True, True] or rank
            assert calls[f"next ddp step after {name}"] == "ok", (rank, calls)
            assert calls[f"ddp grads after {name}"] == [[[3.0] * 4] * 3, [2.0] * 3], calls
        works = {k: v for k, v in calls.items() if k.startswith("Work")}
        assert works == {"Work.is_completed": "DistBackendError", "Work.is_success": False,
                         "Work.wait": "DistBackendError",
                         "Work's future wait()": "DistBackendError"}, works
    assert {v for k, v in got[0][0].items() if "all_reduce" in k} == {"DistBackendError"}
