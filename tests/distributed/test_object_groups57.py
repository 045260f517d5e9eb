"""The object collectives take PyTorch's ``group_src``/``group_dst`` (a rank inside the group)
and ``device`` (and ``use_batch`` for send/recv), as the tensor collectives do; they were
TypeErrors (dist57)."""

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import ember.distributed as dist
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()
g = dist.new_group([2, 1])                  # group ranks follow world ranks: 1 -> 0, 2 -> 1
if rank == 0:                               # outside the group
    report(dist.broadcast_object_list([0], group=g, group_src=1))
else:
    box = [rank, None]
    dist.broadcast_object_list(box, group=g, device="cpu", group_src=1)   # from world rank 2
    out = [None, None] if rank == 1 else None
    dist.gather_object({"r": rank}, out, group=g, group_dst=0)            # to world rank 1
    got = [None]
    dist.scatter_object_list(got, ["a", "b"] if rank == 2 else None, group=g, group_src=1)
    if rank == 1:
        dist.send_object_list([7, "x"], group=g, device=None, group_dst=1, use_batch=False)
        sender = None
    else:
        mail = [None, None]
        sender = dist.recv_object_list(mail, group=g, group_src=0)
        got.append(mail)
    report([box, out, got, sender])
with __import__("pytest").raises(Exception, match="not both"):
    dist.broadcast_object_list([0], src=0, group_src=0)
report("ok")
"""


def test_object_collectives_take_group_ranks():
    got = reports(run_ranks(CODE, 3, timeout=90))
    assert got[0] == [None, "ok"]
    assert got[1] == [[[2, None], [{"r": 1}, {"r": 2}], ["a"], None], "ok"]
    assert got[2] == [[[2, None], None, ["b", [7, "x"]], 1], "ok"]


if __name__ == "__main__":
    pytest.main([__file__])
