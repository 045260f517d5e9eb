"""``ember.autograd.grad`` through a DDP model gives the rank's local gradient with no
communication, as torch 2.13's DDP (its reducer hooks sit on the AccumulateGrad nodes, which
``grad`` does not run): DDP's hooks skip passes that do not accumulate into ``.grad``. It
returned uninitialised memory (without find_unused_parameters) or the mean over the ranks
(with it: the ranks then fell out of step when only one called it). ``backward(inputs=...)``
that leaves parameters out raises at once without find_unused_parameters (torch keeps a local
gradient and raises at the next forward); Ember left uninitialised memory in ``.grad``."""

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import sys
import ember
import ember.distributed as dist
from ember.distributed import DistributedDataParallel as DDP
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()
find = sys.argv[1] == "find"
ember.manual_seed(0)
m = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Linear(3, 2))
x = ember.ones(2, 4) * (rank + 1)
local = ember.autograd.grad(m(x).pow(2).sum(), [m[1].bias])[0].tolist()  # before wrapping
d = DDP(m, find_unused_parameters=find)
g, = ember.autograd.grad(d(x).pow(2).sum(), [m[1].bias])
report([g.tolist() == local, m[1].bias.grad is None])
y = d(x)
if rank == 0:                       # a diagnostic on one rank only, then a normal step
    ember.autograd.grad(y.pow(2).sum(), [m[1].bias], retain_graph=True)
y.pow(2).sum().backward()
report(m[1].bias.grad.tolist())
m.zero_grad(set_to_none=True)
try:
    d(x).pow(2).sum().backward(inputs=[m[1].bias])
    report(m[1].bias.grad.tolist())
except RuntimeError as exc:
    report([type(exc).__name__, str(exc), m[1].bias.grad is None])
m.zero_grad(set_to_none=True)
d(x).pow(2).sum().backward(inputs=list(m.parameters()))   # every parameter: a normal step
report(m[1].bias.grad.tolist())
"""


@pytest.mark.parametrize("find", ["find", "nofind"])
def test_grad_is_local_and_backward_inputs_is_not_garbage(find):
    done = run_ranks(CODE, 2, timeout=60, args=(find,))
    got = reports(done)
    for rank in (0, 1):
        local, step, inputs, full = got[rank]
        assert local == [True, True]
        assert step == got[0][1] and full == got[0][3] == step  # the mean, equal on each rank
        if find == "find":   # the inputs averaged, the others counted unused
            assert inputs == step
        else:
            assert inputs[0] == "DistError" and "'1.bias'" not in inputs[1]
            assert "inputs=" in inputs[1] and inputs[2] is True
