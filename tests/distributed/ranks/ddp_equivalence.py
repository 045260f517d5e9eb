"""Rank code: DDP on mlp and cnn against one process with the same global batch — losses and
parameters after every step, with several bucket sizes, and gradient accumulation under
no_sync(); DDP around a compiled forward against eager DDP. Every rank also runs the
single-process reference itself."""

import sys

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import models

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
B, STEPS = 8, 3
MODELS = {"mlp": lambda: models.mlp(hidden=32), "cnn": models.cnn}
OPTS = {
    "mlp": lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9),
    "cnn": lambda ps: ember.optim.Adam(ps, lr=1e-3),
}


def batches(seed: int, count: int):
    g = np.random.default_rng(seed)
    return [
        (g.standard_normal((B, 1, 28, 28)).astype(np.float32), g.integers(0, 10, B))
        for _ in range(count)
    ]


def mine(a: np.ndarray) -> ember.Tensor:
    return ember.tensor(np.split(a, n)[rank])


def rel(a: ember.Tensor, b: ember.Tensor) -> float:
    """Relative error ||a - b|| / ||b||."""
    a, b = a.detach().numpy(), b.detach().numpy()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-12))


worst = 0.0
for name in [a for a in sys.argv[1:] if a in MODELS]:
    for cap in (25, 0.002):  # one bucket; many small buckets
        ember.manual_seed(0)
        ref = MODELS[name]()
        ember.manual_seed(rank)  # different on every rank: DDP must broadcast rank 0's
        ddp = dist.DistributedDataParallel(MODELS[name](), bucket_cap_mb=cap)
        if cap < 1:
            assert len(ddp._buckets) > 2
        opt_ref, opt = OPTS[name](ref.parameters()), OPTS[name](ddp.parameters())
        for x, y in batches(7, STEPS):
            loss_ref = F.cross_entropy(ref(ember.tensor(x)), ember.tensor(y))
            opt_ref.zero_grad()
            loss_ref.backward()
            opt_ref.step()
            loss = F.cross_entropy(ddp(mine(x)), mine(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            mean_loss = dist.functional.all_reduce(loss.detach(), "mean")
            worst = max(worst, rel(mean_loss, loss_ref))
            for p, q in zip(ddp.module.parameters(), ref.parameters()):
                worst = max(worst, rel(p, q))

    # gradient accumulation: two micro-batches, the first under no_sync
    ember.manual_seed(0)
    ref = MODELS[name]()
    ember.manual_seed(rank)
    ddp = dist.DistributedDataParallel(MODELS[name]())
    (x1, y1), (x2, y2) = batches(11, 2)
    for x, y in ((x1, y1), (x2, y2)):
        F.cross_entropy(ref(ember.tensor(x)), ember.tensor(y)).backward()
    with ddp.no_sync():
        F.cross_entropy(ddp(mine(x1)), mine(y1)).backward()
    local_only = [p.grad.numpy().copy() for p in ddp.parameters()]
    F.cross_entropy(ddp(mine(x2)), mine(y2)).backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        worst = max(worst, rel(p.grad, q.grad))
    # under no_sync the gradients were this rank's own (they differ between ranks)
    everyone = [None] * n
    dist.all_gather_object(everyone, local_only[0])
    assert not np.allclose(everyone[0], everyone[-1])

if "unused" in sys.argv:
    # a parameter the output skips: an error naming it at the end of backward (before an
    # optimizer step could use gradients no all-reduce filled), unless asked
    ember.manual_seed(0)
    net = ember.nn.ModuleDict({"used": ember.nn.Linear(3, 2), "skipped": ember.nn.Linear(3, 2)})

    class Partial(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net["used"](x)

    model = dist.DistributedDataParallel(Partial())
    with pytest.raises(dist.DistributedError, match=r"no gradient to parameters \['net.skipped"):
        model(ember.ones(1, 3)).sum().backward()
    assert net["used"].weight.grad is None  # not left holding memory nothing filled
    model = dist.DistributedDataParallel(Partial(), find_unused_parameters=True)
    with ember.no_grad():  # evaluation: no backward follows, and none is waited for
        model(ember.ones(1, 3))
    net.zero_grad()
    model(ember.ones(1, 3) * (rank + 1)).sum().backward()
    assert float(net["used"].weight.grad.sum()) == 6 * (n + 1) / 2  # mean of 6 (rank + 1)
    assert net["skipped"].weight.grad is None  # unused on every rank: untouched, as in PyTorch

    class Branchy(ember.nn.Module):  # "skipped" used on rank 0 only
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, both):
            return self.net["used"](x) + (self.net["skipped"](x) if both else 0)

    model = dist.DistributedDataParallel(Branchy(), find_unused_parameters=True)
    net.zero_grad()
    model(ember.ones(1, 3), rank == 0).sum().backward()
    assert float(net["skipped"].weight.grad.sum()) == 6 / n  # rank 0's 6, the others' zeros

    # two forwards, one backward (e.g. two views of a batch); a forward no backward follows
    model = dist.DistributedDataParallel(ember.nn.Linear(3, 2))
    x = ember.ones(1, 3) * (rank + 1)
    (model(x).sum() + model(2 * x).sum()).backward()
    assert float(model.module.weight.grad.sum()) == 18 * (n + 1) / 2
    model.zero_grad()
    model(x)
    model(x).sum().backward()
    assert float(model.module.weight.grad.sum()) == 6 * (n + 1) / 2

if "compiled" in sys.argv:
    # the model's forward compiled inside DDP: the same parameters as eager DDP; compiling the
    # DDP module itself is refused (its Python arms the all-reduce on every call)
    def trained(compiled: bool) -> list:
        ember.manual_seed(0)
        model = MODELS["mlp"]()
        if compiled:
            model.forward = ember.jit.compile(model.forward)
        ddp = dist.DistributedDataParallel(model)
        opt = OPTS["mlp"](ddp.parameters())
        for x, y in batches(5, STEPS):
            opt.zero_grad()
            F.cross_entropy(ddp(mine(x)), mine(y)).backward()
            opt.step()
        return list(model.parameters())

    for p, q in zip(trained(True), trained(False)):
        worst = max(worst, rel(p, q))
    with pytest.raises(ember.jit.TraceError, match="model.forward = ember.jit.compile"):
        ember.jit.compile(dist.DistributedDataParallel(MODELS["mlp"]()))(mine(batches(5, 1)[0][0]))

report(worst)
