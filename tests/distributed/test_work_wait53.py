"""Work.wait takes PyTorch's ``timeout`` (a timedelta; zero waits as long as it takes): a
finished collective returns True, one that a rank never joins raises DistError after the
timeout, naming it (``wait(timeout=...)`` was a TypeError). ``Work.exception()`` is None
for a work that has not failed and the error ``wait`` raised for one that has (it was an
AttributeError; dist57)."""

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import datetime
import ember
import ember.distributed as dist
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()
x = ember.ones(2)
work = dist.all_reduce(x, async_op=True)
report([work.exception(), work.wait(timeout=datetime.timedelta(seconds=30)), x.tolist(),
        work.wait(datetime.timedelta(0)), work.exception()])
y = ember.zeros(2)
if rank == 1:
    late = dist.irecv(y, src=0, tag=7)
    try:
        late.wait(timeout=datetime.timedelta(milliseconds=200))
        report("no error")
    except dist.DistError as exc:
        report(["DistError", "0.2 s" in str(exc)])
dist.barrier()
if rank == 0:
    dist.send(ember.ones(2) * 3, dst=1, tag=7)
else:
    report([late.wait(timeout=datetime.timedelta(seconds=30)), y.tolist(), late.exception()])
if rank == 0:
    dist.send(ember.ones(4), dst=1, tag=3)
else:
    small = dist.irecv(ember.zeros(2), src=0, tag=3)      # too small: MPI truncates
    try:
        small.wait()
        report("no error")
    except dist.DistBackendError as exc:
        report(["DistBackendError", small.exception() is exc])
"""


def test_wait_timeout():
    got = reports(run_ranks(CODE, 2, timeout=90))
    assert got[0] == [[None, True, [2.0, 2.0], True, None]]
    assert got[1] == [[None, True, [2.0, 2.0], True, None], ["DistError", True],
                      [True, [3.0, 3.0], None], ["DistBackendError", True]]
