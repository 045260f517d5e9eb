"""Rank code: the reductions and scans of DTensors (sum/mean over dim=()/[], i.e. every dim;
var/std, norm, prod, max/min with and without dim, argmax/argmin, cumsum/cumprod; methods
and ember.* functions) on every placement, even and uneven shapes, against the same op on
the full tensor: values and gradients. Reports [cases, {case: failure}]."""

import itertools

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
from ember.distributed.tensor import (
    DTensor,
    Partial,
    Replicate,
    Shard,
    UnsupportedShardingError,
    distribute_tensor,
    init_device_mesh,
    ops,
)

dist.init_process_group("mpi")
n = dist.get_world_size()
mesh = init_device_mesh("cpu", (n,))
ember.manual_seed(0)
CASES = {
    "var()": lambda x: x.var(),
    "var(0)": lambda x: x.var(0),
    "std(1,keep)": lambda x: x.std(1, keepdim=True),
    "var(c=0)": lambda x: x.var(1, correction=0),
    "ember.var(-1)": lambda x: ember.var(x, -1),
    "sum(())": lambda x: x.sum(()),
    "sum([],keep)": lambda x: x.sum([], keepdim=True),
    "ember.mean(x,[])": lambda x: ember.mean(x, []),
    "mean((),keep)": lambda x: x.mean((), keepdim=True),
    "var(())": lambda x: x.var(()),
    "std([],keep)": lambda x: x.std([], keepdim=True),
    "var(False)": lambda x: x.var(False),
    "std(True)": lambda x: x.std(True),
    "norm()": lambda x: x.norm(),
    "norm(1,dim0)": lambda x: x.norm(1, dim=0),
    "ember.norm(dim=1)": lambda x: ember.norm(x, dim=1),
    "norm(2,())": lambda x: x.norm(2, ()),
    "norm(fro,[],keep)": lambda x: x.norm("fro", [], True),
    "prod(0)": lambda x: x.prod(0),
    "prod()": lambda x: x.prod(),
    "max()": lambda x: x.max(),
    "min()": lambda x: x.min(),
    "max(0).values": lambda x: x.max(0).values,
    "max(1).indices": lambda x: x.max(1).indices,
    "min(1,keep).values": lambda x: x.min(1, keepdim=True).values,
    "ember.max(x,2x)": lambda x: ember.max(x, x * 2),
    "min(-x)": lambda x: x.min(-x),
    "maximum(-x)": lambda x: x.maximum(-x),
    "argmax()": lambda x: x.argmax(),
    "argmin(0)": lambda x: x.argmin(0),
    "argmax(1,keep)": lambda x: x.argmax(1, keepdim=True),
    "cumsum(0)": lambda x: x.cumsum(0),
    "cumsum(-1)": lambda x: x.cumsum(-1),
    "cumprod(1)": lambda x: x.cumprod(1),
    "ember.cumsum(1)": lambda x: ember.cumsum(x, 1),
}
PLACES = [Shard(0), Shard(1), Replicate(), Partial()]


def place(x, p):
    if isinstance(p, Partial):
        return DTensor.from_local(x.detach() / n, mesh, [Partial()]).detach()
    return distribute_tensor(x.detach(), mesh, [p])


def failure(fn, x, p):
    want = fn(x)
    got = fn(place(x, p)).full_tensor()
    if got.shape != want.shape or not np.allclose(got.numpy(), want.numpy(), atol=1e-10):
        return f"values {got.numpy().ravel()[:4]} vs {want.numpy().ravel()[:4]}"
    if want.dtype.is_floating_point and not isinstance(p, Partial):
        xr = x.clone().requires_grad_()
        fn(xr).sum().backward()
        dr = distribute_tensor(x.detach(), mesh, [p]).requires_grad_()
        fn(dr).full_tensor().sum().backward()
        if not np.allclose(dr.grad.full_tensor().numpy(), xr.grad.numpy(), atol=1e-10):
            return "gradients differ"
    return None


out, count = {}, 0
for (name, fn), s, p in itertools.product(CASES.items(), [(4, 6), (5, 3)], PLACES):
    count += 1
    try:
        why = failure(fn, ember.randn(*s, dtype=ember.float64), p)
    except Exception as e:
        why = f"{type(e).__name__}: {e}"[:200]
    if why:
        out[f"{name} {s} {p}"] = why
# a DTensor and an ordinary tensor: the mixing error in either order (the DTensor first read
# the tensor as max's dim: "dim must be an int")
d, a = distribute_tensor(ember.randn(4, 6), mesh, [Shard(0)]), ember.randn(4, 6)
for call in (lambda: ember.max(d, a), lambda: d.min(a), lambda: ember.max(a, d)):
    with pytest.raises(UnsupportedShardingError, match=r"(maximum|minimum): .*mixed with ordinary"):
        call()
# max/min(dim) gather their input once for values and indices (it was twice)
moves = []
redistributing = ops.redistribute_local
ops.redistribute_local = lambda *a: moves.append(1) or redistributing(*a)
distribute_tensor(ember.randn(4, 6), mesh, [Shard(0)]).min(0)
ops.redistribute_local = redistributing
report([count, out, len(moves)])
