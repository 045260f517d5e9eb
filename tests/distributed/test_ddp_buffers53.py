"""DDP's buffer sync as torch 2.13's: ``broadcast_buffers=False`` (deprecated there, a
FutureWarning) also leaves buffers out of the construction-time broadcast, so rank-local
buffers stay; ``forward_sync_buffers=False`` (its replacement) still broadcasts them at
construction and not before each forward. Values checked against torch's DDP on gloo
(/work/fuzz/dist_mpi53/ddp_sweep.py): Ember broadcast buffers at construction for both."""

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import warnings
import ember
import ember.distributed as dist
from ember.distributed import DistributedDataParallel as DDP
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()


def run(**kw):
    bn = ember.nn.BatchNorm1d(2)
    bn.running_mean.fill_(float(rank + 1))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        d = DDP(bn, **kw)
    at_init = bn.running_mean.tolist()
    bn.running_mean.fill_(float(10 * (rank + 1)))
    d.eval()
    d(ember.ones(3, 2))
    deprecated = any(issubclass(w.category, FutureWarning) and "broadcast_buffers" in
                     str(w.message) for w in seen)
    return [at_init, bn.running_mean.tolist(), deprecated]


report(run())
report(run(broadcast_buffers=True))
report(run(broadcast_buffers=False))
report(run(forward_sync_buffers=False))
report(run(forward_sync_buffers=True))
# both given: forward_sync_buffers decides, and the construction broadcast stays (torch 2.13)
report(run(broadcast_buffers=False, forward_sync_buffers=True))

# broadcast_buffers stays a property over forward_sync_buffers, read and set after construction
bn = ember.nn.BatchNorm1d(2)
d = DDP(bn, forward_sync_buffers=False)
read = d.broadcast_buffers
d.broadcast_buffers = True
bn.running_mean.fill_(float(rank + 1))
d.eval()
d(ember.ones(3, 2))
report([read, d.forward_sync_buffers, "broadcast_buffers" in vars(d), bn.running_mean.tolist()])
"""


def test_buffer_sync_at_init_and_forward_as_torch():
    got = reports(run_ranks(CODE, 2, timeout=90))
    r = 2.0  # rank 1's own values: 2 at construction, 20 before the forward
    assert got[0][:2] == [[[1.0] * 2, [10.0] * 2, False], [[1.0] * 2, [10.0] * 2, True]]
    assert got[1][:-1] == [
        [[1.0] * 2, [10.0] * 2, False],          # default: both syncs
        [[1.0] * 2, [10.0] * 2, True],           # broadcast_buffers=True: the same, warned
        [[r] * 2, [10 * r] * 2, True],           # broadcast_buffers=False: neither
        [[1.0] * 2, [10 * r] * 2, False],        # forward_sync_buffers=False: init only
        [[1.0] * 2, [10.0] * 2, False],
        [[1.0] * 2, [10.0] * 2, True],           # both given: forward_sync_buffers wins
    ]
    # set after construction: broadcast_buffers=True turns the forward broadcast back on
    assert [got[k][-1] for k in (0, 1)] == [[False, True, False, [1.0] * 2]] * 2
