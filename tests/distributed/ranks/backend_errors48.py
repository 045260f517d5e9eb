"""Rank code for test_backend_errors48: an MPI failure (rank r reduces ``ones(4 * (r + 1))``,
so MPI truncates rank 0's message) is a DistBackendError through every entry point that calls
MPI on tensor data, never a wrapped OpError. Reports, per call, the error's class or "ok";
then DDP's step when its all-reduce fails, Work's calls on a failing request, how a destroyed
group's communicator answers probes, and a send to this rank."""

from functools import partial

from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.distributed.functional as F
from ember import nn
from ember.distributed import ddp as ddp_module
from ember.distributed.buffers import Work, backend_error, mpi

dist.init_process_group("mpi")
rank = dist.get_rank()
m = 4 * (rank + 1)
out = {}


def attempt(name: str, fn) -> None:
    try:
        fn()
        out[name] = "ok"
    except Exception as exc:  # noqa: BLE001 - the kind of error is what is reported
        out[name] = type(exc).__name__
    dist.barrier()


attempt("all_reduce", lambda: dist.all_reduce(ember.ones(m)))
attempt("all_reduce max", lambda: dist.all_reduce(ember.ones(m), op=dist.ReduceOp.MAX))
attempt("functional all_reduce", lambda: F.all_reduce(ember.ones(m), "sum"))
attempt("all_reduce_coalesced", lambda: dist.all_reduce_coalesced([ember.ones(m)]))


def ddp_step(ddp: nn.Module) -> None:
    ddp.zero_grad(set_to_none=True)
    ddp(ember.ones(2, 4) * (rank + 1)).sum().backward()


def failing(name: str):
    """ddp's ``call``, whose first ``name`` on rank 0 raises MPI's failure after running (a
    real one, of unequal non-blocking all-reduces, hangs the other rank in MPI itself)."""
    left = [rank == 0]

    def fake(obj, method, *args):
        result = real_call(obj, method, *args)
        if method == name and left and left.pop():
            raise backend_error(RuntimeError("simulated"), method)
        return result

    return fake


# DDP without a comm hook, one bucket per parameter: MPI failing the step in a Wait or a Test
# leaves no gradient holding unfilled memory on rank 0, and the next step works
real_call = ddp_module.call
for name in ("Wait", "Test"):
    ddp = nn.parallel.DistributedDataParallel(nn.Linear(4, 3), bucket_cap_mb=1e-6)
    ddp_module.call = failing(name)
    attempt(f"ddp step failing in {name}", partial(ddp_step, ddp))
    out[f"ddp grads after the failure in {name}"] = [p.grad is None for p in ddp.parameters()]
    ddp_module.call = real_call
    attempt(f"next ddp step after {name}", partial(ddp_step, ddp))  # weight: mean of 2 and 4
    out[f"ddp grads after {name}"] = [p.grad.numpy().tolist() for p in ddp.parameters()]


class FailingRequest:
    """An MPI request whose Test and Wait fail as MPI does."""

    def Test(self, *status):  # noqa: N802 - MPI's names
        raise mpi().Exception(mpi().ERR_OTHER)

    Wait = Test


attempt("Work.is_completed", lambda: Work(FailingRequest()).is_completed())
out["Work.is_success"] = Work(FailingRequest()).is_success()   # False, never raises
attempt("Work.wait", lambda: Work(FailingRequest()).wait())
attempt("Work's future wait()", lambda: Work(FailingRequest()).get_future().wait())
g = dist.new_group([0, 1])
dist.destroy_process_group(g)
probes = {"hasattr": hasattr(g.comm, "Barrier"), "getattr": getattr(g.comm, "_x", "default"),
          "getattr of a public name": getattr(g.comm, "Barrier", "default")}
attempt("use of a destroyed group", lambda: g.comm.Barrier())
attempt("send to itself by group rank", lambda: dist.send(ember.ones(1), group_dst=rank))
report(out)
report(probes)
