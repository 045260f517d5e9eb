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


NO_SYNC_CODE = """
import ember
import ember.distributed as dist
from ember.distributed import DistributedDataParallel as DDP
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()
bn = ember.nn.BatchNorm1d(2)
d = DDP(bn)
d.eval()
seen, flags = [], []
for scale, how in [(10, "no_sync"), (100, ""), (1000, ""), (10**4, "no_grad"), (10**5, ""),
                   (10**6, "no_sync"), (10**7, "no_sync")]:
    bn.running_mean.fill_(float(scale * (rank + 1)))
    with d.no_sync() if how == "no_sync" else ember.no_grad() if how else ember.enable_grad():
        d(ember.ones(3, 2))
    seen.append(bn.running_mean.tolist()[0])
    flags.append(d.require_forward_param_sync)
report([seen, flags])
"""


def test_buffers_sync_before_forward_only_after_a_synced_forward_as_torch():
    # torch 2.13 (gloo, /work/fuzz/mend54/ddp_nosync_buffers.py): the broadcast before a
    # forward follows require_forward_param_sync, which the previous forward set: False after
    # one in no_sync() or under no_grad, so the next forward keeps each rank's buffers
    got = reports(run_ranks(NO_SYNC_CODE, 2, timeout=90))
    flags = [False, True, True, False, True, False, False]
    assert got[0] == [[[10.0, 100.0, 1000.0, 1e4, 1e5, 1e6, 1e7], flags]]
    assert got[1] == [[[10.0, 200.0, 1000.0, 1e4, 2e5, 1e6, 2e7], flags]]


COUNT = """
import ember
import ember.distributed as dist
from ember import nn
from tests.distributed.harness import report

dist.init_process_group("mpi")
model = nn.Sequential(nn.Linear(4, 2), nn.BatchNorm1d(2))
ddp = nn.parallel.DistributedDataParallel(model, forward_sync_buffers=False)
calls, listing = [], model.buffers
model.buffers = lambda *a, **k: calls.append(1) or listing(*a, **k)
x = ember.randn(3, 4)
ddp(x).sum().backward()
with ember.no_grad():
    ddp(x)
with ddp.no_sync():
    ddp(x).sum().backward()
report(len(calls))
"""


def test_forward_lists_buffers_only_to_broadcast_them():
    # forwards that broadcast nothing (forward_sync_buffers=False, no_grad, no_sync) do not
    # walk the module's buffers (e7f8927d listed them on every forward; mend58g)
    assert reports(run_ranks(COUNT, 2, timeout=60)) == {0: [0], 1: [0]}
