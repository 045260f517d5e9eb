"""Rank code: the DTensor rules for joining, indexing, where, factories, dropout, attention,
the implicit redistributions and loss_parallel's cross entropy, each against one process on
the full tensors (float64; values and gradients). Every rank draws the same global tensors
from one seed. ``dtensor_ranks.py`` runs it at its end (one launch); it also runs alone."""

import copy
import doctest

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed.tensor import (
    DTensor,
    Partial,
    Replicate,
    Shard,
    UnsupportedShardingError,
    distribute_tensor,
    init_device_mesh,
)
from ember.distributed.tensor.parallel import ColwiseParallel, loss_parallel, parallelize_module
from ember.distributed.tensor.random import manual_seed

if not dist.is_initialized():  # run alone, not from dtensor_ranks.py
    dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
F64 = ember.float64
mesh = init_device_mesh("cpu", (n,))
PLACES = (Shard(0), Shard(1), Replicate(), Partial())


def close(got, want):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def leaf(x):
    return x.detach().clone().requires_grad_()


def check(fn, *fulls, places, weights=None):
    """fn on DTensors laid out by ``places`` equals fn on the full tensors, and so do the
    gradients of sum(fn(...) * weights); returns the DTensor result."""
    leaves = [leaf(x) for x in fulls]
    ds = [distribute_tensor(leaf(x), mesh, [p]) for x, p in zip(fulls, places)]
    got, want = fn(*ds), fn(*leaves)
    close(got.full_tensor(), want)
    w = weights if weights is not None else ember.linspace(-1, 1, want.numel(), dtype=F64)
    (want * w.view(want.shape)).sum().backward()
    (got.full_tensor() * w.view(want.shape)).sum().backward()
    for d, x in zip(ds, leaves):
        if x.grad is not None:
            close(d.grad.full_tensor(), x.grad)
    return got


ember.manual_seed(0)
a, b = ember.randn(5, 4, dtype=F64), ember.randn(5, 4, dtype=F64)  # 5 rows: uneven pieces

# -- cat / stack -------------------------------------------------------------------------------
for pa in PLACES:
    for pb in PLACES:
        for dim in (0, -1):
            y = check(lambda x, z, dim=dim: ember.cat([x, z], dim), a, b, places=(pa, pb))
            shards = [p for p in (pa, pb) if isinstance(p, Shard) and p.dim != dim % 2]
            partial = [p for p in (pa, pb) if p.is_partial()]
            assert y.placements == ((shards or partial or [Replicate()])[0],)  # PyTorch's
        y = check(lambda x, z: ember.stack([x, z], 1), a, b, places=(pa, pb))
        first = ([Shard(p.dim + (p.dim >= 1)) for p in (pa, pb) if isinstance(p, Shard)] or
                 [p for p in (pa, pb) if p.is_partial()] or [Replicate()])[0]
        assert y.placements == (first,)
with pytest.raises(ember.errors.ShapeError, match=r"cat: sizes of tensors must match except "
                   r"in dimension 0"):
    ember.cat([distribute_tensor(a, mesh), distribute_tensor(b[:, :3], mesh)])
with pytest.raises(ember.errors.ShapeError, match=r"stack: sizes of tensors must match"):
    ember.stack([distribute_tensor(a, mesh), distribute_tensor(b[:4], mesh)])

# -- indexing ----------------------------------------------------------------------------------
for p in PLACES:
    for index in [(slice(None), 1), (Ellipsis, slice(1, 3)), (None, slice(None), 2),
                  (slice(1, 4), slice(None)), (2,), (slice(None, None, 2), Ellipsis, None), -1]:
        y = check(lambda x, i=index: x[i], a, places=(p,))
        touched = {0: index not in [(slice(None), 1), (Ellipsis, slice(1, 3)),
                                    (None, slice(None), 2)], 1: True}
        if isinstance(p, Shard) and not touched[p.dim]:
            assert y.placements[0].is_shard(), (p, index, y.placements)
assert distribute_tensor(a, mesh, [Shard(0)])[:, 1:3].placements == (Shard(0),)
assert distribute_tensor(a, mesh, [Shard(1)])[None, 2].placements == (Shard(1),)
with pytest.raises(IndexError, match=r"index 5 is out of bounds for dimension 0 with size 5"):
    distribute_tensor(a, mesh, [Shard(1)])[5]
with pytest.raises(UnsupportedShardingError, match=r"__getitem__: .*only integers, slices"):
    distribute_tensor(a, mesh, [Shard(1)])[ember.tensor([0, 1])]

# -- where, clone, factories -------------------------------------------------------------------
cond = a > 0
for pa in PLACES:
    for pb in PLACES:
        y = check(lambda x, z: ember.where(distribute_tensor(cond, mesh, [Replicate()])
                                           if isinstance(x, DTensor) else cond, x, z),
                  a, b, places=(pa, pb))
    check(lambda x: ember.where(distribute_tensor(cond, mesh, [Shard(1)]) if isinstance(
        x, DTensor) else cond, x, 0.5), a, places=(pa,))
    check(lambda x: x.clone() * 2, a, places=(pa,))
    d = distribute_tensor(a, mesh, [pa])
    for like, value in ((ember.zeros_like, 0.0), (ember.ones_like, 1.0),
                        (lambda x: ember.full_like(x, 3.5), 3.5)):
        z = like(d)
        assert z.placements == ((Replicate(),) if pa.is_partial() else (pa,))
        close(z.full_tensor(), ember.full((5, 4), value, dtype=F64))
    assert ember.empty_like(d, dtype=ember.float32).dtype == ember.float32
    assert ember.zeros_like(d, requires_grad=True).requires_grad
    # the functional forms and shape methods that take DTensors
    check(lambda x: ember.clone(x).flatten() + ember.reshape(x, (20,)), a, places=(pa,))
    check(lambda x: ember.flatten(x.reshape(2, 10)).unsqueeze(0).unsqueeze(-1).squeeze(0), a,
          places=(pa,))
    check(lambda x: x[:, :1].squeeze(1) + ember.squeeze(x[:1]).sum(), a, places=(pa,))
    assert distribute_tensor(a, mesh, [pa]).unsqueeze(0).placements == (
        (Shard(pa.dim + 1),) if isinstance(pa, Shard) else (pa,))

even = ember.randn(4, 3, 2, dtype=F64)
y = check(lambda x: x.flatten() * 2, even, places=(Shard(0),))
assert y.placements == (Shard(0),)  # flattened rows in line with torch.chunk's pieces
assert distribute_tensor(a, mesh, [Shard(0)]).flatten().placements == (Replicate(),)  # not

# -- implicit redistribution where PyTorch redistributes ---------------------------------------
w = ember.randn(4, 3, dtype=F64)
for pa, pw in [(Shard(1), Replicate()), (Replicate(), Shard(0)), (Shard(0), Shard(1)),
               (Shard(1), Shard(1)), (Partial(), Shard(0)), (Partial(), Partial()),
               (Shard(0), Partial())]:
    y = check(lambda x, z: x @ z, a, w, places=(pa, pw))
    if (pa, pw) in [(Shard(1), Replicate()), (Replicate(), Shard(0))]:
        assert y.placements == (Partial(),)  # the replicated operand chunked: no traffic
for pa, pb in [(Shard(0), Shard(1)), (Partial(), Shard(0)), (Partial(), Partial())]:
    check(lambda x, z: x + z, a, b, places=(pa, pb))
    check(lambda x, z: x * z, a, b, places=(pa, pb))
    check(lambda x, z: x / (z * z + 1), a, b, places=(pa, pb))
for p in (Partial(), Partial("avg")):
    y = check(lambda x: x + 1.5, a, places=(p,))
    assert y.placements == (Replicate(),)  # as PyTorch
    check(lambda x: ember.exp(x).softmax(0), a, places=(p,))
check(lambda x: x.softmax(1) + F.layer_norm(x, (4,)), a, places=(Shard(1),))
check(lambda x: x.sum(0) * 2, a, places=(Shard(0),))
assert distribute_tensor(a, mesh, [Shard(0)]).mean(0).placements == (Partial(),)
# `**`, `ember.pow`, `.pow`: elementwise, a Partial operand reduced first (dist57: `d ** 2`
# was a TypeError, `ember.pow(d, 2)` had no rule)
for p in PLACES:
    y = check(lambda x: x ** 2 + 2 ** x + x.pow(3), a, places=(p,))
    assert y.placements == ((Replicate(),) if p.is_partial() else (p,))
check(lambda x, z: ember.pow(x, z), a.abs() + 0.1, b, places=(Shard(0), Shard(1)))
# amax / amin: a sharded reduced dimension gathered first (dist57: no rule before)
for p in PLACES:
    for dim, keep in [((), False), (0, False), (1, True), ((0, 1), False), (-1, False)]:
        check(lambda x, dim=dim, keep=keep: ember.amax(x, dim, keep) - x.amin(dim, keepdim=keep),
              a, places=(p,))
    assert distribute_tensor(a, mesh, [p]).amax(1).placements == (
        (Shard(0),) if p == Shard(0) else (Replicate(),))

# -- dropout -----------------------------------------------------------------------------------
big = ember.randn(16, 6, dtype=F64)
for p in (Replicate(), Shard(0), Shard(1), Partial()):
    manual_seed(7, mesh)
    d = distribute_tensor(leaf(big), mesh, [p])
    y = F.dropout(d, 0.4)
    assert y.placements == (p,)
    ref = leaf(big)
    want = F.dropout(ref, 0.4, generator=ember.Generator().manual_seed(7))
    close(y.full_tensor(), want)  # the single-process result from the same state
    (y.full_tensor() * big).sum().backward()
    (want * big).sum().backward()
    close(d.grad.full_tensor(), ref.grad)
# Replicate: one mask on every rank; shards: independent masks
masks = [None] * n
dist.all_gather_object(masks, (F.dropout(distribute_tensor(ember.ones(8, 8), mesh), 0.5)
                               .to_local() == 0).tolist())
assert all(m == masks[0] for m in masks)
halves = F.dropout(distribute_tensor(ember.ones(64, 4), mesh, [Shard(0)]), 0.5).full_tensor()
assert not ember.equal(halves[:32], halves[32:])
e = distribute_tensor(a, mesh, [Shard(0)])
assert F.dropout(e, 0.5, training=False) is e
with pytest.raises(ValueError, match="dropout"):
    F.dropout(e, 1.5)

# -- scaled_dot_product_attention sharded over batch or heads ----------------------------------
q, k, v = (ember.randn(3, 4, 5, 2, dtype=F64) for _ in range(3))
mask = ember.randn(4, 5, 5, dtype=F64)
for p in (Shard(0), Shard(1), Replicate()):
    y = check(lambda x, y_, z: F.scaled_dot_product_attention(x, y_, z, is_causal=True), q, k, v,
              places=(p, p, p))
    assert y.placements == (p,)
    y = check(lambda x, y_, z, m: F.scaled_dot_product_attention(x, y_, z, m), q, k, v, mask,
              places=(p, Replicate(), p, Replicate()))
    assert y.placements == (p,)
check(lambda x, y_, z: F.scaled_dot_product_attention(x, y_, z), q, k, v,
      places=(Shard(2), Shard(3), Replicate()))  # length / features: gathered first
with pytest.raises(UnsupportedShardingError, match=r"scaled_dot_product_attention: .*dropout"):
    dq = distribute_tensor(q, mesh, [Shard(0)])
    F.scaled_dot_product_attention(dq, dq, dq, dropout_p=0.1)

# -- loss_parallel: cross entropy on class-sharded logits --------------------------------------
logits = ember.randn(6, 7, dtype=F64)  # 7 classes: uneven pieces
labels = ember.tensor([0, 6, 3, -100, 4, 1])
cls_w = ember.rand(7, dtype=F64) + 0.5
cases = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.2},
         {"weight": cls_w}, {"weight": cls_w, "label_smoothing": 0.1, "reduction": "mean"},
         {"ignore_index": 3, "reduction": "none", "label_smoothing": 0.3}]
labels_3 = ember.tensor([0, 6, 3, 3, 4, 1])
for kwargs in cases:
    want_x = leaf(logits)
    target = labels_3 if "ignore_index" in kwargs else labels
    want = F.cross_entropy(want_x, target, **kwargs)
    sharded = distribute_tensor(leaf(logits), mesh, [Shard(1)])
    with loss_parallel():
        got = F.cross_entropy(sharded, target, **kwargs)
    assert got.placements == (Replicate(),) and got.shape == want.shape
    close(got.to_local(), want)
    (want * ember.linspace(1, 2, want.numel(), dtype=F64).view(want.shape)).sum().backward()
    (got * distribute_tensor(ember.linspace(1, 2, want.numel(), dtype=F64).view(want.shape),
                             mesh)).sum().backward()
    assert sharded.grad.placements == (Shard(1),)
    close(sharded.grad.full_tensor(), want_x.grad)
one = distribute_tensor(logits[0], mesh, [Shard(0)])  # one sample (C,)
with loss_parallel():
    close(F.cross_entropy(one, labels[1]).to_local(), F.cross_entropy(logits[0], labels[1]))
    with pytest.raises(ValueError, match=r"loss_parallel: cross_entropy expects logits "
                       r"sharded along the class dimension 1"):
        F.cross_entropy(distribute_tensor(logits, mesh, [Shard(0)]), labels)
    with pytest.raises(ember.errors.ShapeError, match=r"cross_entropy: expected a target of "
                       r"shape \(6,\)"):
        F.cross_entropy(distribute_tensor(logits, mesh, [Shard(1)]), labels[:4])
    with pytest.raises(ember.errors.IndexOutOfRange, match=r"cross_entropy: target class 7"):
        F.cross_entropy(distribute_tensor(logits, mesh, [Shard(1)]), labels_3 + 1)
# outside loss_parallel the logits are gathered, as PyTorch does
close(F.cross_entropy(distribute_tensor(logits, mesh, [Shard(1)]), labels).to_local(),
      F.cross_entropy(logits, labels))

# a colwise-parallel head (use_local_output=False) trained with loss_parallel
ember.manual_seed(5)
head = nn.Linear(4, 7).double()
par = parallelize_module(copy.deepcopy(head), mesh, ColwiseParallel(use_local_output=False))
feats = ember.randn(6, 4, dtype=F64)
want_loss = F.cross_entropy(head(feats), labels)
want_loss.backward()
out = par(feats)
assert out.placements == (Shard(1),)
with loss_parallel():
    loss = F.cross_entropy(out, labels)
    loss.backward()
close(loss.to_local(), want_loss)
close(par.weight.grad.full_tensor(), head.weight.grad)
close(par.bias.grad.full_tensor(), head.bias.grad)

# -- review: edge cases ------------------------------------------------------------------------
# enable_gqa: key/value with fewer heads, sharded over the batch (the heads stay whole)
gq, gk, gv = ember.randn(3, 4, 2, 2, dtype=F64), *(ember.randn(3, 2, 2, 2, dtype=F64)
                                                   for _ in range(2))
for p in (Shard(0), Replicate()):
    y = check(lambda x, y_, z: F.scaled_dot_product_attention(x, y_, z, enable_gqa=True), gq, gk,
              gv, places=(p, p, p))
    assert y.placements == (p,)
# loss_parallel checks its arguments as the dense cross_entropy does, and takes the target and
# weight only replicated (as PyTorch's)
with loss_parallel():
    sharded = distribute_tensor(logits, mesh, [Shard(1)])
    for smoothing in (-0.1, 1.5):
        with pytest.raises(ValueError, match=r"cross_entropy: label_smoothing must be in \[0, 1\]"):
            F.cross_entropy(sharded, labels, label_smoothing=smoothing)
    with pytest.raises(ember.errors.DTypeError, match="cross_entropy: expected a floating input"):
        F.cross_entropy(distribute_tensor(ember.ones(6, 7, dtype=ember.int64), mesh,
                                          [Shard(1)]), labels)
    with pytest.raises(RuntimeError, match=r"cross_entropy: .*target .*Shard\(dim=0\).*"
                       r"Replicate\(\)"):
        F.cross_entropy(sharded, distribute_tensor(labels, mesh, [Shard(0)]))
    with pytest.raises(RuntimeError, match=r"cross_entropy: .*weight .*Shard\(dim=0\)"):
        F.cross_entropy(sharded, labels, weight=distribute_tensor(cls_w, mesh, [Shard(0)]))
    close(F.cross_entropy(sharded, distribute_tensor(labels, mesh), weight=distribute_tensor(
        cls_w, mesh)).to_local(), F.cross_entropy(logits, labels, weight=cls_w))
# squeeze/unsqueeze (functional and methods) keep shards, with negative dims
for p in PLACES:
    check(lambda x: ember.squeeze(ember.unsqueeze(x, -1), -1).unsqueeze(1).squeeze((1,)), a,
          places=(p,))
# comparisons take DTensors (where's condition made from them), Partial reduced first
for p in PLACES:
    y = check(lambda x: ember.where(x > 0, x, 0.5 * x) + (0.2 >= x) * 1.0 + (x == x) * 2.0 +
              ember.lt(x, -0.3) * 3.0 + x.ne(0.1) * 1.0, a, places=(p,))
    assert y.placements == ((Replicate(),) if p.is_partial() else (p,))
# *_like check memory_format as the dense ops do
with pytest.raises(TypeError, match="zeros_like: memory_format"):
    ember.zeros_like(distribute_tensor(a, mesh), memory_format="channels_last")

# the docstring examples (written for 2 ranks) run as they say
if n == 2:
    import ember.distributed.tensor as dtensor_pkg
    import ember.distributed.tensor.parallel as parallel_pkg
    from ember.distributed.tensor import attention, random, tensor_ops
    from ember.distributed.tensor.parallel import loss

    glob = {"ember": ember, "nn": nn, "F": F, "mesh": mesh, "manual_seed": manual_seed, **{
        name: getattr(dtensor_pkg, name) for name in dtensor_pkg.__all__}, **{
        name: getattr(parallel_pkg, name) for name in parallel_pkg.__all__}}
    for mod in (tensor_ops, random, attention, loss):
        result = doctest.testmod(mod, extraglobs=glob, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, (mod.__name__, result)

if __name__ == "__main__":
    report("ok")
