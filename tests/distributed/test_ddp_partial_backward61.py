"""DDP with ``find_unused_parameters=True`` counts the parameters the backward pass does not
reach as unused, as torch 2.13's reducer: a loss over some of the outputs (an auxiliary head's
left out) averages the others and leaves the skipped head's ``.grad`` None, instead of an
error naming its parameters. Values checked against torch's DDP on gloo, 2 ranks
(/work/fuzz/sweep61b/ddp_sweep.py, torch_partial.py)."""

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

HEADER = """
import ember
import ember.distributed as dist
from ember.distributed import DistributedDataParallel as DDP
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()
"""

CODE = HEADER + """

class Heads(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ember.nn.Linear(4, 2)
        self.b = ember.nn.Linear(4, 2)

    def forward(self, x):
        return {"a": self.a(x), "b": [self.b(x)]}


def grads(m):
    return {n: None if p.grad is None else p.grad.tolist() for n, p in m.named_parameters()}


ember.manual_seed(0)
m = Heads()
d = DDP(m, find_unused_parameters=True)
x = ember.ones(2, 4) * (rank + 1)
out = d(x)
out["a"].sum().backward()          # head b is in the outputs but not in the loss
report(grads(m))
m.zero_grad()
out = d(x)                          # rank 0 uses head b, rank 1 does not
(out["a"].sum() + (out["b"][0].sum() if rank == 0 else 0)).backward()
report(grads(m))
m.zero_grad()
for _ in range(2):                  # next steps start cleanly
    d(x)["a"].sum().backward()
report(grads(m))
"""


def test_a_loss_over_some_outputs_leaves_the_others_unused():
    done = run_ranks(CODE, 2, timeout=60)
    first, mixed, again = reports(done)[0]
    assert reports(done)[1] == [first, mixed, again]
    assert first == {"a.weight": [[3.0] * 4] * 2, "a.bias": [2.0, 2.0],
                     "b.weight": None, "b.bias": None}
    # torch: b's gradient is rank 0's over the 2 ranks (rank 1 contributes zeros)
    assert mixed == {"a.weight": [[3.0] * 4] * 2, "a.bias": [2.0, 2.0],
                     "b.weight": [[1.0] * 4] * 2, "b.bias": [1.0, 1.0]}
    assert again == {"a.weight": [[6.0] * 4] * 2, "a.bias": [4.0, 4.0],
                     "b.weight": None, "b.bias": None}


TUPLE_HEADS = HEADER + """

class Heads(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Linear(3, 3))
        self.b = ember.nn.Linear(4, 3)

    def forward(self, x):
        return self.a(x), self.b(x)


"""

SPLIT = TUPLE_HEADS + """
ember.manual_seed(0)
m = Heads()
d = DDP(m, find_unused_parameters=True)
x = ember.ones(2, 4) * (rank + 1)
for retain in (False, True):
    a, b = d(x)
    a.sum().backward(retain_graph=retain)   # ends the step: b counted unused
    try:
        b.pow(2).sum().backward()           # b's gradient would stay rank-local
        report("no error")
    except RuntimeError as exc:
        report([type(exc).__name__, str(exc)])
    m.zero_grad()
a, b = d(x)                                  # the next step runs
(a.sum() + b.pow(2).sum()).backward()
report(m.b.bias.grad.tolist())
m.zero_grad()
a, b = d(x)                                  # a double backward of one loss: averaged + local
a.sum().backward(retain_graph=True)
a.sum().backward()
report(m.a[1].bias.grad.tolist())
"""


def test_a_second_backward_after_the_step_ended_raises():
    # torch raises without retain_graph ("backward through the graph a second time": its
    # _DDPSink node is freed) and with it leaves b's gradient rank-local silently
    done = run_ranks(SPLIT, 2, timeout=60)
    for rank in (0, 1):
        first, retained, step, twice = reports(done)[rank]
        for err in (first, retained):
            assert err[0] == "DistError" and "parameter b." in err[1] and "counted unused" in err[1]
            assert "call backward() once" in err[1]
        assert step == reports(done)[0][2]
        assert twice == [4.0, 4.0, 4.0]  # 2 averaged, then 2 local (as torch)


NESTED = TUPLE_HEADS + """
m = Heads()
d = DDP(m, find_unused_parameters=True)
a, b = d(ember.ones(2, 4))
lb = b.sum()
m.a[1].bias.register_hook(lambda g: lb.backward())   # a backward nested in the step's
try:
    a.sum().backward()
except RuntimeError as exc:
    report(str(exc))
"""


def test_a_gradient_after_the_step_counted_it_unused_says_why():
    message = reports(run_ranks(NESTED, 1, timeout=60))[0][0]
    assert "parameter b.bias got a gradient" in message
    assert "did not reach it" in message and "outputs of the forwards" not in message


KEPT = HEADER + """
d = DDP(ember.nn.Linear(4, 2), find_unused_parameters=True)
for _ in range(100):                # forwards with grad and no backward (validation in
    d(ember.ones(2, 4)).sum()       # train mode): their outputs die, their nodes go
report(len(d._outputs))
"""


def test_forwards_without_backward_keep_no_references_to_dead_outputs():
    assert reports(run_ranks(KEPT, 1, timeout=60))[0][0] <= 1
