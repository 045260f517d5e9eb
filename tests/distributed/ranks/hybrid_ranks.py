"""Rank code, 4 ranks as a 2 × 2 grid: data parallel × tensor parallel (a GPT split over
ranks {0, 1} and {2, 3}, replicas averaged over {0, 2} and {1, 3} by DistributedDataParallel),
then data parallel × pipeline parallel (a Sequential in two stages, stage gradients averaged
over the replicas). Both train against one process on the whole batch."""

import copy

import numpy as np
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed.pipeline import Pipeline
from ember.distributed.tensor_parallel import full_parameters, parallelize_gpt
from ember.models.gpt import gpt

dist.init_process_group("mpi")
rank = dist.get_rank()
assert dist.get_world_size() == 4, "the grid is 2 × 2"
# every rank makes every group, in the same order; each returns this rank's own
inner = [dist.new_group(r) for r in ([0, 1], [2, 3])][rank // 2]  # tensor or pipeline
replicas = [dist.new_group(r) for r in ([0, 2], [1, 3])][rank % 2]  # data parallel
replica = rank // 2  # which half of the batch this rank's model sees
TOL = dict(rtol=1e-10, atol=1e-12)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)


# data × tensor parallel
ember.manual_seed(0)
ref = gpt(vocab_size=16, block_size=8, n_layer=2, n_head=2, d_model=16).double()
model = nn.parallel.DistributedDataParallel(
    parallelize_gpt(copy.deepcopy(ref), inner), process_group=replicas
)
idx, target = ember.randint(0, 16, (4, 8)), ember.randint(0, 16, (4, 8))
mine = slice(2 * replica, 2 * replica + 2)
opt_ref = ember.optim.AdamW(ref.parameters(), lr=1e-2)
opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
for _ in range(3):
    opt_ref.zero_grad()
    want = F.cross_entropy(ref(idx).view(-1, 16), target.view(-1))
    want.backward()
    opt_ref.step()
    opt.zero_grad()
    loss = F.cross_entropy(model(idx[mine]).view(-1, 16), target[mine].reshape(-1))
    loss.backward()
    opt.step()
    dist.all_reduce(loss := loss.detach(), dist.ReduceOp.MEAN, replicas)
    close(loss.item(), want.item())
full = full_parameters(model.module)
for name, p in ref.named_parameters():
    close(full[name].numpy(), p.detach().numpy())
report("dp x tp ok")

# data × pipeline parallel
ember.manual_seed(1)
seq = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh(), nn.Linear(12, 2))
seq = seq.double()
ref = copy.deepcopy(seq)
pipe = Pipeline(seq, chunks=2, group=inner, data_parallel_group=replicas)
x, t = ember.randn(8, 6, dtype=ember.float64), ember.randn(8, 2, dtype=ember.float64)
mine = slice(4 * replica, 4 * replica + 4)
want = F.mse_loss(ref(x), t)
want.backward()
loss = pipe.train_step(
    x[mine] if pipe.is_first else None, t[mine] if pipe.is_last else None, F.mse_loss
)
close(loss, want.item())
grads = {k: p.grad for k, p in ref.named_parameters()}
for name, p in pipe.module.named_parameters():
    close(p.grad.numpy(), grads[name].numpy())
report("dp x pp ok")
