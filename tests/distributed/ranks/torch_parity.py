"""Rank code: the same calls through ember (MPI) and PyTorch (gloo, started here on the same
ranks over a FileStore at argv[1]), compared value by value; reports the mismatches."""

import datetime
import sys
import warnings

import numpy as np
import torch
import torch.distributed as tdist
from tests.distributed.harness import report

import ember
import ember.distributed as dist

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
tdist.init_process_group("gloo", store=tdist.FileStore(sys.argv[1], n), rank=rank, world_size=n,
                         timeout=datetime.timedelta(seconds=60))
bad: list[str] = []


def same(what: str, e: ember.Tensor, t: torch.Tensor) -> None:
    if e.dtype.name != str(t.dtype).split(".")[-1] or tuple(e.shape) != tuple(t.shape):
        bad.append(f"{what}: ember {tuple(e.shape)} {e.dtype.name}, torch {tuple(t.shape)} "
                   f"{t.dtype}")
    elif not np.array_equal(e.numpy(), t.numpy(), equal_nan=e.dtype.is_floating_point):
        bad.append(f"{what}: ember {e.numpy().tolist()}, torch {t.numpy().tolist()}")


def inputs(dtype: str) -> np.ndarray:
    a = (np.arange(12).reshape(3, 4) * (rank + 3) + rank) % 7 - 1
    return a.astype(bool) if dtype == "bool" else a.astype(dtype)


def check_bitwise_reduce_ops() -> None:
    """BAND, BOR, BXOR on integer and bool tensors (all_reduce, reduce, reduce_scatter);
    a clear error on floating and complex ones."""
    for name in ("BAND", "BOR", "BXOR"):
        op, top = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        for dtype in ("int64", "int32", "int8", "uint8", "bool"):
            a = inputs(dtype)
            e, t = ember.tensor(a), torch.tensor(a)
            dist.all_reduce(e, op=op)
            tdist.all_reduce(t, op=top)
            same(f"all_reduce {name} {dtype}", e, t)
            e, t = ember.tensor(a).t(), torch.tensor(a).t()  # (not contiguous)
            dist.reduce(e, dst=n - 1, op=op)
            tdist.reduce(t, dst=n - 1, op=top)
            if rank == n - 1:
                same(f"reduce {name} {dtype}", e, t)
            big = np.concatenate([a[:2]] * n)
            e = ember.zeros(2, 4, dtype=getattr(ember, dtype))
            t = torch.zeros(2, 4, dtype=getattr(torch, dtype))
            dist.reduce_scatter_tensor(e, ember.tensor(big), op=op)
            tdist.reduce_scatter_tensor(t, torch.tensor(big), op=top)
            same(f"reduce_scatter_tensor {name} {dtype}", e, t)
        for dtype, error in (("float32", ember.DTypeError), ("bfloat16", ember.DTypeError),
                             ("complex64", ValueError)):
            try:
                dist.all_reduce(ember.ones(3, dtype=getattr(ember, dtype)), op=op)
                bad.append(f"all_reduce {name} {dtype}: no error")
            except error as exc:
                if name not in str(exc) or "all_reduce" not in str(exc):
                    bad.append(f"all_reduce {name} {dtype}: unclear error {exc}")
        if dist.supports_complex(op):
            bad.append(f"supports_complex({name}) is True")


def check_outside_group() -> None:
    """Collectives on a group this rank is not in warn and do nothing (recv returns -1): every
    rank may run the same code."""
    members = list(range(n - 1))
    eg, tg = dist.new_group(members), tdist.new_group(members)
    results = []
    for lib, d, g in ((ember, dist, eg), (torch, tdist, tg)):
        x = lib.ones(2) * (rank + 1)
        outs = [lib.zeros(2) for _ in members]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = [d.all_reduce(x, group=g), d.broadcast(x, 0, group=g),
                   d.all_reduce(x, group=g, async_op=True), d.all_gather(outs, x, group=g),
                   d.barrier(group=g), d.all_gather_object([None] * len(members), 1, group=g)]
            if rank not in members:
                got.append(d.recv(x, 0, group=g))
        results.append((got, x.tolist(), len([w for w in caught if "belong" in str(w.message)])))
    (egot, ex, ewarn), (tgot, tx, twarn) = results
    if rank not in members:
        if egot != tgot or ex != tx or ewarn != twarn:
            bad.append(f"outside group: ember {results[0]}, torch {results[1]}")
    elif ex != tx:
        bad.append(f"inside group: ember {ex}, torch {tx}")


def check_p2p_and_work() -> None:
    """Sending to or receiving from oneself is refused with torch's ValueError (gloo fails
    later on a receive); Work.result() gives the outputs, an irecv's source_rank() its
    sender."""
    for lib, calls in ((ember, (dist.send, dist.isend, dist.recv, dist.irecv)),
                       (torch, (tdist.send,))):
        for call in calls:
            try:
                call(lib.ones(1), rank)
                bad.append(f"{lib.__name__}: p2p with oneself did not raise")
            except ValueError as exc:
                if "should not be the same as the rank of the current process" not in str(exc):
                    bad.append(f"{lib.__name__}: p2p with oneself: {exc}")
    for lib, d in ((ember, dist), (torch, tdist)):
        x = lib.ones(3) * (rank + 1)
        work = d.all_reduce(x, async_op=True)
        work.wait()
        got = work.result()
        if len(got) != 1 or got[0].tolist() != [n * (n + 1) / 2] * 3:
            bad.append(f"{lib.__name__}: Work.result() gave {got}")
        y = lib.zeros(1)
        if rank == 0:
            works = [d.irecv(y) for _ in range(n - 1)]
            senders = sorted(w.wait() and w.source_rank() for w in works)
            if senders != list(range(1, n)):
                bad.append(f"{lib.__name__}: irecv source_rank() gave {senders}")
        else:
            d.send(y, 0)


def ddp_run(lib, **options) -> list[np.ndarray]:
    """Two SGD steps of DDP on Linear(4, 3) then Linear(3, 1) with a Linear(3, 2) the forward
    skips; each rank starts from its own weights (equal after the construction broadcast,
    unless init_sync=False)."""
    body, head, skipped = lib.nn.Linear(4, 3), lib.nn.Linear(3, 1), lib.nn.Linear(3, 2)
    model = lib.nn.ModuleList([body, head, skipped])
    with lib.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) + k + rank).reshape(p.shape)))
    model.forward = lambda x: head(lib.tanh(body(x)))
    ddp = lib.nn.parallel.DistributedDataParallel(model, **options)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        x = lib.tensor(np.cos(np.arange(8.0) * (step + 1) + rank).reshape(2, 4).astype("f4"))
        opt.zero_grad()
        ddp(x).pow(2).sum().backward()
        opt.step()
    return [p.detach().numpy() for p in model.parameters()]


def check_ddp_options() -> None:
    """DDP gives PyTorch's parameters (every gradient averaged, also those whose hooks run
    before the last one), with PyTorch's DDP arguments too: static_graph (with a skipped
    layer), gradient_as_bucket_view, init_sync=False, bucket_cap_mb=None, output_device,
    dim, check_reduction."""
    for options in ({"find_unused_parameters": True, "bucket_cap_mb": 1e-5},
                    {"static_graph": True}, {"gradient_as_bucket_view": True,
                                             "find_unused_parameters": True},
                    {"init_sync": False, "find_unused_parameters": True, "bucket_cap_mb": None,
                     "output_device": None, "dim": 0, "check_reduction": False}):
        for e, t in zip(ddp_run(ember, **options), ddp_run(torch, **options)):
            if not np.allclose(e, t, rtol=1e-5, atol=1e-6):
                bad.append(f"DDP {options}: ember {e.tolist()}, torch {t.tolist()}")


def check_zero_bucket_view() -> None:
    """ZeroRedundancyOptimizer takes PyTorch's parameters_as_bucket_view: same steps."""
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

    from ember.distributed.optim import ZeroRedundancyOptimizer

    got = []
    for lib, zero in ((ember, ZeroRedundancyOptimizer), (torch, TorchZero)):
        model = lib.nn.Linear(3, 2)
        with lib.no_grad():
            for k, p in enumerate(model.parameters()):
                p.copy_(lib.tensor(np.cos(np.arange(p.numel()) + k).reshape(p.shape)))
        ddp = lib.nn.parallel.DistributedDataParallel(model)
        opt = zero(model.parameters(), lib.optim.Adam, lr=0.1, parameters_as_bucket_view=True)
        for _ in range(2):
            opt.zero_grad()
            ddp(lib.ones(2, 3) * (rank + 1)).pow(2).sum().backward()
            opt.step()
        got.append([p.detach().numpy() for p in model.parameters()])
    for e, t in zip(*got):
        if not np.allclose(e, t, rtol=1e-5, atol=1e-6):
            bad.append(f"ZeRO parameters_as_bucket_view: ember {e.tolist()}, torch {t.tolist()}")


check_bitwise_reduce_ops()
check_p2p_and_work()
check_ddp_options()
check_zero_bucket_view()
check_outside_group()
report(bad or "ok")
# gloo's threads stop before the interpreter does: one left running that drops the last
# reference to a tensor during interpreter exit aborts the process (seen once in CI)
tdist.barrier()
tdist.destroy_process_group()
