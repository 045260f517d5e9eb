"""Rank code: DDP + ZeRO training that checkpoints after every step and resumes from the
latest complete checkpoint (any world size). ``--kill-at S``: on the first attempt rank 1
kills itself with SIGKILL in the middle of step S."""

import argparse
import os
import signal

import numpy as np

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import models
from ember.distributed import checkpoint
from ember.distributed.optim import ZeroRedundancyOptimizer

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--ckpt", required=True)
parser.add_argument("--out")
parser.add_argument("--kill-at", type=int)
args = parser.parse_args()

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
B = 8
ember.manual_seed(0)
model = dist.DistributedDataParallel(models.mlp(hidden=16))
opt = ZeroRedundancyOptimizer(model.parameters(), ember.optim.Adam, lr=1e-2)
params = dict(model.module.named_parameters())

start = 0
last = checkpoint.latest(args.ckpt)
if last is not None:
    start = checkpoint.load(last, {"model": params})["step"]
    opt.load_sharded_state(lambda t: checkpoint.load(last, {"optim": t}))

for step in range(start, args.steps):
    g = np.random.default_rng(step)
    x = np.split(g.standard_normal((B, 1, 28, 28)).astype(np.float32), n)[rank]
    y = np.split(g.integers(0, 10, B), n)[rank]
    opt.zero_grad()
    F.cross_entropy(model(ember.tensor(x)), ember.tensor(y)).backward()
    if step == args.kill_at and rank == 1 and os.environ.get("EMBER_RESTART_COUNT") == "0":
        os.kill(os.getpid(), signal.SIGKILL)
    opt.step()
    checkpoint.save(
        args.ckpt,
        {"model": params, "optim": opt.sharded_state()},
        step + 1,
        extra={"step": step + 1, "world_size": n},
    )

if args.out and rank == 0:
    np.savez(args.out, **{k: p.detach().numpy() for k, p in params.items()})
