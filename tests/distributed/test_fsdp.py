"""FullyShardedDataParallel on 2 MPI ranks (one launch runs every check in
ranks/fsdp_ranks.py), and the wrap policies, which need no ranks."""

import functools
from pathlib import Path

from ember import nn
from ember.distributed.fsdp.wrap import (
    ModuleWrapPolicy,
    enable_wrap,
    lambda_auto_wrap_policy,
    size_based_auto_wrap_policy,
    transformer_auto_wrap_policy,
    wrap,
)
from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
def test_fsdp_follows_one_process_and_keeps_a_shard_per_rank():
    got = reports(run_ranks(RANKS / "fsdp_ranks.py", 2, timeout=180))
    assert sorted(got) == [0, 1]
    for (r,) in got.values():
        assert r["trajectory_gap"] <= 1e-12
        assert r["no_sync_gap"] <= 1e-12
        assert max(r["optim_state_gaps"]) <= 1e-12
        assert max(r["clip_gaps"]) <= 1e-12
        assert r["mixed_loss_gap"] <= 1e-5
        assert max(r["frozen_unit_gaps"]) <= 1e-12  # backward passes through a frozen unit
        assert r["tied_gap"] <= 1e-12
        assert r["full_round_trip"] == 0.0 and r["sharded_round_trip"] == 0.0
        assert r["shard_grad_op_kept"] == [15, 0]  # kept through forward, freed after backward
        # parameters + gradients + Adam's two moments: half of DDP's per rank (plus padding
        # and the per-unit step counts)
        assert abs(r["bytes"]["fsdp"] / r["bytes"]["ddp"] - 0.5) < 0.01
        # FULL_SHARD frees the gathered parameters after forward, views saved for backward
        # (a matmul keeps weight.t()) included; SHARD_GRAD_OP keeps them: at least the whole
        # model's parameters (a quarter of DDP's bytes) apart
        held = r["held_after_forward"]
        assert held["SHARD_GRAD_OP"] - held["FULL_SHARD"] >= 0.9 * r["bytes"]["ddp"] / 4, held


def test_policies_follow_pytorchs_rules():
    lin, seq, lst = nn.Linear(2, 2), nn.Sequential(), nn.ModuleList()
    size = functools.partial(size_based_auto_wrap_policy, min_num_params=6)
    assert size(module=lin, recurse=False, nonwrapped_numel=6)
    assert not size(module=lin, recurse=False, nonwrapped_numel=5)
    assert not size(module=lst, recurse=False, nonwrapped_numel=100)  # never a ModuleList
    assert not size(module=nn.MultiheadAttention(4, 2), recurse=True, nonwrapped_numel=100)
    for policy in (ModuleWrapPolicy({nn.Linear}),
                   functools.partial(transformer_auto_wrap_policy,
                                     transformer_layer_cls={nn.Linear}),
                   functools.partial(lambda_auto_wrap_policy,
                                     lambda_fn=lambda m: isinstance(m, nn.Linear))):
        assert policy(module=seq, recurse=True, nonwrapped_numel=0)
        assert policy(module=lin, recurse=False, nonwrapped_numel=0)
        assert not policy(module=seq, recurse=False, nonwrapped_numel=0)


def test_wrap_is_the_identity_outside_enable_wrap():
    lin = nn.Linear(2, 2)
    assert wrap(lin) is lin

    class Tag:
        def __init__(self, module, **kwargs):
            self.module, self.kwargs = module, kwargs

    with enable_wrap(wrapper_cls=Tag, a=1):
        tagged = wrap(lin, b=2)
    assert tagged.module is lin and tagged.kwargs == {"a": 1, "b": 2}
    assert wrap(lin) is lin
