"""Rank code: nn.SyncBatchNorm on each rank's share of a batch against one process's
BatchNorm (itself compared with torch's in tests/nn) on the whole batch: outputs, running
statistics, input gradients (of the sum of every rank's loss) and the all-reduced parameter
gradients."""

import numpy as np
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn as nn

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
sizes = [3 + r for r in range(n)]  # unequal shares: the counts must be summed, not assumed
x = rng.standard_normal((sum(sizes), 3, 4, 2)) * 3 + 5
seed = rng.standard_normal(x.shape)
weight, bias = rng.standard_normal(3), rng.standard_normal(3)
start = sum(sizes[:rank])
mine = slice(start, start + sizes[rank])

reference = nn.BatchNorm2d(3, momentum=None).to(ember.float64)  # one process, whole batch
state = {"weight": weight, "bias": bias, "running_mean": np.zeros(3), "running_var": np.ones(3),
         "num_batches_tracked": np.array(0)}
reference.load_state_dict(state)
rx = ember.tensor(x, requires_grad=True)
for _ in range(2):  # two steps: the cumulative running average too
    ref_out = reference(rx)
(ref_out * ember.tensor(seed)).sum().backward()

model = nn.SyncBatchNorm.convert_sync_batchnorm(
    nn.Sequential(nn.BatchNorm2d(3, momentum=None))).to(ember.float64)
bn = model[0]
assert type(bn) is nn.SyncBatchNorm
bn.load_state_dict(state)
ex = ember.tensor(x[mine], requires_grad=True)
for _ in range(2):
    e_out = model(ex)
(e_out * ember.tensor(seed[mine])).sum().backward()

np.testing.assert_allclose(e_out.detach().numpy(), ref_out.detach().numpy()[mine], rtol=1e-10)
np.testing.assert_allclose(ex.grad.numpy(), rx.grad.numpy()[mine], rtol=1e-8, atol=1e-10)
for name in ("running_mean", "running_var", "num_batches_tracked"):
    np.testing.assert_allclose(getattr(bn, name).numpy(), getattr(reference, name).numpy(),
                               rtol=1e-10, err_msg=name)
for name in ("weight", "bias"):  # what DDP's all-reduce of the gradients gives
    total = getattr(bn, name).grad.clone()
    dist.all_reduce(total)
    np.testing.assert_allclose(total.numpy(), getattr(reference, name).grad.numpy(),
                               rtol=1e-8, err_msg=name)
bn.eval()  # evaluation: the running statistics, no communication
np.testing.assert_allclose(model(ex).detach().numpy(),
                           reference.eval()(rx).detach().numpy()[mine], rtol=1e-10)
report("ok")
