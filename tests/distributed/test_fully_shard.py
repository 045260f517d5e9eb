"""``fully_shard`` (FSDP2) on 2 and 4 MPI ranks: one launch each runs every check in
ranks/fully_shard_ranks.py (pieces of uneven sizes; on 4 ranks some are empty), and one launch
on 4 ranks those of ranks/fully_shard_control_ranks.py (initialisation after sharding, a tied
head, prefetching, HSDP)."""

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


@needs_mpi
def test_fully_shard_init_tied_prefetch_and_hsdp():
    got = reports(run_ranks(RANKS / "fully_shard_control_ranks.py", 4, timeout=240))
    assert sorted(got) == list(range(4))
    for rank, (r,) in got.items():
        # a sharded parameter initialised: each rank its rows of the unsharded draw
        assert all(v == 0.0 for v in r["init_gaps"].values()), r["init_gaps"]
        assert r["meta_forward_error"] and r["meta_init_gap"] == 0.0
        assert r["meta_train_gap"] <= 1e-12
        # a head tied to a sharded embedding kept gathered (reshard_after_forward=False)
        assert r["tied_outside_shape"] == [2 if rank == 3 else 3, 6]  # the piece, outside
        assert r["tied_child_loss_gap"] <= 1e-12 and r["tied_child_param_gap"] <= 1e-12
        assert r["tied_resharded_error"] and r["nested_resharded_error"]
        assert r["guarded_pickles_plain"]  # (a submodule of a sharded one: its own class)
        forward = ["root start", "root done", "b0 start", "b0 done"]
        assert r["gather_log_prefetch_False"] == [
            *forward, "b0 computes", "b1 start", "b1 done", "b1 computes", "backward",
            "b1 start", "b1 done", "b1 reduces", "b0 start", "b0 done", "b0 reduces",
            "root reduces"]
        # prefetched: b1's gather starts before b0 computes, b0's before b1's reduction
        assert r["gather_log_prefetch_True"] == [
            *forward, "b1 start", "b0 computes", "b1 done", "b1 computes", "backward",
            "b1 start", "b1 done", "b0 start", "b1 reduces", "b0 done", "b0 reduces",
            "root reduces"]
        assert r["prefetch_train_gap"] <= 1e-12
        assert r["paramless_root_prefetch_waits"] == [False]  # (prefetched, not gathered)
        # [gather in flight, gathered] after a backward whose prefetch went unused
        assert r["last_backward_True"] == [False, False]
        assert r["last_backward_False"] == [True, False]
        assert r["async_shape"] == [9, 7]
        assert r["async_log"] == ["b0 start", "returned", "b0 done", "root start", "root done",
                                  "b0 computes", "b1 start", "b1 done", "b1 computes"]
        assert r["stale_prefetch_gaps"] == [0.0, 0.0]  # (pieces changed after the gather began)
        assert r["int_reshard_gap"] <= 1e-12 and r["int_reshard_gather_ranks"] == [4, 4, 2, 2]
        assert r["int_reshard"] == [False, True] and r["int_reshard_error"]
        # HSDP on a 2 x 2 mesh: 9 rows in pieces of 5 and 4, replicated
        assert r["hsdp_piece_rows"] == (5 if rank % 2 == 0 else 4)
        assert r["hsdp_loss_gap"] <= 1e-12 and r["hsdp_param_gap"] <= 1e-12
        assert r["hsdp_clip_gap"] <= 1e-12
        assert max(r["hsdp_checkpoint_gaps"]) <= 1e-12  # (into 2 x 2 and into 4 ranks)
