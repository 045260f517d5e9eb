"""Rank code: ZeRO stage 1 (behind DDP) and stage 2 (alone) follow plain DDP + Adam's
trajectory, with two parameter groups and a learning-rate schedule; optimizer state per rank
is about 1/N."""

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import models
from ember.distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
B, STEPS = 8, 3


def net():
    ember.manual_seed(rank)  # different per rank: DDP / ZeRO make them equal
    return models.mlp(hidden=24)


def groups(model):
    named = list(model.named_parameters())
    return [
        {"params": [p for k, p in named if k.endswith("weight")]},
        {"params": [p for k, p in named if k.endswith("bias")], "lr": 1e-2},
    ]


plain = dist.DistributedDataParallel(net())
opt = ember.optim.Adam(groups(plain.module), lr=3e-3)
z1_model = dist.DistributedDataParallel(net())
z1 = ZeroRedundancyOptimizer(groups(z1_model.module), ember.optim.Adam, stage=1, lr=3e-3)
z2_model = net()
z2 = ZeroRedundancyOptimizer(groups(z2_model), ember.optim.Adam, stage=2, lr=3e-3)
schedules = [ember.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) for o in (opt, z1, z2)]
with pytest.raises(dist.DistributedError, match="sharded_state"):
    z1.state_dict()

g = np.random.default_rng(5)
worst = 0.0
for _ in range(STEPS):
    x = np.split(g.standard_normal((B, 1, 28, 28)).astype(np.float32), n)[rank]
    y = np.split(g.integers(0, 10, B), n)[rank]
    for model, o in ((plain, opt), (z1_model, z1), (z2_model, z2)):
        o.zero_grad()
        F.cross_entropy(model(ember.tensor(x)), ember.tensor(y)).backward()
        o.step()
    for schedule in schedules:
        schedule.step()
    for p, q, r in zip(plain.parameters(), z1_model.parameters(), z2_model.parameters()):
        ref = np.linalg.norm(p.detach().numpy())
        worst = max(
            worst,
            np.linalg.norm((q - p).detach().numpy()) / ref,
            np.linalg.norm((r - p).detach().numpy()) / ref,
        )
assert all(p.grad is None for p in z2_model.parameters())  # stage 2 keeps only shard grads
# a parameter no rank has a gradient for keeps its value and state, as PyTorch's step skips it
used, unused = ember.nn.Linear(3, 1), ember.nn.Linear(3, 3)
decayed = ZeroRedundancyOptimizer([*used.parameters(), *unused.parameters()], ember.optim.AdamW,
                                  stage=2, lr=0.1, weight_decay=0.5)
before = [p.detach().numpy().copy() for p in (used.weight, unused.weight, unused.bias)]
for _ in range(2):
    decayed.zero_grad()
    used(ember.ones(2, 3)).sum().backward()
    decayed.step()
moved = [float(np.abs(p.detach().numpy() - b).max())
         for p, b in zip((used.weight, unused.weight, unused.bias), before)]
full = sum(v.nbytes for s in opt.state.values() for v in s.values() if isinstance(v, ember.Tensor))
report(
    {
        "worst": worst,
        "full_state_bytes": full,
        "zero1_state_bytes": z1.state_bytes(),
        "zero2_state_bytes": z2.state_bytes(),
        "moved": moved,
    }
)
