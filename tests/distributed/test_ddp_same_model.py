"""DistributedDataParallel refuses, on every rank, models that differ between ranks (as
PyTorch's DDP verifies): before, rank 0's broadcast silently filled a differently shaped or
typed model with unrelated bytes and training went on. ZeroRedundancyOptimizer likewise
refuses parameter groups that differ (before, one rank failed in the all-gather while the
other finished its step with wrong values)."""

import re

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import ember, ember.distributed as dist
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()


def extra():
    return ember.nn.Sequential(*[ember.nn.Linear(4, 4) for _ in range(1 + rank)])


def shape():
    return ember.nn.Linear(4, 5 + rank)


def dtype():
    return ember.nn.Linear(4, 5).to(ember.float64 if rank else ember.float32)


def frozen():
    lin = ember.nn.Linear(4, 5)
    lin.bias.requires_grad_(rank == 0)
    return lin


def same():
    return ember.nn.Linear(4, 5)


for case in (extra, shape, dtype, frozen, same):
    try:
        dist.DistributedDataParallel(case())
        report([case.__name__, "built"])
    except dist.DistError as exc:
        report([case.__name__, str(exc)])

from ember.distributed.optim import ZeroRedundancyOptimizer

for stage in (1, 2):
    opt = ZeroRedundancyOptimizer(same().parameters(), ember.optim.SGD, stage=stage, lr=0.1)
    try:
        opt.add_param_group({"params": shape().parameters()})
        report([f"zero{stage}", "added"])
    except dist.DistError as exc:
        report([f"zero{stage}", str(exc), len(opt.param_groups)])
"""


def test_ddp_and_zero_refuse_models_that_differ_between_ranks():
    got = reports(run_ranks(CODE, 2, timeout=90))
    assert got[0] == got[1]  # the same error on every rank: none waits for the other
    why = {r[0]: r[1] for r in got[0]}
    assert re.search(r"rank 0 has 2 parameters and buffers, rank 1 has 4", why["extra"])
    assert "'weight' is a parameter [5, 4] float32 trainable on rank 0, 'weight' a parameter " \
           "[6, 4] float32 trainable on rank 1" in why["shape"]
    assert "[5, 4] float64 trainable on rank 1" in why["dtype"]
    assert "'bias' is a parameter [5] float32 trainable on rank 0, 'bias' a parameter [5] " \
           "float32 frozen on rank 1" in why["frozen"]
    assert why["same"] == "built"
    for stage in (1, 2):
        assert "ZeroRedundancyOptimizer expects the same parameter groups on every rank, but " \
               "'parameter 0' is a tensor [5, 4] float32 on rank 0, 'parameter 0' a tensor " \
               "[6, 4] float32 on rank 1" in why[f"zero{stage}"]
    assert [r[2] for r in got[0] if r[0].startswith("zero")] == [1, 1]  # left as it was
