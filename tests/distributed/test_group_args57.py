"""new_group takes PyTorch's arguments (backend None/"mpi", timeout, pg_options, group_desc,
device_id; use_local_synchronization=True and other backends refused by name) and barrier
takes ``timeout`` (DistError when the ranks have not all arrived by then). They were
TypeErrors (dist57)."""

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import datetime, time
import ember, ember.distributed as dist
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()
g = dist.new_group([1, 0], timeout=datetime.timedelta(seconds=30), backend="mpi",
                   pg_options=None, group_desc="pair", device_id=None)
x = ember.tensor([rank + 1.0])
dist.all_reduce(x, group=g)
report([dist.get_process_group_ranks(g), x.tolist()])
for kwargs, error in [({"backend": "nccl"}, dist.DistError),
                      ({"use_local_synchronization": True}, ValueError)]:
    try:
        dist.new_group([0, 1], **kwargs)
        report("no error")
    except error as exc:
        report([type(exc).__name__, "new_group" in str(exc)])
report(dist.barrier(timeout=datetime.timedelta(seconds=30)))
if rank == 0:
    try:
        dist.barrier(timeout=datetime.timedelta(milliseconds=200))
        report("no error")
    except dist.DistError as exc:
        report(["DistError", "0.2 s" in str(exc)])
else:
    time.sleep(1.0)
    report(dist.barrier())           # meets rank 0's timed-out barrier, still running there
dist.barrier()
"""


def test_new_group_and_barrier_take_torchs_arguments():
    got = reports(run_ranks(CODE, 2, timeout=90))
    common = [[[0, 1], [3.0]], ["DistError", True], ["ArgumentError", True], None]
    assert got[0] == [*common, ["DistError", True]]
    assert got[1] == [*common, None]


if __name__ == "__main__":
    pytest.main([__file__])
