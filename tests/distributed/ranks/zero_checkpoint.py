"""Rank code: a ZeroRedundancyOptimizer checkpoint saved at any point (before the first step,
after steps, after add_param_group; with a frozen group) loads back, sharded, consolidated or
sharded by older code (no has_state marks), and training goes on as without the interruption;
the consolidated state dict is PyTorch's Adam's, and PyTorch's loads into ZeRO. Then the
probes: a load replaces the state of a stepped optimizer wholesale, a refused one changes
nothing; partial state in a group, a parameter unfrozen after its group was added and a
mixed-dtype group are refused (the last leaving the optimizer as it was)."""

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
from ember.errors import CheckpointError

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


def build(kind, stage, lib=ember, **over):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(4, 5), lib.nn.Linear(5, 5), lib.nn.Linear(5, 2)]
    layers = [m.double() for m in layers]
    for p in layers[1].parameters():
        p.requires_grad_(False)
    cls, kw = KINDS[kind]
    kw = {**kw, **over}
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


def consolidated(opt):
    """The whole state dict, on every rank."""
    opt.consolidate_state_dict(to=n - 1)
    blob = io.BytesIO()
    if rank == n - 1:
        ember.save(opt.state_dict(), blob)
    return ember.load(io.BytesIO(bcast(blob.getvalue(), n - 1)))


def resumed(kind, stage, at, how, root):
    layers, opt = build(kind, stage)
    train(layers, opt, 0, at)
    weights = params(layers)
    if how == "consolidated":
        sd = consolidated(opt)
    else:  # older code saved no has_state marks
        state = {k: v for k, v in opt.sharded_state().items()
                 if how == "sharded" or not k.endswith("has_state")}
        path = checkpoint.save(root, {"optim": state}, step=at)
    layers, fresh = build(kind, stage)
    train(layers, fresh, 0, 1)  # state the checkpoint's replaces (or removes, saved at 0)
    with ember.no_grad():
        for p, w in zip((p for m in layers for p in m.parameters()), weights):
            p.copy_(ember.tensor(w))
    grow(layers, fresh, at - 1)  # the groups it had when saved
    if how != "consolidated":
        fresh.load_sharded_state(lambda t: checkpoint.load(path, {"optim": t}))
    else:
        fresh.load_state_dict(sd)
    train(layers, fresh, at, STEPS)
    return np.concatenate([a.ravel() for a in params(layers)])


worst, probes = {}, {}
with tempfile.TemporaryDirectory() as tmp:
    root = bcast(tmp)
    for kind in KINDS:
        for stage in (1, 2):
            layers, opt = build(kind, stage)
            train(layers, opt, 0, STEPS)
            straight = np.concatenate([a.ravel() for a in params(layers)])
            if (kind, stage) == ("sgd", 1):
                straight_sgd = straight
            for at in (0, ADD_AT, STEPS - 1):
                for how in ("sharded", "consolidated") + (("legacy",) if at == STEPS - 1 else ()):
                    got = resumed(kind, stage, at, how, f"{root}/{kind}{stage}{how}")
                    worst[f"{kind} stage {stage} at {at} {how}"] = float(
                        np.abs(got - straight).max())
    fresh = build("adam", 1)[1]  # no checkpoint there: the error, and no state made
    try:
        fresh.load_sharded_state(lambda t: checkpoint.load(f"{root}/nowhere", {"optim": t}))
    except CheckpointError:
        probes["missing checkpoint: state bytes"] = fresh.state_bytes()

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
    parity["unconsolidated"] = f"consolidate_state_dict(to={rank})" in str(e)


def snapshot(opt):
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    state = [{k: np.asarray(v.numpy() if hasattr(v, "numpy") else v).copy()
              for k, v in opt.optim.state.get(f.shard, {}).items()} for f in opt._flat]
    return groups, state


def same(a, b):
    return a[0] == b[0] and all(x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
                                for x, y in zip(a[1], b[1]))


def error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the probe reports which)
        return f"{type(e).__name__}: {e}"
    return "no error"


def load_into(sd, stepped, **over):
    """Loads ``sd`` (saved after 2 steps) into a fresh or a once-stepped ZeRO; trains on."""
    layers, opt = build("adam", 1, **over)
    train(layers, opt, 0, 1 if stepped else 0)
    with ember.no_grad():
        for p, w in zip((p for m in layers for p in m.parameters()), weights):
            p.copy_(ember.tensor(w))
    grow(layers, opt, ADD_AT)
    opt.load_state_dict(sd)
    train(layers, opt, 2, STEPS)
    return np.concatenate([a.ravel() for a in params(layers)])


for saved in (False, True):  # a stepped ZeRO with the other amsgrad ends as a fresh one
    layers, opt = build("adam", 1, amsgrad=saved)
    train(layers, opt, 0, 2)
    sd, weights = consolidated(opt), params(layers)
    runs = []
    probes[f"amsgrad {saved} into stepped"] = error(
        lambda sd=sd, saved=saved, runs=runs: runs.extend(
            load_into(sd, stepped, amsgrad=not saved) for stepped in (True, False)))
    probes[f"amsgrad {saved}"] = float(np.abs(runs[0] - runs[1]).max()) if runs else None
first = next(iter(sd["state"]))  # the first weight, in group 0
bad = {**sd, "state": {**sd["state"], first: {**sd["state"][first], "step": ember.tensor(9.0)}}}
bad["param_groups"] = [{**g, "lr": 0.123} for g in sd["param_groups"]]
layers, opt = build("adam", 1)
train(layers, opt, 0, 2)
before = snapshot(opt)
probes["differing steps"] = error(lambda: opt.load_state_dict(bad))
probes["refused load changed nothing"] = same(before, snapshot(opt))
partial = {**sd, "state": {k: v for k, v in sd["state"].items() if k != first}}
probes["partial group"] = error(lambda: load_into(partial, False))
layers, opt = build("sgd", 1)
layers[1].weight.requires_grad_(True)
probes["unfrozen"] = error(lambda: train(layers, opt, 0, 1))
layers, opt = build("sgd", 1)
mixed = [ember.nn.Parameter(ember.ones(2)), ember.nn.Parameter(ember.ones(2).double())]
probes["mixed dtypes"] = error(lambda: opt.add_param_group({"params": mixed}))
train(layers, opt, 0, STEPS)
probes["after refused group"] = float(np.abs(
    np.concatenate([a.ravel() for a in params(layers)]) - straight_sgd).max())
report({"worst": worst, "parity": parity, "probes": probes})
sys.stdout.flush()
