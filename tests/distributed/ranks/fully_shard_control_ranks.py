"""Rank code (4 ranks): ``fully_shard`` initialisation after sharding (each rank its rows of the
unsharded draw), a parent's forward reading a sharded child's weight (a tied head), explicit
forward/backward prefetching and ``unshard(async_op=True)`` (the all-gathers' order, logged),
``reshard_after_forward`` ints, and HSDP on a 2 x 2 mesh against one process (float64) and through
a checkpoint."""

import math
import pickle
import shutil
import tempfile

import numpy as np
from tests.distributed.harness import report
from tests.distributed.ranks.fsdp2_model import batches, gap, gathered, mine, net, shard, train

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed import checkpoint
from ember.distributed.fsdp import fully_shard, get_optimizer_state_dict
from ember.distributed.tensor import init_device_mesh

dist.init_process_group("mpi")
n = dist.get_world_size()
out: dict = {}


# -- initialisation after sharding: the same values as the unsharded parameters' ---------------
def plain(model: nn.Module) -> dict:
    return {k: v.numpy() for k, v in model.state_dict().items()}


def init_gap(build, fill) -> float:
    """``fill`` on a sharded ``build()`` against ``fill`` on the plain one, same seeds; the
    generator's next draw too (it advanced alike)."""
    def filled(sharded: bool) -> tuple:
        ember.manual_seed(5)
        model = fully_shard(build()) if sharded else build()
        ember.manual_seed(6)
        fill(model)
        return model, float(ember.rand(()).item())
    (reference, next_plain), (model, next_sharded) = filled(False), filled(True)
    return max(gap(gathered(model), plain(reference)), abs(next_plain - next_sharded))


def linear():
    return nn.Linear(7, 9).double()


def on_weight(fill):
    return lambda m: fill(m.weight)


FILLS = {
    "normal_": on_weight(lambda w: nn.init.normal_(w, 0.5, 2.0)),
    "uniform_": on_weight(lambda w: nn.init.uniform_(w, -1.0, 3.0)),
    "kaiming_uniform_fan_out": on_weight(lambda w: nn.init.kaiming_uniform_(w, mode="fan_out")),
    "kaiming_normal_": on_weight(nn.init.kaiming_normal_),
    "trunc_normal_": on_weight(lambda w: nn.init.trunc_normal_(w, std=0.02)),
    "xavier_uniform_": on_weight(nn.init.xavier_uniform_),
    "xavier_normal_": on_weight(nn.init.xavier_normal_),
    "orthogonal_": on_weight(nn.init.orthogonal_),
    "eye_": on_weight(nn.init.eye_),
}
out["init_gaps"] = {name: init_gap(linear, fill) for name, fill in FILLS.items()}
for name, build in {"Linear": lambda: nn.Linear(7, 9), "Embedding": lambda: nn.Embedding(11, 6),
                    "Embedding_padding": lambda: nn.Embedding(11, 6, padding_idx=4),
                    "Conv2d": lambda: nn.Conv2d(3, 5, 3)}.items():
    out["init_gaps"][name] = init_gap(build, lambda m: m.reset_parameters())


def reset_all(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    return model


# a model built on the meta device, sharded, given memory and initialised, then trained
with ember.device("meta"):
    model = shard(net())
assert model.blocks[0].fc1.weight.is_meta
try:
    model(ember.zeros(2, 5, dtype=ember.float64))
except RuntimeError as e:
    out["meta_forward_error"] = "to_empty" in str(e)
model.to_empty(device="cpu")
ember.manual_seed(8)
reset_all(model)
reference = net()
ember.manual_seed(8)
reset_all(reference)
out["meta_init_gap"] = gap(gathered(model), plain(reference))
STEPS = batches(2)
out["meta_train_gap"] = max(abs(a - b) for a, b in zip(train(model, STEPS, local=True),
                                                        train(reference, STEPS, local=False)))


# -- a parent's forward reading a sharded child's weight: a head tied to the embedding --------
class TiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, 6)  # (11 rows: pieces of 3, 3, 3, 2)
        self.body = nn.Linear(6, 6)

    def forward(self, idx):
        h = ember.tanh(self.body(self.embed(idx)))
        return h @ self.embed.weight.T


def tied_lm() -> nn.Module:
    ember.manual_seed(4)
    return TiedLM().double()


def lm_steps(model: nn.Module, local: bool) -> list:
    g = np.random.default_rng(2)
    opt = ember.optim.AdamW(model.parameters(), lr=0.05)
    losses = []
    for _ in range(3):
        idx, target = (ember.tensor(g.integers(0, 11, 8)) for _ in range(2))
        if local:
            idx, target = mine(idx), mine(target)
        opt.zero_grad()
        loss = F.cross_entropy(model(idx), target)
        loss.backward()
        total = dist.functional.all_reduce(loss.detach(), "mean") if local else loss
        losses.append(float(total.item()))
        opt.step()
    return losses


reference = tied_lm()
ref_losses = lm_steps(reference, local=False)
model = tied_lm()
fully_shard(model.embed, reshard_after_forward=False)  # (kept for the parent's head)
fully_shard(model.body)
fully_shard(model)
out["tied_outside_shape"] = list(model.embed.weight.shape)  # this rank's piece
losses = lm_steps(model, local=True)
out["tied_child_loss_gap"] = max(abs(a - b) for a, b in zip(losses, ref_losses))
out["tied_child_param_gap"] = gap(gathered(model), plain(reference))
model = tied_lm()
fully_shard(model.embed)  # (resharded after its forward: the head would read the piece)
fully_shard(model)
try:
    model(ember.tensor([1, 2]))
except RuntimeError as e:
    out["tied_resharded_error"] = "reshard_after_forward=False" in str(e)
# the same for a parameter of a plain submodule of a sharded module (a block's fc1)
model = shard(net())
model.head.register_forward_pre_hook(lambda *_: model.blocks[0].fc1.weight)
try:
    model(mine(STEPS[0][0][0]))
except RuntimeError as e:
    out["nested_resharded_error"] = "'fc1.weight'" in str(e)
out["guarded_pickles_plain"] = type(pickle.loads(pickle.dumps(model.blocks[0].fc1))) is nn.Linear


# -- prefetching: the all-gathers' order, logged where every one starts, ends and reduces ----
def logged(model: nn.Module) -> list:
    log: list = []
    for name, m in (("root", model), ("b0", model.blocks[0]), ("b1", model.blocks[1])):
        g = m._fsdp_state.group

        def start_gather(wait=False, g=g, name=name, real=g.start_gather):
            if g.in_flight is None:
                log.append(f"{name} start")
            real(wait)

        def gather(name=name, real=g.gather):
            full = real()
            log.append(f"{name} done")
            return full

        def reduce_grads(*args, name=name, real=g.reduce_grads):
            log.append(f"{name} reduces")
            return real(*args)
        g.start_gather, g.gather, g.reduce_grads = start_gather, gather, reduce_grads
    for name, b in (("b0", model.blocks[0]), ("b1", model.blocks[1])):
        b.fc1.register_forward_hook(lambda *_, name=name: log.append(f"{name} computes"))
    return log


def prefetching(model: nn.Module) -> nn.Module:
    model.blocks[0].set_modules_to_forward_prefetch([model.blocks[1]])
    model.blocks[1].set_modules_to_backward_prefetch([model.blocks[0]])
    return model


x, y = STEPS[0][0]
for prefetch in (False, True):
    model = shard(net())
    log = logged(prefetching(model) if prefetch else model)
    loss = F.cross_entropy(model(mine(x)), mine(y))
    log.append("backward")
    loss.backward()
    out[f"gather_log_prefetch_{prefetch}"] = log
model = prefetching(shard(net()))
model.set_is_last_backward(True)
out["prefetch_train_gap"] = max(abs(a - b) for a, b in zip(
    train(model, STEPS, local=True), train(net(), STEPS, local=False)))

# a root without parameters of its own prefetches too (the first block's gather starts
# in the background, before the block's forward)
model = fully_shard(nn.Sequential(*(fully_shard(b) for b in net().blocks)))
model.set_modules_to_forward_prefetch([model[0]])
g, waits = model[0]._fsdp_state.group, []
g.start_gather = lambda wait=False, real=g.start_gather: (waits.append(wait), real(wait))
with ember.no_grad():
    model(ember.ones(2, 7, dtype=ember.float64))
out["paramless_root_prefetch_waits"] = waits

# set_is_last_backward: a backward prefetch that no backward used (a module outside this
# forward) is finished and freed at the end of the last backward only
for last in (True, False):
    model, unused = shard(net()), fully_shard(nn.Linear(3, 5).double())
    model.blocks[1].set_modules_to_backward_prefetch([unused])
    model.set_is_last_backward(last)
    F.cross_entropy(model(mine(x)), mine(y)).backward()
    g = unused._fsdp_state.group
    out[f"last_backward_{last}"] = [g.in_flight is not None, g.full is not None]
    unused.unshard()  # (finishes a kept one)

# unshard(async_op=True): the gather starts, wait() shows the full parameters, forward reuses
model = shard(net())
log = logged(model)
handle = model.blocks[0].unshard(async_op=True)
log.append("returned")
handle.wait()
out["async_shape"] = list(model.blocks[0].fc1.weight.shape)
model(mine(x))
out["async_log"] = log

# a gather started and not used before the pieces change (an optimizer step between): the
# module's next forward gathers the new values, not the prefetched ones
model = shard(net())
model.blocks[0].set_modules_to_forward_prefetch([model.blocks[1]])
reference = net()
with ember.no_grad():
    model.blocks[0](ember.ones(2, 7, dtype=ember.float64))  # (starts block 1's gather)
    for m in (model, reference):
        for p in m.blocks[1].parameters():
            p.add_(1.0)  # (on a piece: its rows of the parameter + 1)
    prefetched = (model(mine(x)) - reference(mine(x))).numpy()
    handle = model.blocks[1].unshard(async_op=True)
    for m in (model, reference):
        m.blocks[1].fc1.weight.mul_(2.0)
    handle.wait()
    waited = model.blocks[1].fc1.weight.numpy()
    model.blocks[1].reshard()
out["stale_prefetch_gaps"] = [
    float(np.abs(prefetched).max()),
    float(np.abs(waited - reference.blocks[1].fc1.weight.detach().numpy()).max())]

# reshard_after_forward as an int: after forward, pieces over 2 ranks, which backward gathers
model = shard(net(), reshard_after_forward=2)
worlds = []
for b in model.blocks:
    g = b._fsdp_state.group

    def start_gather(wait=False, post=False, g=g, real=g.start_gather):
        real(wait, post)
        worlds.append(g.in_flight[3].world)
    g.start_gather = start_gather
out["int_reshard_gap"] = max(abs(a - b) for a, b in zip(
    train(model, STEPS, local=True), train(net(), STEPS, local=False)))
out["int_reshard_gather_ranks"] = worlds[:4]  # forward: blocks 0, 1; backward: 1, 0
out["int_reshard"] = [fully_shard(nn.Linear(2, 4), reshard_after_forward=k)
                      ._fsdp_state.reshard_after_forward for k in (1, n)]
try:
    fully_shard(nn.Linear(2, 4), reshard_after_forward=3)
except ValueError as e:
    out["int_reshard_error"] = "dividing" in str(e)


# -- HSDP: replicate over dim 0, shard over dim 1 of a 2 x 2 mesh -----------------------------
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
STEPS = batches(3)
reference = net()
ref_losses = train(reference, STEPS, local=False)
model = shard(net(), mesh=mesh)
out["hsdp_piece_rows"] = model.blocks[0].fc1.weight.shape[0]  # 9 rows over 2: 5 or 4
losses = train(model, STEPS, local=True)
out["hsdp_loss_gap"] = max(abs(a - b) for a, b in zip(losses, ref_losses))
out["hsdp_param_gap"] = gap(gathered(model), plain(reference))
F.cross_entropy(model(mine(STEPS[0][0][0])), mine(STEPS[0][0][1])).backward()
F.cross_entropy(reference(STEPS[0][0][0]), STEPS[0][0][1]).backward()
out["hsdp_clip_gap"] = abs(float(nn.utils.clip_grad_norm_(model.parameters(), math.inf))
                           - float(nn.utils.clip_grad_norm_(reference.parameters(), math.inf)))


# an HSDP checkpoint (the model and AdamW's state) loaded into a new 2 x 2 model and into a
# 1-d one: both train on as the saved model does
def adamw(model: nn.Module) -> ember.optim.Optimizer:
    return ember.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)


def trained(model: nn.Module, opt: ember.optim.Optimizer, data: list) -> dict:
    for (x, y), in data:
        opt.zero_grad()
        F.cross_entropy(model(mine(x)), mine(y)).backward()
        opt.step()
    return gathered(model)


where = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
dist.broadcast_object_list(where, src=0)
model = shard(net(), mesh=mesh)
opt = adamw(model)
trained(model, opt, STEPS[:1])
path = checkpoint.save(where[0], {"model": model.state_dict(),
                                  "optim": get_optimizer_state_dict(model, opt)["state"]}, 1)
resumed = []
for other in (shard(net(seed=3), mesh=mesh), shard(net(seed=3))):
    other_opt = adamw(other)
    checkpoint.load(path, {"model": other.state_dict(),
                           "optim": get_optimizer_state_dict(other, other_opt)["state"]})
    resumed.append((other, other_opt))
expected = trained(model, opt, STEPS[1:])
out["hsdp_checkpoint_gaps"] = [gap(trained(m, o, STEPS[1:]), expected) for m, o in resumed]
dist.barrier()
if dist.get_rank() == 0:
    shutil.rmtree(where[0])
report(out)
