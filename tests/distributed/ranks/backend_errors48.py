"""Rank code for test_backend_errors48: an MPI failure (rank r reduces ``ones(4 * (r + 1))``,
so MPI truncates rank 0's message) is a DistBackendError through every entry point that calls
MPI on tensor data, never a wrapped OpError. Reports, per call, the error's class or "ok";
then how a destroyed group's communicator answers probes, and a send to this rank."""

from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.distributed.functional as F

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
g = dist.new_group([0, 1])
dist.destroy_process_group(g)
probes = {"hasattr": hasattr(g.comm, "Barrier"), "getattr": getattr(g.comm, "_x", "default")}
attempt("use of a destroyed group", lambda: g.comm.Barrier())
attempt("send to itself by group rank", lambda: dist.send(ember.ones(1), group_dst=rank))
report(out)
report(probes)
