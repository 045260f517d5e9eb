"""``checkpoint.save(state_dict, checkpoint_id=folder)`` and ``load``: PyTorch's
``torch.distributed.checkpoint`` form, with objects saved through their ``state_dict()``
(PyTorch's ``Stateful``), in one process without a process group and on 2 ranks of a
``fully_shard`` model (saved on 2, loaded on 1)."""

import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as torch_dcp

import ember
from ember.distributed import checkpoint
from tests.distributed.harness import needs_mpi, run_ranks, train_step


def _trained(seed: int, lr: float, steps: int = 2):
    ember.manual_seed(seed)
    model = ember.nn.Linear(3, 2)
    opt = ember.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        model(ember.ones(4, 3)).square().sum().backward()
        opt.step()
    return model, opt


def test_a_model_and_optimizer_round_trip_as_in_torch(tmp_path):
    model, opt = _trained(0, 0.1)
    folder = tmp_path / "ckpt"
    checkpoint.save({"model": model, "optim": opt, "epoch": 3}, checkpoint_id=folder)
    again, again_opt = _trained(1, 0.5)  # other values, other lr, a step count of its own
    state = {"model": again, "optim": again_opt, "epoch": 0}
    assert checkpoint.load(state, checkpoint_id=str(folder)) is None
    assert state["epoch"] == 3 and again_opt.param_groups[0]["lr"] == 0.1
    np.testing.assert_array_equal(again.weight.detach().numpy(), model.weight.detach().numpy())
    assert [train_step(model, opt, 4) for _ in range(2)] == \
        [train_step(again, again_opt, 4) for _ in range(2)]

    # PyTorch's own, on the same model: the same loaded values, the same next steps
    tmodel = torch.nn.Linear(3, 2)
    with torch.no_grad():
        tmodel.weight.copy_(torch.ones(2, 3))
    torch_dcp.save({"model": tmodel, "epoch": 3}, checkpoint_id=tmp_path / "torch")
    tagain = torch.nn.Linear(3, 2)
    tstate = {"model": tagain, "epoch": 0}
    assert torch_dcp.load(tstate, checkpoint_id=tmp_path / "torch") is None
    assert tstate["epoch"] == 3 and torch.equal(tagain.weight, tmodel.weight)


def test_torchs_default_none_arguments_are_taken_and_a_file_is_no_folder(tmp_path):
    state = {"w": ember.ones(2)}
    checkpoint.save(state, checkpoint_id=tmp_path / "c", storage_writer=None, planner=None)
    checkpoint.load(state, checkpoint_id=tmp_path / "c", storage_reader=None, planner=None)
    (tmp_path / "f").write_text("mine")
    with pytest.raises(ember.errors.CheckpointError, match="is a file; checkpoint_id names"):
        checkpoint.load(state, checkpoint_id=tmp_path / "f")
    assert (tmp_path / "f").read_text() == "mine"


def test_a_folder_of_other_files_is_not_replaced(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ember.errors.CheckpointError, match="holds files that are not a "
                       "checkpoint; it would replace them. Hint: give checkpoint_id a new"):
        checkpoint.save({"w": ember.ones(2)}, checkpoint_id=tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    checkpoint.save({"w": ember.ones(2)}, checkpoint_id=tmp_path / "c")  # a checkpoint is
    checkpoint.save({"w": ember.zeros(2)}, checkpoint_id=tmp_path / "c")  # replaced whole
    state = {"w": ember.ones(2)}
    checkpoint.load(state, checkpoint_id=tmp_path / "c")
    assert state["w"].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("call, match", [
    (lambda p: checkpoint.save({"w": ember.ones(1)}), "give the folder as checkpoint_id"),
    (lambda p: checkpoint.save({"w": ember.ones(1)}, checkpoint_id=p, storage_writer=object()),
     "storage_writer not supported"),
    (lambda p: checkpoint.load({"w": ember.ones(1)}, checkpoint_id=p, planner=object()),
     "planner not supported"),
    (lambda p: checkpoint.save(p, {"w": ember.ones(1)}, 1, checkpoint_id=p), "mixes its two forms"),
    (lambda p: checkpoint.load(p, {"w": ember.ones(1)}, no_dist=True), "mixes its two forms"),
    (lambda p: checkpoint.save(p, {"w": ember.ones(1)}), "give the state and the step"),
])
def test_arguments_of_the_other_form_or_of_torchs_storage_are_refused(tmp_path, call, match):
    with pytest.raises(ember.errors.ArgumentError, match=match):
        call(tmp_path / "c")


SHARDED = r"""
import sys, numpy as np, ember, ember.distributed as dist
from ember.distributed import checkpoint
from ember.distributed.fsdp import fully_shard, get_optimizer_state_dict
from ember.distributed.tensor import init_device_mesh
dist.init_process_group()
folder = sys.argv[1]
ember.manual_seed(0)
model = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.Tanh(), ember.nn.Linear(6, 2))
fully_shard(model, mesh=init_device_mesh("cpu", (dist.get_world_size(),)))
opt = ember.optim.AdamW(model.parameters(), lr=0.01)
x = ember.arange(12.0).reshape(3, 4) / 10
model(x).square().sum().backward()
opt.step()
checkpoint.save({"model": model.state_dict(), "optim": get_optimizer_state_dict(model, opt),
                 "step": 1}, checkpoint_id=folder)
full = {k: v.full_tensor().numpy() for k, v in model.state_dict().items()}
if dist.get_rank() == 0:
    np.savez(folder + ".npz", **full)
"""


@needs_mpi
def test_a_fully_sharded_checkpoint_saved_on_two_ranks_loads_in_one_process(tmp_path):
    folder = tmp_path / "ckpt"
    run_ranks(SHARDED, 2, timeout=120, args=(folder,))
    model = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.Tanh(), ember.nn.Linear(6, 2))
    state = {"model": model, "step": 0}
    checkpoint.load(state, checkpoint_id=folder, no_dist=True)
    full = np.load(f"{folder}.npz")
    assert state["step"] == 1
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), full[name])
