"""ZeroRedundancyOptimizer's checkpoints, sharded and consolidated, saved at any point."""

from pathlib import Path

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"
pytestmark = needs_mpi


def test_zero_checkpoints_resume_the_uninterrupted_run_and_match_torch():
    got = reports(run_ranks(RANKS / "zero_checkpoint.py", 2, timeout=240))
    assert sorted(got) == [0, 1]
    for rank, (r,) in sorted(got.items()):
        assert len(r["worst"]) == 2 * 2 * (3 * 2 + 1)  # (+ an old-code checkpoint each)
        assert max(r["worst"].values()) == 0.0, r["worst"]  # bit-identical, as the docs say
        assert r["parity"]["from_torch"] <= 1e-12
        assert r["parity"]["unconsolidated"]  # (the hint names this rank)
        probes = r["probes"]
        assert probes["missing checkpoint: state bytes"] == 0, probes
        for saved in (False, True):  # into a stepped ZeRO of the other amsgrad: replaced
            assert probes[f"amsgrad {saved} into stepped"] == "no error", probes
            assert probes[f"amsgrad {saved}"] == 0.0, probes
        assert "different 'step'" in probes["differing steps"], probes
        assert probes["refused load changed nothing"], probes
        assert "separate groups" in probes["partial group"], probes
        assert "group 1" in probes["unfrozen"] and "add_param_group" in probes["unfrozen"]
        assert "mixes dtypes" in probes["mixed dtypes"], probes
        assert probes["after refused group"] == 0.0, probes
        if rank == 0:
            assert r["parity"]["keys"] and r["parity"]["groups"], r["parity"]
            assert r["parity"]["state"] <= 1e-12
