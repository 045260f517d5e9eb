"""Rank code: ``fully_shard`` (FSDP2) against one process training the same model on the
global batch (float64, AdamW): nested sharding with and without reshard_after_forward,
gradient accumulation through set_requires_gradient_sync, a transformer layer, mixed
precision, unshard/reshard, state dict round trips (DTensors and full tensors), the errors.
Parameters of odd sizes make uneven pieces (on 4 ranks some are empty)."""

import math
import shutil
import tempfile

import numpy as np
import pytest
from tests.distributed.harness import report
from tests.distributed.ranks.fsdp2_model import (
    Block,
    Net,
    batches,
    gap,
    gathered,
    mine,
    net,
    shard,
    train,
)

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed import checkpoint
from ember.distributed.fsdp import (
    FSDPModule,
    MixedPrecisionPolicy,
    fully_shard,
    get_optimizer_state_dict,
    set_optimizer_state_dict,
)
from ember.distributed.tensor import DTensor, Shard, init_device_mesh
from ember.utils.checkpoint import checkpoint as recomputed

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
out: dict = {}


STEPS = batches(3)
reference = net()
ref_losses = train(reference, STEPS, local=False)
ref_params = gathered(reference)

# -- nested sharding, with and without reshard_after_forward --------------------------------
for reshard in (True, False):
    model = shard(net(), reshard_after_forward=reshard)
    assert isinstance(model, FSDPModule) and isinstance(model.blocks[0], FSDPModule)
    assert isinstance(model, Net) and type(model).__name__ == "FSDPNet"
    losses = train(model, STEPS, local=True)
    out[f"loss_gap_reshard_{reshard}"] = max(abs(a - b) for a, b in zip(losses, ref_losses))
    out[f"param_gap_reshard_{reshard}"] = gap(gathered(model), ref_params)
    p = model.blocks[0].fc1.weight
    assert tuple(p.shape) == (len(range(9)[rank * -(-9 // n):(rank + 1) * -(-9 // n)]), 7)
    assert tuple(p.grad.shape) == tuple(p.shape)  # the gradient of this rank's piece

# -- activation checkpointing inside sharded modules: a block's fc1 path and whole blocks are
# recomputed in backward, with the modules' gathered parameters as in forward
class CheckpointedBlock(Block):
    def forward(self, x):
        h = recomputed(lambda t: ember.tanh(self.fc1(self.ln(t))), x, use_reentrant=False)
        return x + self.fc2(h)


class CheckpointedNet(Net):
    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = recomputed(b, x, use_reentrant=False)
        return self.head(x)


for reshard in (True, False):
    model = net()
    model.__class__ = CheckpointedNet
    for b in model.blocks:
        b.__class__ = CheckpointedBlock
    losses = train(shard(model, reshard_after_forward=reshard), STEPS, local=True)
    out[f"checkpointed_gap_{reshard}"] = max(
        max(abs(a - b) for a, b in zip(losses, ref_losses)), gap(gathered(model), ref_params))

# -- gathers per step: reshard_after_forward frees and gathers again for backward ------------
def counted(group) -> list:
    """Counts the group's all-gathers in the returned list's first item."""
    count, real = [0], group.gather

    def gather():
        count[0] += 1
        return real()
    group.gather = gather
    return count


for reshard in (True, False):
    model = shard(net(), reshard_after_forward=reshard)
    group = model.blocks[0]._fsdp_state.group
    count = counted(group)
    y = model(mine(STEPS[0][0][0]))
    held = group.full is not None
    F.cross_entropy(y, mine(STEPS[0][0][1])).backward()
    out[f"gathers_reshard_{reshard}"] = [count[0], held, group.full is not None]

# -- set_reshard_after_backward(False): the next forward reuses the gathered parameters until
# an optimizer step changes the pieces
model = shard(net(), reshard_after_forward=False)
model.set_reshard_after_backward(False)
count = counted(model.blocks[0]._fsdp_state.group)
opt = ember.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    F.cross_entropy(model(mine(STEPS[0][0][0])), mine(STEPS[0][0][1])).backward()
gathers = [count[0]]
opt.step()
model(mine(STEPS[0][0][0]))
out["kept_gathers"] = [*gathers, count[0]]
with ember.no_grad():  # (an assignment to .data keeps the version counter)
    for p in model.parameters():
        p.data = p.data * 0
out["kept_after_data_assign"] = float(model(mine(STEPS[0][0][0])).abs().max())

# -- a weight tied between two layers of one module ------------------------------------------
def tied_net() -> nn.Module:
    ember.manual_seed(3)
    m = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 5), nn.Linear(5, 3)).double()
    m[2].weight = m[0].weight
    return m


reference, model = tied_net(), fully_shard(tied_net())
assert model[2].weight is model[0].weight
ref_tied = train(reference, STEPS, local=False)
out["tied_loss_gap"] = max(abs(a - b) for a, b in zip(train(model, STEPS, local=True),
                                                      ref_tied))

# -- a frozen block: no reduction, but backward gathers its weights to pass gradients through
def frozen_net() -> nn.Module:
    m = net()
    m.blocks[1].requires_grad_(False)
    return m


def grad_gap(model: nn.Module, reference: nn.Module) -> float:
    """The largest difference between the gathered gradients and the reference's."""
    mesh = model._fsdp_state.mesh
    grads = {k: DTensor.from_local(p.grad, mesh, [Shard(0)],
                                   shape=reference.get_parameter(k).shape).full_tensor()
             for k, p in model.named_parameters() if p.requires_grad}
    return gap({k: g.numpy() for k, g in grads.items()},
               {k: reference.get_parameter(k).grad.numpy() for k in grads})


def backward_both(reference: nn.Module, model: nn.Module) -> None:
    x, y = STEPS[0][0]
    F.cross_entropy(reference(x), y).backward()
    F.cross_entropy(model(mine(x)), mine(y)).backward()


reference, model = frozen_net(), shard(frozen_net())
backward_both(reference, model)
out["frozen_grad_gap"] = grad_gap(model, reference)
out["frozen_freed"] = model.blocks[1]._fsdp_state.group.full is None

# -- clip_grad_norm_ on the pieces: the whole gradients' norm, the same scale on every rank --
for norm_type in (2.0, math.inf):
    reference, model = net(), shard(net())
    backward_both(reference, model)
    ref_norm = nn.utils.clip_grad_norm_(reference.parameters(), 0.05, norm_type)
    norm = nn.utils.clip_grad_norm_(model.parameters(), 0.05, norm_type)
    out[f"clip_gap_{norm_type}"] = max(abs(norm.item() - ref_norm.item()),
                                       grad_gap(model, reference))
# pieces that load_state_dict(assign=True) put in count as pieces too
reference, model = net(), shard(net(seed=14))
model.load_state_dict(shard(net()).state_dict(), assign=True)
backward_both(reference, model)
out["clip_gap_assigned"] = abs(nn.utils.clip_grad_norm_(model.parameters(), 0.05).item()
                               - nn.utils.clip_grad_norm_(reference.parameters(), 0.05).item())

# -- gradient accumulation: no reduce-scatter until the last micro-batch ---------------------
micro = batches(2, micro=2)
reference = net()
ref_acc = train(reference, micro, local=False)
model = shard(net())
acc = train(model, micro, local=True, accumulate=True)
out["accumulate_loss_gap"] = max(abs(a - b) for a, b in zip(acc, ref_acc))
out["accumulate_param_gap"] = gap(gathered(model), gathered(reference))

# -- a parameter forward never uses: its .grad stays None (as in one process), so AdamW's
# weight decay leaves it alone
class WithUnused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Linear(5, 3)
        self.unused = nn.Linear(5, 3)

    def forward(self, x):
        return self.used(x)


def with_unused() -> nn.Module:
    ember.manual_seed(4)
    return WithUnused().double()


reference, model = with_unused(), fully_shard(with_unused())
ref_unused = train(reference, STEPS, local=False)
out["unused_loss_gap"] = max(abs(a - b) for a, b in zip(train(model, STEPS, local=True),
                                                        ref_unused))
out["unused_param_gap"] = gap(gathered(model), gathered(reference))
out["unused_grad_none"] = model.unused.weight.grad is None and model.used.weight.grad is not None

# -- forward pre-hooks of a sharded module run with its gathered parameters (PyTorch prepends
# its unshard hook): weight_norm recomputes the weight from them
def normed(seed: int = 0) -> nn.Module:
    ember.manual_seed(seed)
    return nn.Sequential(nn.utils.weight_norm(nn.Linear(5, 5)), nn.Tanh(),
                         nn.Linear(5, 3)).double()


reference, model = normed(), normed()
fully_shard(model[0])
seen = []
model[0].register_forward_pre_hook(lambda mod, args: seen.append(list(mod.weight_v.shape)))
ref_normed = train(reference, STEPS, local=False)
out["weight_norm_loss_gap"] = max(abs(a - b) for a, b in zip(
    train(fully_shard(model), STEPS, local=True), ref_normed))
out["pre_hook_shapes"] = seen[0]

# -- a transformer layer (attention with in_proj_weight, layer norms) ------------------------
def layer(seed: int = 0) -> nn.Module:
    ember.manual_seed(seed)
    return nn.TransformerEncoderLayer(6, 2, dim_feedforward=10, dropout=0.0,
                                      batch_first=True).double()


g = np.random.default_rng(2)
xs = [ember.tensor(g.standard_normal((4, 3, 6))) for _ in range(2)]
ref_layer, fsdp_layer = layer(), fully_shard(layer())
for who, m in (("ref", ref_layer), ("fsdp", fsdp_layer)):
    opt = ember.optim.AdamW(m.parameters(), lr=0.05)
    for x in xs:
        opt.zero_grad()
        (m(x if who == "ref" else mine(x)) ** 2).mean().backward()
        opt.step()
out["transformer_param_gap"] = gap(gathered(fsdp_layer), gathered(ref_layer))

# -- mixed precision: bfloat16 compute, float32 reduction, float32 pieces --------------------
mp = MixedPrecisionPolicy(param_dtype=ember.bfloat16, reduce_dtype=ember.float32)
data32 = batches(3, dtype=ember.float32)
reference = net(dtype=ember.float32)
ref32 = train(reference, data32, local=False, sgd=True)
model = shard(net(dtype=ember.float32), mp_policy=mp)
assert model(mine(data32[0][0][0])).dtype == ember.bfloat16
mixed = train(model, data32, local=True, sgd=True)
out["mixed_loss_gap"] = max(abs(a - b) for a, b in zip(mixed, ref32))
out["mixed_param_gap"] = gap(gathered(model), gathered(reference))
out["mixed_grad_dtype"] = str(model.inp.weight.grad.dtype)

# -- unshard / reshard ----------------------------------------------------------------------
model = shard(net())
piece = model.blocks[1].fc2.weight
model.blocks[1].unshard()
out["unsharded_shape"] = list(model.blocks[1].fc2.weight.shape)
model.blocks[1].reshard()
assert model.blocks[1].fc2.weight is piece

# -- state dicts: DTensors of the global shapes; loading DTensors or full tensors ------------
trained = shard(net())
train(trained, STEPS, local=True)
sd = trained.state_dict()
assert list(sd) == list(net().state_dict())  # the original names, in order
assert all(isinstance(v, DTensor) and v.placements == (Shard(0),) for v in sd.values())
assert tuple(sd["blocks.0.fc1.weight"].shape) == (9, 7)
fresh = shard(net(seed=5))
fresh.load_state_dict(sd)
out["dtensor_round_trip"] = gap(gathered(fresh), gathered(trained))
full = {k: v.full_tensor() for k, v in sd.items()}
fresh = shard(net(seed=6))
fresh.load_state_dict(full)
out["full_round_trip"] = gap(gathered(fresh), gathered(trained))
plain = net(seed=7)
plain.load_state_dict(full)
out["plain_round_trip"] = gap(gathered(plain), gathered(trained))


def blocks_sharded(seed: int) -> nn.Module:
    """Only the blocks sharded: the root is a plain module."""
    m = net(seed=seed)
    for b in m.blocks:
        fully_shard(b)
    return m


# a plain root loads its sharded blocks' DTensors (the blocks' load pre-hooks take the pieces)
partly = blocks_sharded(10)
partly.load_state_dict({k: v if k.startswith("blocks.") else v.full_tensor()
                        for k, v in sd.items()})
out["plain_root_round_trip"] = gap(gathered(partly), gathered(trained))
# a distributed checkpoint of the DTensors, loaded into other pieces and into a plain model
where = [tempfile.mkdtemp() if rank == 0 else None]
dist.broadcast_object_list(where, src=0)
path = checkpoint.save(where[0], {"model": sd}, step=1)
fresh_ckpt = shard(net(seed=8))
checkpoint.load(path, {"model": fresh_ckpt.state_dict()})
plain_ckpt = net(seed=9)
checkpoint.load(path, {"model": plain_ckpt.state_dict()})
out["checkpoint_round_trip"] = max(gap(gathered(fresh_ckpt), gathered(trained)),
                                   gap(gathered(plain_ckpt), gathered(trained)))


# the optimizer's state by parameter name (Shard(0) DTensors) through a checkpoint, and as
# full tensors through set_optimizer_state_dict: training goes on as without the round trip
def adamw(model: nn.Module) -> ember.optim.Optimizer:
    return ember.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)


def go_on(model: nn.Module, opt: ember.optim.Optimizer, data: list) -> list:
    losses = []
    for step in data:
        for x, y in step:
            opt.zero_grad()
            loss = F.cross_entropy(model(mine(x)), mine(y))
            loss.backward()
            opt.step()
            losses.append(dist.functional.all_reduce(loss.detach(), "mean").item())
    return losses


first = shard(net())
first_opt = adamw(first)
go_on(first, first_opt, STEPS[:2])
osd = get_optimizer_state_dict(first, first_opt)
moment = osd["state"]["blocks.0.fc1.weight"]["exp_avg"]
assert isinstance(moment, DTensor) and tuple(moment.shape) == (9, 7)
path = checkpoint.save(where[0], {"model": first.state_dict(), "optim": osd["state"]}, step=2)
resumed = shard(net(seed=12))
resumed_opt = adamw(resumed)
checkpoint.load(path, {"model": resumed.state_dict(),
                       "optim": get_optimizer_state_dict(resumed, resumed_opt)["state"]})
given = shard(net(seed=13))
given.load_state_dict(first.state_dict())
given_opt = adamw(given)
set_optimizer_state_dict(given, given_opt, {
    "state": {name: {k: v.full_tensor() if isinstance(v, DTensor) else v for k, v in s.items()}
              for name, s in osd["state"].items()},
    "param_groups": osd["param_groups"]})
expected = go_on(first, first_opt, STEPS[2:])
out["optim_resume_gaps"] = [
    max(max(abs(a - b) for a, b in zip(go_on(m, o, STEPS[2:]), expected)),
        gap(gathered(m), gathered(first)))
    for m, o in ((resumed, resumed_opt), (given, given_opt))]
dist.barrier()
if rank == 0:
    shutil.rmtree(where[0])
# a loaded model trains on (the gathered buffer is refreshed from the loaded pieces)
out["after_load_losses_equal"] = train(fresh, STEPS[:1], local=True) == \
    train(trained, STEPS[:1], local=True)

# -- errors ---------------------------------------------------------------------------------
with pytest.raises(ember.errors.CheckpointError, match="Shard"):
    checkpoint.save(tempfile.gettempdir(), {"w": sd["head.weight"].redistribute(
        placements=[Shard(1)])}, step=0)
with pytest.raises(ValueError, match="already sharded"):
    fully_shard(model)
late = net()
fully_shard(late)
with pytest.raises(ValueError, match="bottom-up"):
    fully_shard(late.blocks[0])
with pytest.raises(ValueError, match="1-d"):
    fully_shard(net(), mesh=init_device_mesh("cpu", (1, 1, n)))
with pytest.raises(TypeError, match="DeviceMesh"):
    fully_shard(net(), mesh="cpu")
scalar = nn.Linear(2, 2)
scalar.scale = nn.Parameter(ember.tensor(1.0))
with pytest.raises(ValueError, match="uninitialized"):
    fully_shard(nn.LazyLinear(3))
with pytest.raises(ValueError, match="0-d"):
    fully_shard(scalar)
two = nn.Linear(2, 2)
two.bias = nn.Parameter(ember.zeros(2, dtype=ember.float64))
with pytest.raises(ValueError, match="dtype"):
    fully_shard(two)
with pytest.raises(RuntimeError, match="shape"):
    shard(net()).load_state_dict({**full, "head.weight": ember.zeros(4, 7)})
with pytest.raises(RuntimeError, match="not this rank's piece"):
    ember.func.functional_call(shard(net()), {"head.weight": ember.zeros(3, 7)},
                               (mine(STEPS[0][0][0]),))

report(out)
