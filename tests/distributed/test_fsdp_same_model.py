"""fully_shard (FSDP2) and FullyShardedDataParallel (FSDP1) refuse, on every rank, modules
that differ between ranks, as DDP does: before, ``fully_shard(Linear(4, 5 + rank))`` ran
forward and backward on every rank and trained on garbage, and FSDP1 aborted the job in an
all-gather (or, with equal sizes, trained on garbage too)."""

import re

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import ember, ember.distributed as dist
from ember import nn
from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
mesh = None
if MESH:
    mesh = dist.init_device_mesh("cpu", MESH)


def extra():
    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(1 + (rank == world - 1))])


def shape():
    return nn.Linear(4, 5 + (rank == world - 1))


def transposed():  # (the same number of elements: FSDP1's flat shards alike)
    return nn.Linear(4, 6, bias=False) if rank == world - 1 else nn.Linear(6, 4, bias=False)


def dtype():
    return nn.Linear(4, 5).to(ember.float64 if rank == world - 1 else ember.float32)


def frozen():
    lin = nn.Linear(4, 5)
    lin.bias.requires_grad_(rank != world - 1)
    return lin


def tied():
    m = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    if rank == world - 1:
        m[1].weight = m[0].weight
    return m


def buffer():
    m = nn.BatchNorm1d(4 + (rank == world - 1))
    m.weight.requires_grad_(False)
    m.bias.requires_grad_(False)
    m.weight = m.bias = None
    return m


def lazy():  # (no shape yet on one rank: refused by the check, not left waiting)
    return nn.LazyLinear(5) if rank == world - 1 else nn.Linear(4, 5)


def same():
    return nn.Linear(4, 5)


def attempt(name, wrap):
    try:
        m = wrap()
        out = m(ember.ones(2, 4)).sum()
        out.backward()
        report([name, "trained", round(out.item(), 6)])
    except dist.DistError as exc:
        report([name, str(exc)])


for case in (extra, shape, transposed, dtype, frozen, tied, lazy, same):
    attempt(f"fsdp2 {case.__name__}", lambda: fully_shard(case(), mesh=mesh))
if not MESH:
    for case in (extra, shape, transposed, dtype, frozen, lazy, same):
        attempt(f"fsdp1 {case.__name__}", lambda: FSDP(case()))
    try:
        FSDP(buffer(), sync_module_states=True)
        report(["fsdp1 buffer", "built"])
    except dist.DistError as exc:
        report(["fsdp1 buffer", str(exc)])
    FSDP(buffer())  # (buffers stay each rank's own without sync_module_states)
"""


def run(n, mesh=None):
    got = reports(run_ranks(CODE.replace("MESH", repr(mesh)), n, timeout=120))
    assert sorted(got) == list(range(n))
    for r in range(1, n):  # the same error on every rank: none waits for another
        assert [x[:2] for x in got[r]] == [x[:2] for x in got[0]]
    return {x[0]: x[1] for x in got[0]}


def test_fully_shard_and_fsdp_refuse_modules_that_differ_between_ranks():
    why = run(2)
    two = "fully_shard expects the same module on every rank, but "
    assert why["fsdp2 shape"].startswith(
        two + "'weight' is a parameter [5, 4] float32 trainable on rank 0, 'weight' a "
        "parameter [6, 4] float32 trainable on rank 1. Hint: build the model identically")
    assert re.search(r"rank 0 has 2 parameters to shard, rank 1 has 4", why["fsdp2 extra"])
    assert "[4, 6] float32 trainable on rank 0, 'weight' a parameter [6, 4]" in \
        why["fsdp2 transposed"]
    assert "'weight' a parameter [5, 4] float64 trainable on rank 1" in why["fsdp2 dtype"]
    assert "'bias' a parameter [5] float32 frozen on rank 1" in why["fsdp2 frozen"]
    assert "'1.weight' a parameter [4, 4] float32 trainable (registration 0 again) on rank " \
           "1" in why["fsdp2 tied"]
    assert "'weight' a parameter uninitialized float32 trainable on rank 1" in why["fsdp2 lazy"]
    one = "FullyShardedDataParallel expects the same module on every rank, but "
    assert why["fsdp1 shape"].startswith(
        one + "'Linear.weight' is a parameter [5, 4] float32 trainable on rank 0, "
        "'Linear.weight' a parameter [6, 4] float32 trainable on rank 1")
    assert re.search(r"rank 0 has 2 parameters, rank 1 has 4", why["fsdp1 extra"])
    for case in ("transposed", "dtype", "frozen"):
        assert why[f"fsdp1 {case}"].startswith(one)
    assert "a parameter uninitialized float32 trainable on rank 1" in why["fsdp1 lazy"]
    assert "'BatchNorm1d.running_mean' is a buffer [4] float32 on rank 0, " \
           "'BatchNorm1d.running_mean' a buffer [5] float32 on rank 1" in why["fsdp1 buffer"]
    assert why["fsdp2 same"] == why["fsdp1 same"] == "trained"


def test_fully_shard_on_a_2d_mesh_refuses_a_module_that_differs_on_one_rank():
    why = run(4, (2, 2))  # (rank 3 differs: its shard group and its replica group see it)
    assert "'weight' is a parameter [5, 4] float32 trainable on rank 0, 'weight' a " \
           "parameter [6, 4] float32 trainable on rank 3" in why["fsdp2 shape"]
    assert why["fsdp2 same"] == "trained"
