"""``ember.distributed.checkpoint.state_dict``: PyTorch's get/set_state_dict names (the same
keys as torch's for the same model, DDP's ``module.`` left out, a ``fully_shard`` model's
full tensors with ``full_state_dict``), saved and loaded with the checkpoint's PyTorch form."""

import pytest
import torch
from torch.distributed.checkpoint.state_dict import get_state_dict as torch_get_state_dict

import ember
from ember.distributed import checkpoint
from ember.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from tests.distributed.harness import needs_mpi, reports, run_ranks, train_step


def _net(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
    net[0].weight.requires_grad_(False)  # (a frozen parameter: no optimizer state)
    return net, lib.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=0.1)


def test_the_keys_are_torchs_and_a_saved_state_continues_the_run(tmp_path):
    net, opt = _net(ember)
    train_step(net, opt, 5)
    msd, osd = get_state_dict(net, opt)
    tmsd, tosd = torch_get_state_dict(*_net(torch))
    assert sorted(msd) == sorted(tmsd) and sorted(osd["state"]) == sorted(tosd["state"])
    assert osd["param_groups"][0]["params"] == tosd["param_groups"][0]["params"]
    frozen_out = get_model_state_dict(net, options=StateDictOptions(ignore_frozen_params=True))
    assert sorted(frozen_out) == ["0.bias", "2.bias", "2.weight"]
    checkpoint.save({"model": msd, "optim": osd}, checkpoint_id=tmp_path / "c")

    again, again_opt = _net(ember)  # (a fresh optimizer: its state made to be filled)
    state = dict(zip(("model", "optim"), get_state_dict(again, again_opt)))
    checkpoint.load(state, checkpoint_id=tmp_path / "c")
    set_state_dict(again, again_opt, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    assert [train_step(net, opt, 5) for _ in range(2)] == \
        [train_step(again, again_opt, 5) for _ in range(2)]


@pytest.mark.parametrize("options, match", [
    (StateDictOptions(broadcast_from_rank0=True), "broadcast_from_rank0 not supported"),
    (StateDictOptions(flatten_optimizer_state_dict=True), "flatten_optimizer_state_dict"),
    ({"full_state_dict": True}, "options must be a StateDictOptions, got dict"),
])
def test_options_it_does_not_support_are_refused(options, match):
    with pytest.raises(ember.errors.ArgumentError, match=match):
        get_state_dict(*_net(ember), options=options)


RANKS = r"""
import numpy as np, ember, ember.distributed as dist
from ember.distributed import DistributedDataParallel as DDP
from ember.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict
from ember.distributed.fsdp import fully_shard
from ember.distributed.tensor import init_device_mesh
from tests.distributed.harness import report
dist.init_process_group()
ember.manual_seed(0)
plain = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.Tanh(), ember.nn.Linear(6, 2))
ddp = DDP(plain)
msd, osd = get_state_dict(ddp, ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9))
report([sorted(msd), sorted(osd["state"])])
ember.manual_seed(0)
net = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.Tanh(), ember.nn.Linear(6, 2))
full = {k: v.detach().numpy().tolist() for k, v in net.state_dict().items()}
fully_shard(net, mesh=init_device_mesh("cpu", (dist.get_world_size(),)))
opt = ember.optim.AdamW(net.parameters(), lr=0.01)
msd, osd = get_state_dict(net, opt, options=StateDictOptions(full_state_dict=True))
report([all(type(v) is ember.Tensor and v.detach().numpy().tolist() == full[k]
            for k, v in msd.items()),
        all(type(v) is ember.Tensor and v.shape == msd[name].shape
            for name, s in osd["state"].items() for k, v in s.items() if k != "step")])
"""


@needs_mpi
def test_ddp_names_and_a_fully_sharded_models_full_state_on_two_ranks():
    for rank in reports(run_ranks(RANKS, 2, timeout=120)).values():
        names, state_names = rank[0]
        assert names == ["0.bias", "0.weight", "2.bias", "2.weight"] == state_names
        assert rank[1] == [True, True]
