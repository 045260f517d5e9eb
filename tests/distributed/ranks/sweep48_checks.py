"""Rank code for test_collectives_sweep48: what the MPI-vs-gloo sweep found different, each
check reporting its failures (an empty list passes)."""

import numpy as np
from tests.distributed.dist_check import check_global_gradients
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.distributed.functional as F
from ember.errors import ArgumentError, ArgumentTypeError

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
bad: list[str] = []


def raises(what: str, error: type, words: str, call) -> None:
    try:
        call()
        bad.append(f"{what}: no error")
    except error as exc:
        if words not in str(exc):
            bad.append(f"{what}: unclear {type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - the wrong kind of error is what is reported
        bad.append(f"{what}: {type(exc).__module__}.{type(exc).__name__}: {exc}")


def check_all_to_all_dtypes() -> None:
    """Outputs of another dtype than the inputs: a DTypeError on every rank before any
    message (MPI failed with MPI_ERR_TRUNCATE, or mixed the bytes when the sizes agreed)."""
    raises("all_to_all_single", ember.DTypeError, "float64", lambda: dist.all_to_all_single(
        ember.zeros(2 * n, dtype=ember.float64), ember.zeros(2 * n)))
    raises("all_to_all_single same size", ember.DTypeError, "int32", lambda:
           dist.all_to_all_single(ember.zeros(2 * n, dtype=ember.int32), ember.zeros(2 * n)))
    raises("all_to_all", ember.DTypeError, "different dtypes", lambda: dist.all_to_all(
        [ember.zeros(2, dtype=ember.float64) for _ in range(n)], [ember.zeros(2)] * n))
    out = [ember.zeros(2) for _ in range(n)]
    dist.all_to_all(out, [ember.ones(2) * (10 * rank + j) for j in range(n)])
    if [o.tolist() for o in out] != [[10.0 * j + rank] * 2 for j in range(n)]:
        bad.append(f"all_to_all values {out}")


def check_barrier_arguments() -> None:
    """barrier takes PyTorch's async_op and device_ids."""
    work = dist.barrier(async_op=True)
    if not (work.wait() and work.is_completed()):
        bad.append("barrier(async_op=True) work not completed")
    if dist.barrier(device_ids=None) is not None:
        bad.append("barrier() returned something")


def check_destroyed_group() -> None:
    """destroy_process_group(group) frees a sub-group; its later use raises DistError."""
    g = dist.new_group(list(range(n)))
    x = ember.ones(2)
    dist.all_reduce(x, group=g)
    dist.destroy_process_group(g)
    dist.destroy_process_group(g)  # (a second time does nothing)
    raises("all_reduce on a destroyed group", dist.DistError, "destroyed",
           lambda: dist.all_reduce(x, group=g))
    raises("barrier on a destroyed group", dist.DistError, "destroyed",
           lambda: dist.barrier(group=g))
    dist.all_reduce(x)  # the world still works
    if x.tolist() != [float(n * n)] * 2:
        bad.append(f"world all_reduce after destroying a sub-group: {x}")
    outside = dist.new_group([0])
    dist.destroy_process_group(outside)  # (on rank 1 and up: not a member, nothing to do)


def check_list_length_wording() -> None:
    """The object collectives' list-length error names entries, not tensors."""
    raises("all_gather_object", ember.ShapeError, "has 1 entries",
           lambda: dist.all_gather_object([None], rank))
    # a tensor where a list of tensors belongs: a TypeError (all_gather filled its rows)
    raises("all_gather of a tensor", ArgumentTypeError, "must be a list",
           lambda: dist.all_gather(ember.zeros(n, 2), ember.ones(2)))
    raises("gather of a tensor", ArgumentTypeError, "must be a list",  # (each its root)
           lambda: dist.gather(ember.ones(2), ember.zeros(n, 2), dst=rank))


def check_product_gradient_at_zeros() -> None:
    """functional.all_reduce(x, "product")'s gradient where some rank's x is 0: the product of
    the other ranks' values (it was product / x: NaN where x is 0, and 0 instead of the
    product elsewhere), against finite differences of the global function (float64)."""
    a = np.arange(6.0).reshape(2, 3) % (rank + 2) - 0.5 * rank  # zeros on rank 0, 1, 2 apart
    a[0, 0] = 0.0  # a zero on every rank
    x = ember.tensor(a)
    check_global_gradients(lambda v: F.all_reduce(v, "product") * v, x)
    check_global_gradients(lambda v: F.all_reduce(v, dist.ReduceOp.PRODUCT).sin(), x)
    v = ember.tensor(a, requires_grad=True)
    F.all_reduce(v, "product").sum().backward()
    everyone = [np.arange(6.0).reshape(2, 3) % (r + 2) - 0.5 * r for r in range(n)]
    for e in everyone:
        e[0, 0] = 0.0
    others = np.prod([e for r, e in enumerate(everyone) if r != rank], axis=0)
    if not np.allclose(v.grad.numpy(), n * others):
        bad.append(f"product gradient {v.grad.numpy().tolist()}, expected {(n * others).tolist()}")


def check_short_message() -> None:
    """recv / irecv of a message shorter than the tensor: a ShapeError on the receiver (the
    tensor's tail got uninitialized bytes)."""
    for call in (dist.recv, lambda t, src: dist.irecv(t, src).wait()):
        if rank == 0:
            dist.send(ember.ones(3), 1)
        elif rank == 1:
            raises("short message", ember.ShapeError, "holds 12 bytes",
                   lambda call=call: call(ember.zeros(4), 0))
    if rank == 0:
        dist.send(ember.ones(4), 1)
    elif rank == 1:
        x = ember.zeros(4)
        dist.irecv(x, 0).wait()
        if x.tolist() != [1.0] * 4:
            bad.append(f"irecv of a full message: {x}")


def check_group_roots() -> None:
    """group_src / group_dst (PyTorch's): the root as a rank inside the group; both or
    neither (broadcast, reduce) is an ArgumentError, an out-of-range one a DistError."""
    g = dist.new_group([n - 1, 0])  # group ranks follow world order: [0, n - 1]
    if rank in (0, n - 1):
        x = ember.ones(2) * rank
        dist.broadcast(x, group=g, group_src=1)
        if x.tolist() != [n - 1.0] * 2:
            bad.append(f"broadcast group_src=1: {x}")
        x = ember.ones(2) * (rank + 1)
        dist.reduce(x, group=g, group_dst=1)
        if rank == n - 1 and x.tolist() != [n + 1.0] * 2:
            bad.append(f"reduce group_dst=1: {x}")
        out = [ember.zeros(1) for _ in range(2)] if rank == n - 1 else None
        dist.gather(ember.ones(1) * rank, out, group=g, group_dst=1)
        if rank == n - 1 and [o.item() for o in out] != [0.0, n - 1.0]:
            bad.append(f"gather group_dst=1: {out}")
        y = ember.zeros(1)
        dist.scatter(y, [ember.ones(1) * 5, ember.ones(1) * 7] if rank == 0 else None,
                     group=g, group_src=0)
        if y.item() != (5.0 if rank == 0 else 7.0):
            bad.append(f"scatter group_src=0: {y}")
        raises("both", ArgumentError, "not both",
               lambda: dist.broadcast(x, src=0, group=g, group_src=0))
        raises("neither", ArgumentError, "group_dst", lambda: dist.reduce(x, group=g))
        raises("send to neither", ArgumentError, "group_dst", lambda: dist.send(x, group=g))
        if rank == 0:  # point to point by group rank: world 0 is group rank 0, n - 1 is 1
            dist.send(ember.ones(1) * 3, group=g, group_dst=1)
            dist.isend(ember.ones(1) * 4, group=g, group_dst=1).wait()
        else:
            y = ember.zeros(1)
            sender = dist.recv(y, group=g, group_src=0)
            z = ember.zeros(1)
            dist.irecv(z, group=g, group_src=0).wait()
            if (sender, y.item(), z.item()) != (0, 3.0, 4.0):
                bad.append(f"send/recv by group rank: {sender}, {y}, {z}")
        raises("out of range", dist.DistError, "group rank 2",
               lambda: dist.broadcast(x, group=g, group_src=2))


check_all_to_all_dtypes()
check_group_roots()
check_short_message()
check_product_gradient_at_zeros()
check_barrier_arguments()
check_destroyed_group()
check_list_length_wording()
report(bad or "ok")
