"""DistributedDataParallel.join() (it was an AttributeError): with uneven inputs a rank that
runs out of batches shadows the others' all-reduces, gradients are divided by the initial
world size (or by the active ranks), every rank ends with the last finisher's parameters,
and throw_on_early_termination raises on every rank (on none with even inputs); parameters
and buffers, each against one process that averages the same gradients by hand (sweep58g,
mend58g)."""

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import numpy as np
import ember
import ember.distributed as dist
from ember import nn
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()


def batches(r, steps):
    g = np.random.default_rng(10 + r)
    return [(ember.tensor(g.standard_normal((3, 4))), ember.tensor(g.standard_normal((3, 2))))
            for _ in range(steps[r])]


def make():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2)).double()


def reference(divide_initial, steps):
    # the state dict: each step starts from the highest active rank's buffers (DDP broadcasts
    # them from it before every forward), its gradient is the active ranks' sum
    model = make()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    data = [batches(r, steps) for r in range(n)]
    for step in range(max(steps)):
        active = [r for r in range(n) if step < steps[r]]
        start = [b.clone() for b in model.buffers()]
        grads = []
        for r in active:
            for b, s in zip(model.buffers(), start):
                b.copy_(s)
            model.zero_grad()
            x, y = data[r][step]
            ((model(x) - y) ** 2).mean().backward()
            grads.append([p.grad.clone() for p in model.parameters()])
        div = n if divide_initial else len(active)
        for p, *gs in zip(model.parameters(), *grads):
            p.grad = sum(gs) / div
        opt.step()
    return model.state_dict()


def run(divide_initial, find_unused, steps=(2, 4), throw=False):
    model = nn.parallel.DistributedDataParallel(make(), find_unused_parameters=find_unused)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with model.join(divide_by_initial_world_size=divide_initial,
                    throw_on_early_termination=throw):
        for x, y in batches(rank, steps):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    got, want = model.module.state_dict(), reference(divide_initial, steps)
    return got.keys() == want.keys() and all(
        np.allclose(got[k].numpy(), want[k].numpy(), atol=1e-12) for k in want)


report([run(True, False), run(False, False), run(True, True)])
report(run(True, False, (3, 3), throw=True))  # even inputs: no error, buffers synced
model = nn.parallel.DistributedDataParallel(make())
try:
    with model.join(throw_on_early_termination=True):
        for x, y in batches(rank, (2, 4)):
            ((model(x) - y) ** 2).mean().backward()
    report("no error")
except RuntimeError as exc:
    report("exhausted" in str(exc))
with model.join(enable=False):
    x, y = batches(rank, (2, 4))[0]
    ((model(x) - y) ** 2).mean().backward()
report("done")
"""


def test_join_uneven_inputs():
    got = reports(run_ranks(CODE, 2, timeout=120))
    want = [[True, True, True], True, True, "done"]
    assert got == {0: want, 1: want}
