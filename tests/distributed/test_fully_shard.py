"""``fully_shard`` (FSDP2) on 2 and 4 MPI ranks: one launch each runs every check in
ranks/fully_shard_ranks.py (pieces of uneven sizes; on 4 ranks some are empty)."""

from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_fully_shard_follows_one_process(n):
    got = reports(run_ranks(RANKS / "fully_shard_ranks.py", n, timeout=240))
    assert sorted(got) == list(range(n))
    for (r,) in got.values():
        for reshard in (True, False):  # float64, AdamW, 3 steps, nested sharding
            assert r[f"loss_gap_reshard_{reshard}"] <= 1e-12
            assert r[f"param_gap_reshard_{reshard}"] <= 1e-12
            assert r[f"checkpointed_gap_{reshard}"] <= 1e-12
        # [gathers in forward + backward, gathered after forward, gathered after backward]
        assert r["gathers_reshard_True"] == [2, False, False]
        assert r["gathers_reshard_False"] == [1, True, False]
        assert r["kept_gathers"] == [1, 2]  # reused by the second step, fresh after opt.step
        assert r["kept_after_data_assign"] == 0.0
        assert r["tied_loss_gap"] <= 1e-12
        assert r["frozen_grad_gap"] <= 1e-12 and r["frozen_freed"]
        assert r["clip_gap_2.0"] <= 1e-12 and r["clip_gap_inf"] <= 1e-12
        assert r["clip_gap_assigned"] <= 1e-12
        assert r["accumulate_loss_gap"] <= 1e-12 and r["accumulate_param_gap"] <= 1e-12
        assert r["unused_loss_gap"] <= 1e-12 and r["unused_param_gap"] <= 1e-12
        assert r["unused_grad_none"]
        assert r["weight_norm_loss_gap"] <= 1e-12 and r["pre_hook_shapes"] == [5, 5]
        assert r["transformer_param_gap"] <= 1e-10
        # bfloat16 compute (3 significant digits), float32 reduction and pieces
        assert r["mixed_loss_gap"] <= 2e-2 and r["mixed_param_gap"] <= 2e-3
        assert r["mixed_grad_dtype"] == "ember.float32"
        assert r["unsharded_shape"] == [7, 9]
        assert r["dtensor_round_trip"] == r["full_round_trip"] == r["plain_round_trip"] == 0.0
        assert r["plain_root_round_trip"] == 0.0
        assert r["checkpoint_round_trip"] == 0.0
        assert r["after_load_losses_equal"]
        assert r["optim_resume_gaps"] == [0.0, 0.0]
