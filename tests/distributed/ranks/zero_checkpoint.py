"""Rank code: a ZeroRedundancyOptimizer checkpoint saved at any point (before the first step,
after steps, after add_param_group; with a frozen group) loads back, sharded or consolidated,
and training goes on as without the interruption; the consolidated state dict is PyTorch's
Adam's, and loads into plain optimizers (Ember's and PyTorch's) and back."""

import io
import sys
import tempfile

import numpy as np
import torch
from tests.distributed.harness import report

import ember
import ember.distributed as dist
from ember.distributed import checkpoint
from ember.distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
STEPS, ADD_AT = 4, 1  # the last group joins before step ADD_AT
X = np.random.default_rng(0).standard_normal((6, 4))
Y = np.random.default_rng(1).standard_normal((6, 2))
KINDS = {"adam": (ember.optim.Adam, {"lr": 0.05, "amsgrad": True}),
         "sgd": (ember.optim.SGD, {"lr": 0.05, "momentum": 0.9, "dampening": 0.3})}


def bcast(obj, src=0):
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def build(kind, stage, lib=ember):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(4, 5), lib.nn.Linear(5, 5), lib.nn.Linear(5, 2)]
    layers = [m.double() for m in layers]
    for p in layers[1].parameters():
        p.requires_grad_(False)
    cls, kw = KINDS[kind]
    groups = [{"params": layers[0].parameters()}, {"params": layers[1].parameters()}]
    if lib is torch:  # Ember's initial values
        with torch.no_grad():
            for p, q in zip((p for m in layers for p in m.parameters()), params(build(kind, 1)[0])):
                p.copy_(torch.tensor(q))
        opt = getattr(torch.optim, cls.__name__)(groups, **kw)
    else:
        opt = ZeroRedundancyOptimizer(groups, cls, stage=stage, **kw)
    return layers, opt


def grow(layers, opt, done):
    """The group added during training (as when unfreezing layers)."""
    if done >= ADD_AT and len(opt.param_groups) == 2:
        opt.add_param_group({"params": list(layers[2].parameters()), "lr": 0.02})


def train(layers, opt, start, stop, lib=ember):
    for i in range(start, stop):
        grow(layers, opt, i)
        x = lib.tensor(X + i)
        out = layers[2](lib.tanh(layers[1](lib.tanh(layers[0](x)))))
        for m in layers:
            m.zero_grad()
        ((out - lib.tensor(Y)) ** 2).sum().backward()
        opt.step()


def shared(groups, other):
    """The groups' entries that the other state dict's groups have too."""
    return [{k: v for k, v in g.items() if k in h} for g, h in zip(groups, other["param_groups"])]


def params(layers):
    return [p.detach().numpy().copy() for m in layers for p in m.parameters()]


def resumed(kind, stage, at, how, root):
    layers, opt = build(kind, stage)
    train(layers, opt, 0, at)
    weights = params(layers)
    if how == "sharded":
        path = checkpoint.save(root, {"optim": opt.sharded_state()}, step=at)
    else:
        opt.consolidate_state_dict(to=n - 1)
        blob = io.BytesIO()
        if rank == n - 1:
            ember.save(opt.state_dict(), blob)
        sd = ember.load(io.BytesIO(bcast(blob.getvalue(), n - 1)))
    layers, fresh = build(kind, stage)
    train(layers, fresh, 0, 1)  # state the checkpoint's replaces (or removes, saved at 0)
    with ember.no_grad():
        for p, w in zip((p for m in layers for p in m.parameters()), weights):
            p.copy_(ember.tensor(w))
    grow(layers, fresh, at - 1)  # the groups it had when saved
    if how == "sharded":
        fresh.load_sharded_state(lambda t: checkpoint.load(path, {"optim": t}))
    else:
        fresh.load_state_dict(sd)
    train(layers, fresh, at, STEPS)
    return np.concatenate([a.ravel() for a in params(layers)])


worst = {}
with tempfile.TemporaryDirectory() as tmp:
    root = bcast(tmp)
    for kind in KINDS:
        for stage in (1, 2):
            layers, opt = build(kind, stage)
            train(layers, opt, 0, STEPS)
            straight = np.concatenate([a.ravel() for a in params(layers)])
            for at in (0, ADD_AT, STEPS - 1):
                for how in ("sharded", "consolidated"):
                    got = resumed(kind, stage, at, how, f"{root}/{kind}{stage}{how}")
                    worst[f"{kind} stage {stage} at {at} {how}"] = float(
                        np.abs(got - straight).max())

# the consolidated state dict is a plain optimizer's: PyTorch's Adam gives the same
layers, opt = build("adam", 1)
train(layers, opt, 0, 2)
opt.consolidate_state_dict()
tlayers, topt = build("adam", 1, torch)
train(tlayers, topt, 0, 2, torch)
parity = {}
if rank == 0:
    mine, theirs = opt.state_dict(), topt.state_dict()
    parity["keys"] = sorted(map(int, mine["state"])) == sorted(theirs["state"])
    parity["groups"] = shared(mine["param_groups"], theirs) == shared(theirs["param_groups"], mine)
    parity["state"] = max(float(np.abs(v.numpy() - theirs["state"][i][k].numpy()).max())
                          for i, s in mine["state"].items() for k, v in s.items())
# PyTorch's state dict loads into ZeRO, and training goes on as PyTorch's
sd = bcast(topt.state_dict() if rank == 0 else None)
layers2, opt2 = build("adam", 2)
grow(layers2, opt2, 2)
with ember.no_grad():
    for p, q in zip((p for m in layers2 for p in m.parameters()), (q for m in tlayers for q in
                                                                  m.parameters())):
        p.copy_(ember.tensor(q.detach().numpy()))
train(tlayers, topt, 2, STEPS, torch)
opt2.load_state_dict(sd)
train(layers2, opt2, 2, STEPS)
parity["from_torch"] = max(float(np.abs(a - b).max())
                           for a, b in zip(params(layers2), params(tlayers)))
try:
    opt2.state_dict()
except dist.DistributedError as e:
    parity["unconsolidated"] = "consolidate_state_dict" in str(e)
report({"worst": worst, "parity": parity})
sys.stdout.flush()
