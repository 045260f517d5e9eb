"""Rank code: FullyShardedDataParallel against one process with the global batch (SGD and
Adam, every sharding strategy, flat and nested units), optimizer state dicts under the
original names, gathered parameters freed when they should be, no_sync, clip_grad_norm_,
mixed precision, summon_full_params, full and sharded state dicts, the errors, and bytes per
rank against DDP for a small GPT."""

import collections
import functools
import sys
import tempfile
import tracemalloc

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed import checkpoint
from ember.distributed.fsdp import (
    FullyShardedDataParallel as FSDP,
)
from ember.distributed.fsdp import (
    MixedPrecision,
    ShardingStrategy,
    StateDictType,
)
from ember.distributed.fsdp.wrap import (
    ModuleWrapPolicy,
    enable_wrap,
    size_based_auto_wrap_policy,
    wrap,
)
from ember.models.gpt import Block

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
STRATEGIES = [ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP]
out: dict = {}


def net(seed: int = 0) -> nn.Module:
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(),
                         nn.Sequential(nn.Linear(5, 4), nn.Tanh()), nn.Linear(4, 2)).double()


def by_hand(strategy: ShardingStrategy) -> nn.Module:
    ember.manual_seed(0)
    with enable_wrap(wrapper_cls=FSDP, sharding_strategy=strategy):
        inner = nn.Sequential(nn.Linear(3, 5), nn.Tanh(),
                              wrap(nn.Sequential(nn.Linear(5, 4), nn.Tanh()).double()),
                              nn.Linear(4, 2))
        return FSDP(inner.double(), sharding_strategy=strategy)  # (the shards become float64)


WRAPS = {
    "flat": lambda s: FSDP(net(), sharding_strategy=s),
    "module_policy": lambda s: FSDP(net(), sharding_strategy=s,
                                    auto_wrap_policy=ModuleWrapPolicy({nn.Linear})),
    "size_policy": lambda s: FSDP(net(), sharding_strategy=s, auto_wrap_policy=functools.partial(
        size_based_auto_wrap_policy, min_num_params=20)),
    "enable_wrap": by_hand,
}
g = np.random.default_rng(0)
X, Y = g.standard_normal((3, 8, 3)), g.standard_normal((3, 8, 2))


def loss_of(model, x, y):
    return ((model(ember.tensor(x)) - ember.tensor(y)) ** 2).mean()


def mine(a):
    return np.split(a, n)[rank]


def worst_gap(model, ref) -> float:
    """Largest difference between the full state dict and the reference's parameters."""
    full = model.state_dict()
    return max(float(np.abs(full[k].numpy() - v.numpy()).max())
               for k, v in ref.state_dict().items())


# -- the trajectory of one process with the global batch ---------------------------------
SGD = (ember.optim.SGD, {"lr": 0.1, "momentum": 0.9})
ADAM = (ember.optim.Adam, {"lr": 0.01})
CASES = [(ShardingStrategy.FULL_SHARD, "flat", SGD), (ShardingStrategy.FULL_SHARD,
         "module_policy", ADAM), (ShardingStrategy.FULL_SHARD, "enable_wrap", SGD),
         (ShardingStrategy.SHARD_GRAD_OP, "size_policy", SGD),
         (ShardingStrategy.SHARD_GRAD_OP, "module_policy", ADAM),
         (ShardingStrategy.NO_SHARD, "module_policy", SGD),
         (ShardingStrategy.NO_SHARD, "enable_wrap", ADAM)]
gap = 0.0
for strategy, name, (opt_cls, kw) in CASES:
    ref, model = net(), WRAPS[name](strategy)
    units = [m for m in model.modules() if isinstance(m, FSDP)]
    assert len(units) == {"flat": 1, "module_policy": 4, "size_policy": 3,
                          "enable_wrap": 2}[name], (name, len(units))
    o_ref, o = opt_cls(ref.parameters(), **kw), opt_cls(model.parameters(), **kw)
    for x, y in zip(X, Y):
        o_ref.zero_grad()
        want = loss_of(ref, x, y)
        want.backward()
        o_ref.step()
        o.zero_grad()
        got = loss_of(model, mine(x), mine(y))
        got.backward()
        o.step()
        mean = dist.functional.all_reduce(got.detach(), "mean")
        gap = max(gap, abs(float(mean) - float(want)))
    gap = max(gap, worst_gap(model, ref))
out["trajectory_gap"] = gap

# -- optimizer state under the original names: the plain model's, and it resumes ----------
ref, model = net(), FSDP(net(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
o_ref = ember.optim.Adam(ref.parameters(), lr=0.01)
o = ember.optim.Adam(model.parameters(), lr=0.01)
for m, opt, x, y in ((ref, o_ref, X[0], Y[0]), (model, o, mine(X[0]), mine(Y[0]))):
    loss_of(m, x, y).backward()
    opt.step()
saved = FSDP.optim_state_dict(model, o)
names = [k for k, _ in ref.named_parameters()]
plain_state = {names[i]: s for i, s in o_ref.state_dict()["state"].items()}
assert sorted(saved["state"]) == sorted(plain_state)
assert saved["param_groups"][0]["params"] == names
optim_gap = max(float(np.abs(np.asarray(saved["state"][k][key]._data)
                             - np.asarray(v._data)).max())
                for k, s in plain_state.items() for key, v in s.items())
resumed = FSDP(net(seed=3), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
resumed.load_state_dict(model.state_dict())
o_resumed = ember.optim.Adam(resumed.parameters(), lr=0.01)
FSDP.optim_state_dict_to_load(resumed, o_resumed, saved, load_directly=True)
for m, opt, x, y in ((ref, o_ref, X[1], Y[1]), (resumed, o_resumed, mine(X[1]), mine(Y[1]))):
    opt.zero_grad()
    loss_of(m, x, y).backward()
    opt.step()
out["optim_state_gaps"] = [optim_gap, worst_gap(resumed, ref)]
rank0 = FSDP.full_optim_state_dict(model, o)
assert (rank0 == {}) == (rank != 0)
plain = net()
o_plain = ember.optim.Adam(plain.parameters(), lr=0.01)  # made before wrapping: not the shards
wrapped = FSDP(plain, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
for call in (lambda: FSDP.optim_state_dict(wrapped, o_plain),  # was KeyError: <an id()>
             lambda: FSDP.optim_state_dict_to_load(wrapped, o_plain, saved)):
    with pytest.raises(ValueError, match=r"6 of the optimizer's 6 parameters .* are not the "
                                         r"FSDP model's; make the optimizer after wrapping"):
        call()

# -- what each rank holds ---------------------------------------------------------------
model = FSDP(net(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
first = model.module[0].module
shard_sizes = [p.numel() for p in model.parameters()]
assert shard_sizes == [-(-k // n) for k in (20, 24, 10)], shard_sizes
assert not isinstance(first.weight, nn.Parameter) and first.weight.numel() == 0  # freed
y = model(ember.ones(2, 3, dtype=ember.float64))
assert first.weight.numel() == 0  # FULL_SHARD frees after forward
y.sum().backward()
assert first.weight.numel() == 0 and first.weight.grad is None
grow = FSDP(net(), sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)
y = grow(ember.ones(2, 3, dtype=ember.float64))
kept_after_forward = grow.module[0].weight.numel()
y.sum().backward()
out["shard_grad_op_kept"] = [kept_after_forward, grow.module[0].weight.numel()]
# an inner unit called on its own gathers its parameters, as in PyTorch
with ember.no_grad():
    alone = model.module[0](ember.ones(1, 3, dtype=ember.float64))
    assert np.allclose(alone.numpy(), net()[0](ember.ones(1, 3, dtype=ember.float64)).numpy())

# sync_module_states: rank 0's initial values everywhere
synced = FSDP(net(seed=rank + 10), sync_module_states=True)
assert all(np.array_equal(v.numpy(), net(seed=10).state_dict()[k].numpy())
           for k, v in synced.state_dict().items())
# ignored_modules: left as ordinary parameters with local gradients
plain_net = net()
kept = FSDP(plain_net, ignored_modules=[plain_net[3]], device_id="cpu")
assert [k for k, _ in kept.named_parameters()] == [
    "_fsdp_wrapped_module._flat_param", "_fsdp_wrapped_module.3.weight",
    "_fsdp_wrapped_module.3.bias"]
loss_of(kept, mine(X[0]), mine(Y[0])).backward()
local_bias = [None] * n
dist.all_gather_object(local_bias, plain_net[3].bias.grad.numpy())
assert not np.allclose(local_bias[0], local_bias[1])  # not reduced

# -- no_sync: two micro-batches, the first without communication -------------------------
ref, model = net(), FSDP(net(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
for x, y in zip(X[:2], Y[:2]):
    loss_of(ref, x, y).backward()
with model.no_sync():
    loss_of(model, mine(X[0]), mine(Y[0])).backward()
assert all(p.grad is None for p in model.parameters())
loss_of(model, mine(X[1]), mine(Y[1])).backward()
for o in (ember.optim.SGD(ref.parameters(), lr=1.0), ember.optim.SGD(model.parameters(), lr=1.0)):
    o.step()
out["no_sync_gap"] = worst_gap(model, ref)

# -- clip_grad_norm_: the norm of the whole gradient over all shards ----------------------
ref, model = net(), FSDP(net(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
loss_of(ref, X[0], Y[0]).backward()
loss_of(model, mine(X[0]), mine(Y[0])).backward()
clip_gaps = []
for norm_type in (2.0, float("inf")):
    want = nn.utils.clip_grad_norm_(ref.parameters(), 0.05, norm_type=norm_type)
    got = model.clip_grad_norm_(0.05, norm_type=norm_type)
    clip_gaps.append(abs(float(got) - float(want)))
for o in (ember.optim.SGD(ref.parameters(), lr=1.0), ember.optim.SGD(model.parameters(), lr=1.0)):
    o.step()
clip_gaps.append(worst_gap(model, ref))
with pytest.raises(RuntimeError, match="root"):
    model.module[0].clip_grad_norm_(1.0)
out["clip_gaps"] = clip_gaps

# -- mixed precision: float32 compute and reduction, float64 shards -----------------------
ref = net()
model = FSDP(net(), mixed_precision=MixedPrecision(param_dtype=ember.float32),
             auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
assert model(ember.tensor(mine(X[0]))).dtype is ember.float32
got = loss_of(model, mine(X[0]), mine(Y[0]))
got.backward()
assert all(p.dtype is ember.float64 and p.grad.dtype is ember.float64 for p in model.parameters())
out["mixed_loss_gap"] = abs(float(dist.functional.all_reduce(got.detach(), "mean"))
                            - float(loss_of(ref, X[0], Y[0])))


class PairInput(nn.Module):
    """Takes a named tuple (its floating tensors are cast like any input)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, pair):
        return self.linear(pair.x) + pair.shift


Pair = collections.namedtuple("Pair", "x shift")
model = FSDP(PairInput(), mixed_precision=MixedPrecision(param_dtype=ember.float16))
assert model(Pair(ember.ones(2, 3), ember.ones(2, 2))).dtype is ember.float16

# -- summon_full_params, full and sharded state dicts -------------------------------------
model = FSDP(net(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
with FSDP.summon_full_params(model):
    assert tuple(model.module[0].module.weight.shape) == (5, 3)
    with ember.no_grad():
        model.module[0].module.bias[...] = 7.0
assert float(model.state_dict()["0.bias"].sum()) == 35.0
with FSDP.summon_full_params(model, writeback=False):
    with ember.no_grad():
        model.module[0].module.bias[...] = 0.0
assert float(model.state_dict()["0.bias"].sum()) == 35.0

full = model.state_dict()
assert list(full) == list(net().state_dict()), list(full)
other = FSDP(net(seed=3), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
assert repr(other.load_state_dict(full)) == "<All keys matched successfully>"
plain = net(seed=4)
plain.load_state_dict(other.state_dict())
out["full_round_trip"] = max(float(np.abs(plain.state_dict()[k].numpy() - v.numpy()).max())
                             for k, v in full.items())
with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0.bias"'):
    other.load_state_dict({k: v for k, v in full.items() if k != "0.bias"})

root = [tempfile.mkdtemp(prefix="fsdp_ckpt_") if rank == 0 else None]
dist.broadcast_object_list(root)
with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
    pieces = model.state_dict()
    assert all(isinstance(v, checkpoint.ShardedTensor) for v in pieces.values())
    path = checkpoint.save(root[0], {"model": pieces}, step=1)
other = FSDP(net(seed=5), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
before = FSDP.set_state_dict_type(other, StateDictType.SHARDED_STATE_DICT)
assert before.state_dict_type is StateDictType.FULL_STATE_DICT
template = other.state_dict()
checkpoint.load(path, {"model": template})
other.load_state_dict(template)
FSDP.set_state_dict_type(other, StateDictType.FULL_STATE_DICT)
gaps = [max(float(np.abs(other.state_dict()[k].numpy() - v.numpy()).max())
            for k, v in full.items())]
# each rank saves its pieces with ember.save (ShardedTensors come back as plain tuples)
ember.save(pieces, f"{root[0]}/rank{rank}.pt")
other = FSDP(net(seed=6), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
with FSDP.state_dict_type(other, StateDictType.SHARDED_STATE_DICT):
    other.load_state_dict(ember.load(f"{root[0]}/rank{rank}.pt"))
gaps.append(max(float(np.abs(other.state_dict()[k].numpy() - v.numpy()).max())
                for k, v in full.items()))
out["sharded_round_trip"] = max(gaps)

# -- models beyond a plain stack --------------------------------------------------------
def gap_to_one_process(make, wrap, steps: int = 2) -> float:
    """Largest loss or parameter difference between ``wrap(make())`` and ``make()`` trained
    with SGD on the global batch."""
    ref, model = make(), wrap(make())
    o_ref = ember.optim.SGD([p for p in ref.parameters() if p.requires_grad], lr=0.1)
    o = ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    worst = 0.0
    for x, y in zip(X[:steps], Y[:steps]):
        losses = []
        for m, opt, xs, ys in ((ref, o_ref, x, y), (model, o, mine(x), mine(y))):
            opt.zero_grad()
            losses.append(loss_of(m, xs, ys))
            losses[-1].backward()
            opt.step()
        mean = dist.functional.all_reduce(losses[1].detach(), "mean")
        worst = max(worst, abs(float(mean) - float(losses[0])))
    return max(worst, worst_gap(model, ref))


def frozen_middle() -> nn.Module:
    """A trainable layer, a frozen one, a trainable one: backward goes through the frozen
    unit's weight to reach the first layer."""
    model = net()
    model[2].requires_grad_(False)
    return model


out["frozen_unit_gaps"] = [gap_to_one_process(frozen_middle, lambda m, s=s: FSDP(
    m, sharding_strategy=s, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))) for s in (
    *STRATEGIES, ShardingStrategy.NO_SHARD)]


class TiedPair(nn.Module):
    """Two layers with one weight (as an embedding tied to the output head)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.c, self.b = nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 2)
        self.c.weight = self.a.weight

    def forward(self, x):
        return self.b(ember.tanh(self.c(ember.tanh(self.a(x)))))


def tied() -> nn.Module:
    ember.manual_seed(0)
    return TiedPair().double()


out["tied_gap"] = gap_to_one_process(tied, FSDP)  # one unit holds the shared weight once
with pytest.raises(ValueError, match=r"Linear.weight is shared with FullyShardedDataParallel"
                   r"\(Linear\).*same FSDP unit"):
    FSDP(tied(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))  # a and c in two units

# attributes and indexing reach the wrapped module, as in PyTorch
model = FSDP(net(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
assert model[0] is model.module[0] and model[0].out_features == 5
with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
    model[0].nope  # noqa: B018

# -- errors -------------------------------------------------------------------------------
mixed = nn.Linear(2, 2)
mixed.bias = nn.Parameter(ember.zeros(2, dtype=ember.float64))
with pytest.raises(ValueError, match="uniform dtype.*float32.*float64"):
    FSDP(mixed)
with pytest.raises(TypeError, match="process_group must be a ProcessGroup"):
    FSDP(net(), process_group="world")
alone = dist.new_group([0])
if rank != 0:
    with pytest.raises(dist.DistributedError, match="not a member"):
        FSDP(net(), process_group=alone)
with pytest.raises(NotImplementedError, match="use_orig_params"):
    FSDP(net(), use_orig_params=True)
replicated = FSDP(net(), sharding_strategy=ShardingStrategy.NO_SHARD)  # (no pieces to save)
for kind in (StateDictType.SHARDED_STATE_DICT, StateDictType.LOCAL_STATE_DICT):
    with FSDP.state_dict_type(replicated, kind):
        for call in (replicated.state_dict, lambda: replicated.load_state_dict({})):
            with pytest.raises(RuntimeError, match=f"{kind.name} can only be used when "
                               "parameters are flattened and sharded.*NO_SHARD"):
                call()
with pytest.raises(ember.jit.TraceError, match="FullyShardedDataParallel.*collectives"):
    ember.jit.compile(lambda x: model(x))(ember.ones(2, 3, dtype=ember.float64))
with pytest.raises(ember.errors.DeviceError, match="CPU tensors"):
    FSDP(net(), device_id="cuda:0")
with pytest.raises(NotImplementedError, match="HYBRID_SHARD"):
    FSDP(net(), sharding_strategy=ShardingStrategy.HYBRID_SHARD)

# -- bytes of parameters, gradients and Adam state per rank: FSDP against DDP -------------
def train_bytes(model) -> int:
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    idx = ember.tensor(np.random.default_rng(1).integers(0, 64, (2, 8)))
    nn.functional.cross_entropy(model(idx).reshape(-1, 64), idx.reshape(-1)).backward()
    opt.step()
    state = sum(v.nbytes for s in opt.state.values() for v in s.values()
                if isinstance(v, ember.Tensor))
    return sum(p.nbytes + p.grad.nbytes for p in model.parameters()) + state


def gpt():
    ember.manual_seed(0)
    return ember.models.gpt(vocab_size=64, block_size=8, n_layer=2, n_head=2, d_model=32)


def held_after_forward(strategy: ShardingStrategy) -> int:
    """Bytes a forward leaves allocated (gathered parameters kept for backward, activations)."""
    model = FSDP(gpt(), sharding_strategy=strategy, auto_wrap_policy=ModuleWrapPolicy({Block}))
    idx = ember.tensor(np.zeros((1, 4), np.int64))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    y = model(idx)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    y.sum().backward()
    return held


held_after_forward(ShardingStrategy.FULL_SHARD)  # (first-call allocations out of the way)
out["held_after_forward"] = {s.name: held_after_forward(s) for s in STRATEGIES}

out["bytes"] = {"ddp": train_bytes(dist.DistributedDataParallel(gpt())),
                "fsdp": train_bytes(FSDP(gpt(), auto_wrap_policy=ModuleWrapPolicy({Block})))}
report(out)
sys.stdout.flush()
