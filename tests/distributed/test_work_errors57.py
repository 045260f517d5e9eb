"""A Work whose operation failed stays failed, as PyTorch's c10d Work: every later ``wait()``
and ``is_completed()`` raise the same error, ``is_success()`` is False (it never raises) and
the future completes with the error (was: ``is_completed()`` raised an unrelated ShapeError,
then ``wait()``/``is_success()`` reported success). ``barrier(async_op=True, timeout=...)``
gives a work whose ``wait()`` fails after the timeout (it was ignored); ``new_group`` takes
``sort_ranks`` (was a TypeError); a default root outside the group is a ValueError (review57g)."""

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import datetime, time
import ember, ember.distributed as dist
from tests.distributed.harness import report

def outcome(fn):
    try:
        return ["ok", fn()]
    except Exception as exc:
        return [type(exc).__name__, exc]

dist.init_process_group("mpi")
rank = dist.get_rank()
if rank == 0:
    dist.send(ember.ones(4), dst=1, tag=3)
    dist.send(ember.ones(4), dst=1, tag=4)
elif rank == 1:
    small = dist.irecv(ember.zeros(2), src=0, tag=3)       # too small: MPI truncates
    fut = small.get_future()
    first = outcome(small.wait)
    again = outcome(small.wait)
    exc = first[1]
    report([first[0], again[0], again[1] is exc, outcome(small.is_completed)[1] is exc,
            small.is_success(), small.exception() is exc, fut.done(),
            outcome(fut.wait)[1] is exc, outcome(small.get_future().wait)[1] is exc])
    polled = dist.irecv(ember.zeros(2), src=0, tag=4)      # the failure seen by polling
    while (got := outcome(polled.is_completed)) == ["ok", False]:
        time.sleep(0.01)
    report([got[0], got[1] is polled.exception(), polled.is_success(),
            outcome(polled.wait)[1] is polled.exception(),
            outcome(polled.is_completed)[1] is polled.exception()])
dist.barrier()
if rank == 0:
    work = dist.barrier(async_op=True, timeout=datetime.timedelta(milliseconds=200))
    got = outcome(work.wait)
    report([got[0], "0.2 s" in str(got[1])])
else:
    time.sleep(1.0)
    dist.barrier()                        # meets rank 0's timed-out barrier
g = dist.new_group([2, 0, 1], sort_ranks=False)
x = ember.tensor([float(rank)])
dist.broadcast(x, group_src=0, group=g)
report([dist.get_process_group_ranks(g), dist.get_group_rank(g, 2), dist.get_rank(g),
        x.tolist()])
g12 = dist.new_group([1, 2])
if rank != 0:
    got = outcome(lambda: dist.broadcast_object_list([None], group=g12))
    report([got[0], isinstance(got[1], ValueError), isinstance(got[1], dist.DistError)])
dist.barrier()
"""


def test_failed_work_async_barrier_timeout_sort_ranks():
    got = reports(run_ranks(CODE, 3, timeout=120))
    order = [[2, 0, 1], 0]
    assert got[0] == [["DistError", True], [*order, 1, [2.0]]]
    assert got[1] == [["DistBackendError", "DistBackendError", True, True, False, True, True,
                       True, True],
                      ["DistBackendError", True, False, True, True],
                      [*order, 2, [2.0]], ["_NotInGroup", True, True]]
    assert got[2] == [[*order, 0, [2.0]], ["_NotInGroup", True, True]]


if __name__ == "__main__":
    pytest.main([__file__])
