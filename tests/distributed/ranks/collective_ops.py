"""Rank code: every in-place collective, on several dtypes, checked against NumPy on the
values all ranks are known to hold."""

import numpy as np
import pytest
from tests.distributed.harness import report
from tests.distributed.ranks.c10d_checks import check_coalesced_and_names, check_split_group
from tests.distributed.ranks.comm_hooks import check_comm_hooks
from tests.distributed.ranks.debug_checks import check_debug_level
from tests.distributed.ranks.mesh_checks import check_mesh_and_subgroups
from tests.distributed.ranks.store_checks import check_file_store, check_tcp_store

import ember
import ember.distributed as dist

dist.set_debug_level(dist.DebugLevel.INFO)  # set before init_process_group: it stays
dist.init_process_group("mpi")
assert dist.get_debug_level() is dist.DebugLevel.INFO
dist.set_debug_level(dist.DebugLevel.OFF)
rank, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


def values(r: int, dtype: str, shape=(3, 4)) -> np.ndarray:
    """Rank r's input: small integers, exact in every dtype."""
    base = (np.arange(np.prod(shape)).reshape(shape) * (r + 2)) % 5 + r
    return base.astype(bool) if dtype == "bool" else base


def t(a: np.ndarray, dtype: str) -> ember.Tensor:
    return ember.tensor(a, dtype=getattr(ember, dtype if dtype != "bool" else "bool_"))


def same(x: ember.Tensor, expected: np.ndarray) -> None:
    got = x.to(ember.float64).numpy() if x.dtype is not ember.bool_ else x.numpy()
    np.testing.assert_array_equal(got, np.asarray(expected, dtype=got.dtype))


for dtype in DTYPES:
    everyone = [values(r, dtype) for r in range(n)]
    mine = everyone[rank]
    stack = np.stack([e.astype(np.float64) for e in everyone])
    exact = {
        "sum": stack.sum(0),
        "max": stack.max(0),
        "min": stack.min(0),
        "product": stack.prod(0),
    }
    if dtype == "bool":
        exact = {
            "sum": stack.any(0),
            "max": stack.any(0),
            "min": stack.all(0),
            "product": stack.all(0),
        }
    for op, expected in exact.items():
        x = t(mine, dtype)
        before = x._version
        dist.all_reduce(x, op=op)
        same(x, expected)
        assert x._version > before
    if dtype.startswith(("float", "bfloat")):
        x = t(mine, dtype)
        dist.all_reduce(x, op=dist.ReduceOp.MEAN)
        np.testing.assert_allclose(x.to(ember.float64).numpy(), stack.mean(0), rtol=1e-2)
    else:
        with pytest.raises(ember.DTypeError, match="mean"):
            dist.all_reduce(t(mine, dtype), op="mean")

    x = t(mine, dtype)
    dist.broadcast(x, src=n - 1)
    same(x, everyone[n - 1])

    outs = [t(np.zeros_like(mine), dtype) for _ in range(n)]
    dist.all_gather(outs, t(mine, dtype))
    for o, e in zip(outs, everyone):
        same(o, e)

    big = t(np.zeros((n * 3, 4), mine.dtype), dtype)
    dist.all_gather_into_tensor(big, t(mine, dtype))
    same(big, np.concatenate(everyone))

    if dtype != "bool":
        out = t(np.zeros((3, 4), mine.dtype), dtype)
        dist.reduce_scatter(out, [t(mine * (i + 1), dtype) for i in range(n)])
        same(out, stack.sum(0) * (rank + 1))
        out = t(np.zeros((1, 4), mine.dtype), dtype)
        dist.reduce_scatter_tensor(out, t(mine[:n], dtype), op="max")
        same(out, stack[:, rank : rank + 1].max(0))

    x = t(mine, dtype)
    dist.reduce(x, dst=0, op="sum")
    same(x, exact["sum"] if rank == 0 else mine)

    got = [t(np.zeros_like(mine), dtype) for _ in range(n)] if rank == 1 else None
    dist.gather(t(mine, dtype), got, dst=1)
    if rank == 1:
        for o, e in zip(got, everyone):
            same(o, e)

    x = t(np.zeros_like(mine), dtype)
    dist.scatter(x, [t(e, dtype) for e in everyone] if rank == 0 else None, src=0)
    same(x, everyone[rank])

    # all_to_all with sizes differing between pairs: rank r sends r + j + 1 rows to rank j
    sends = [
        t(np.full((rank + j + 1, 2), rank * 10 + j).astype(mine.dtype), dtype) for j in range(n)
    ]
    recvs = [t(np.zeros((i + rank + 1, 2), mine.dtype), dtype) for i in range(n)]
    dist.all_to_all(recvs, sends)
    for i, o in enumerate(recvs):
        same(o, np.full((i + rank + 1, 2), i * 10 + rank).astype(mine.dtype))

# all_to_all_single, even and uneven
x = ember.arange(4 * n, dtype=ember.float32).reshape(2 * n, 2) + 100 * rank
out = ember.zeros(2 * n, 2)
dist.all_to_all_single(out, x)
expected = np.concatenate(
    [
        np.arange(4 * n, dtype=np.float32).reshape(2 * n, 2)[2 * rank : 2 * rank + 2] + 100 * r
        for r in range(n)
    ]
)
same(out, expected)
if n == 2:  # uneven: rank 0 keeps both its rows, rank 1 sends one row to each rank
    out = ember.zeros(3 if rank == 0 else 1, 2)
    dist.all_to_all_single(
        out,
        ember.ones(2, 2) * (rank + 1),
        output_split_sizes=[2, 1] if rank == 0 else [0, 1],
        input_split_sizes=[2, 0] if rank == 0 else [1, 1],
    )
    same(out, [[1, 1], [1, 1], [2, 2]] if rank == 0 else [[2, 2]])

# point to point, blocking and not; recv from any source reports the sender
if rank == 0:
    dist.send(ember.tensor([1.0, 2.0]), dst=1)
    w = dist.isend(ember.tensor([3.0], dtype=ember.float64), dst=1, tag=7)
    w.wait()
elif rank == 1:
    buf = ember.zeros(2)
    assert dist.recv(buf) == 0
    same(buf, [1.0, 2.0])
    buf = ember.zeros(1, dtype=ember.float64)
    w = dist.irecv(buf, src=0, tag=7)
    w.wait()
    assert w.is_completed()
    same(buf, [3.0])

# asynchronous collectives; results land at wait()
x = ember.ones(1000) * (rank + 1)
work = dist.all_reduce(x, async_op=True)
work.wait()
same(x, np.full(1000, n * (n + 1) / 2))
works = [dist.broadcast(ember.ones(3) * rank, src=0, async_op=True) for _ in range(3)]
assert all(w.wait() for w in works)

# a non-contiguous tensor is reduced in place too
base = ember.tensor(values(rank, "float32").astype(np.float32))
view = base.t()
dist.all_reduce(view)
same(base, sum(values(r, "float32") for r in range(n)))

# objects
objs = [None] * n
dist.all_gather_object(objs, {"rank": rank, "list": [rank] * rank})
assert objs == [{"rank": r, "list": [r] * r} for r in range(n)]
lst = ["a", rank] if rank == 0 else [None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == ["a", 0]
got = [None] * n if rank == 0 else None
dist.gather_object(("x", rank), got, dst=0)
assert rank != 0 or got == [("x", r) for r in range(n)]
out = [None]
dist.scatter_object_list(out, [f"to{r}" for r in range(n)] if rank == 0 else None, src=0)
assert out == [f"to{rank}"]
if rank == 0:
    dist.send_object_list([{"k": 1}], dst=1)
elif rank == 1:
    box = [None]
    assert dist.recv_object_list(box) == 0 and box == [{"k": 1}]

# MAX/MIN propagate a NaN from any rank to every position, as torch.max (MPI's built-in ops
# and gloo's keep or drop it by operand order)
for op in ("max", "min"):
    for who in range(n):
        for dtype in ("float32", "float64", "bfloat16"):
            for size in (1, 5, 1000):
                x = t(np.full(size, np.nan if rank == who else rank + 1.0), dtype)
                dist.all_reduce(x, op=op)
                assert x.isnan().all(), (op, who, dtype, size)
        x = t(np.full(4, np.nan if rank == who else float(rank)), "float32")
        dist.reduce(x, dst=0, op=op)
        assert rank != 0 or x.isnan().all()
        out = ember.zeros(3)
        dist.reduce_scatter(out, [ember.full((3,), np.nan if rank == who else 1.0)] * n, op=op)
        assert out.isnan().all()
    x = t(np.array([np.nan, 1.0, -np.inf, 2.0]) if rank == 0 else np.array([0.0, 3.0, 1.0, 2.0]),
          "float32")
    dist.all_reduce(x, op=op)
    same(x, [np.nan, 3.0, 1.0, 2.0] if op == "max" else [np.nan, 1.0, -np.inf, 2.0])

# bad input: clear errors naming the collective
with pytest.raises(ember.ShapeError, match="all_gather: tensor_list has 1 entries"):
    dist.all_gather([ember.zeros(2)], ember.zeros(2))
with pytest.raises(ember.ShapeError, match=r"all_gather: tensor_list\[0\] is \(3,\)"):
    dist.all_gather([ember.zeros(3)] * n, ember.zeros(2))
with pytest.raises(TypeError, match="all_reduce: expected an ember.Tensor, got ndarray"):
    dist.all_reduce(np.zeros(2))
with pytest.raises(ValueError, match="unknown reduce op 'avgg'"):
    dist.all_reduce(ember.zeros(2), op="avgg")
with pytest.raises(ValueError, match="at least one item"):
    dist.scatter_object_list([], [1] * n, src=0)
x = ember.ones(2) * rank
dist.all_reduce(x, op="avg")  # PyTorch's name for mean, as a string too
same(x, np.full(2, (n - 1) / 2))
assert dist.get_backend() == "mpi"
dist.barrier()
check_mesh_and_subgroups()
check_file_store()
check_debug_level()
check_tcp_store()
check_coalesced_and_names()
check_split_group()
check_comm_hooks()
report("ok")
