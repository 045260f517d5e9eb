"""broadcast_object_list and recv_object_list keep the list's length, as PyTorch's (whose
lists carry one size per entry): a list of another length than the sender's raises a
ShapeError naming both counts and leaves the list as it was (it was resized silently)."""

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import ember.distributed as dist
from ember.errors import ShapeError
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()


def attempt(call, box):
    try:
        call()
        return ["no error", box]
    except ShapeError as exc:
        return ["ShapeError", "3 entries" in str(exc) and "2 objects" in str(exc), box]


box = [None, None, None] if rank == 1 else [1, 2]
report(attempt(lambda: dist.broadcast_object_list(box, src=0), box))
if rank == 0:
    dist.send_object_list([1, 2], dst=1)
    report("sent")
else:
    box = [None, None, None]
    report(attempt(lambda: dist.recv_object_list(box, src=0), box))
same = [rank, "x"]
dist.broadcast_object_list(same, src=1)   # equal lengths still work
report(same)
"""


def test_object_lists_of_another_length_raise():
    got = reports(run_ranks(CODE, 2, timeout=90))
    assert got[0] == [["no error", [1, 2]], "sent", [1, "x"]]
    assert got[1] == [["ShapeError", True, [None] * 3], ["ShapeError", True, [None] * 3],
                      [1, "x"]]


if __name__ == "__main__":
    pytest.main([__file__])
