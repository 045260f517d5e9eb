"""ZeroRedundancyOptimizer: a parameter group that no rank has a gradient for is skipped whole
by a step (no state, no step count), as PyTorch's optimizers skip such parameters; when it
gets gradients later, its trajectory is plain DDP + the optimizer's. The local optimizer is
made over every group at once, so Adagrad's construction-time state covers each group."""

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import numpy as np
from tests.distributed.harness import report
import ember, ember.distributed as dist
from ember.distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group("mpi")
rank = dist.get_rank()


class Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        ember.manual_seed(0)
        self.a, self.u = ember.nn.Linear(3, 4), ember.nn.Linear(4, 4)

    def forward(self, x, late):
        h = ember.tanh(self.a(x))
        return self.u(h) if late else h


def run(stage, opt_class, **kw):
    ref = dist.DistributedDataParallel(Net(), find_unused_parameters=True)
    ref_opt = opt_class([{"params": ref.module.a.parameters()},
                         {"params": ref.module.u.parameters()}], **kw)
    net = Net()
    model = net if stage == 2 else dist.DistributedDataParallel(net, find_unused_parameters=True)
    opt = ZeroRedundancyOptimizer([{"params": net.a.parameters()}, {"params": net.u.parameters()}],
                                  opt_class, stage=stage, **kw)
    worst = 0.0
    for step in range(4):  # the group of u gets gradients from step 2 on
        g = np.random.default_rng(10 * step + rank)
        x = ember.tensor(g.standard_normal((2, 3)).astype(np.float32))
        y = ember.tensor(g.standard_normal((2, 4)).astype(np.float32))
        for m, o in ((ref, ref_opt), (model, opt)):
            o.zero_grad()
            ((m(x, step >= 2) - y) ** 2).sum().backward()
            o.step()
        for p, q in zip(ref.module.parameters(), net.parameters()):
            worst = max(worst, float(np.abs(p.detach().numpy() - q.detach().numpy()).max()))
    opt.consolidate_state_dict(to=0)
    steps = None
    if rank == 0:
        state = opt.state_dict()["state"]
        steps = [float(np.asarray(ember.tensor(state[i]["step"]).numpy()))
                 for i in sorted(state) if "step" in state[i]]
    return worst, steps


for stage in (1, 2):
    for name, cls, kw in (("adam", ember.optim.Adam, {"lr": 0.1}),
                          ("adamw", ember.optim.AdamW, {"lr": 0.1, "weight_decay": 0.5}),
                          ("adagrad", ember.optim.Adagrad, {"lr": 0.1})):
        worst, steps = run(stage, cls, **kw)
        report([stage, name, worst, steps])

net = Net()
opt = ZeroRedundancyOptimizer([{"params": net.a.parameters()}, {"params": net.u.parameters()}],
                              ember.optim.Adagrad, lr=0.1, initial_accumulator_value=0.5)
opt.consolidate_state_dict(to=0)
if rank == 0:  # before any step: PyTorch's Adagrad has made state for every parameter
    state = opt.state_dict()["state"]
    report(["adagrad at construction", sorted(state),
            sorted({float(s["sum"].numpy().max()) for s in state.values()})])
"""


def test_a_group_without_gradients_is_skipped_as_pytorch_skips_it():
    got = reports(run_ranks(CODE, 2, timeout=120))
    assert sorted(got) == [0, 1]
    assert got[0][-1] == ["adagrad at construction", [0, 1, 2, 3], [0.5]]
    for rows in got.values():
        rows = [r for r in rows if r[0] != "adagrad at construction"]
        assert len(rows) == 6
        for stage, name, worst, steps in rows:
            assert worst < 1e-6, (stage, name, worst)
            if steps is not None:  # rank 0: a's group stepped 4 times, u's twice
                assert steps == [4.0, 4.0, 2.0, 2.0], (stage, name, steps)
