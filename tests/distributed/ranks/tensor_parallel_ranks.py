"""Rank code: every tensor-parallel layer against the unsharded layer it was cut from (same
outputs, same input and parameter gradients once gathered), a whole GPT trained a few steps
both ways, and the errors. Every rank builds the same reference model from one seed."""

import copy
import doctest

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed import tensor_parallel as tp
from ember.distributed.tensor_parallel import (
    ColumnParallelLinear,
    RowParallelLinear,
    TensorParallelBlock,
    VocabParallelEmbedding,
    full_gradients,
    full_parameters,
    gather_shards,
    parallelize_gpt,
    shard,
)
from ember.models.gpt import Block, gpt

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
F64, F32 = ember.float64, ember.float32
TOL = {F64: dict(rtol=1e-10, atol=1e-12), F32: dict(rtol=1e-5, atol=1e-6)}


def close(got: ember.Tensor, want: ember.Tensor, dtype=F64) -> None:
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL[dtype])


def leaf(x: ember.Tensor) -> ember.Tensor:
    return x.detach().clone().requires_grad_()


def check_layer(
    ref: nn.Module,
    par: nn.Module,
    x: ember.Tensor,
    shard_in: bool = False,
    shard_out: bool = False,
    dtype=F64,
) -> None:
    """Forward and backward of ``ref`` on ``x`` and of ``par`` on ``x`` (or this rank's slice
    of it), with a loss weighting every output differently; compares outputs, input
    gradients and the gathered parameter gradients."""
    ref.zero_grad()
    weights = ember.randn(*ref(x).shape, dtype=x.dtype)
    xr = leaf(x)
    yr = ref(xr)
    (yr * weights).sum().backward()
    xp = leaf(shard(x, -1, rank, n) if shard_in else x)
    yp = par(xp)
    w = shard(weights, -1, rank, n) if shard_out else weights
    # a sharded output makes per-rank partial losses; their sum is the reference loss
    (yp * w).sum().backward()
    close(yp, shard(yr, -1, rank, n) if shard_out else yr, dtype)
    close(xp.grad, shard(xr.grad, -1, rank, n) if shard_in else xr.grad, dtype)
    grads = full_gradients(par)
    assert set(grads) == {k for k, _ in ref.named_parameters()}, sorted(grads)
    for name, p in ref.named_parameters():
        close(grads[name], p.grad, dtype)


ember.manual_seed(0)
x = ember.randn(3, 4, 8, dtype=F64)
for bias in (True, False):
    lin = nn.Linear(8, 12, bias=bias).double()
    check_layer(lin, ColumnParallelLinear.from_linear(lin), x)
    check_layer(lin, ColumnParallelLinear.from_linear(lin, gather_output=False), x, shard_out=True)
    lin = nn.Linear(8, 6, bias=bias).double()
    check_layer(lin, RowParallelLinear.from_linear(lin), x)
    check_layer(lin, RowParallelLinear.from_linear(lin, input_is_parallel=True), x, shard_in=True)

# column → row without a collective in between: Megatron's MLP
mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)).double()
par = nn.Sequential(
    ColumnParallelLinear.from_linear(mlp[0], gather_output=False),
    nn.GELU(),
    RowParallelLinear.from_linear(mlp[2], input_is_parallel=True),
)
check_layer(mlp, par, x)

# the vocabulary split: indices on every rank's rows, the padding row on rank 0's
emb = nn.Embedding(16, 5, padding_idx=1).double()
idx = ember.tensor([[0, 1, 15, 7], [8, 1, 3, 12]])
pemb = VocabParallelEmbedding.from_embedding(emb)
assert (pemb.vocab_start, pemb.vocab_end) == (rank * 16 // n, (rank + 1) * 16 // n)
weights = ember.randn(2, 4, 5, dtype=F64)
(emb(idx) * weights).sum().backward()
out = pemb(idx)
(out * weights).sum().backward()
close(out, emb(idx))
close(full_gradients(pemb)["weight"], emb.weight.grad)
assert float(full_gradients(pemb)["weight"][1].abs().sum()) == 0.0

# the GPT block, in float64 and float32
for dtype in (F64, F32):
    block = Block(16, 4).to(dtype)
    check_layer(block, TensorParallelBlock(block), ember.randn(2, 5, 16, dtype=dtype), dtype=dtype)

# a whole GPT: logits, loss, gradients, and three AdamW steps against the unsharded model
ember.manual_seed(1)
ref = gpt(vocab_size=32, block_size=8, n_layer=2, n_head=4, d_model=16).double()
model = parallelize_gpt(copy.deepcopy(ref))
assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in ref.parameters())
opt_ref = ember.optim.AdamW(ref.parameters(), lr=1e-2)
opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
idx = ember.randint(0, 32, (2, 8))
target = ember.randint(0, 32, (2, 8))
for step in range(3):
    losses = []
    for m, o in ((ref, opt_ref), (model, opt)):
        o.zero_grad()
        logits = m(idx)
        loss = F.cross_entropy(logits.view(-1, 32), target.view(-1))
        loss.backward()
        o.step()
        losses.append(loss)
    close(losses[1], losses[0])
    if step == 0:
        grads = full_gradients(model)
        for name, p in ref.named_parameters():
            close(grads[name], p.grad)
full = full_parameters(model)
for name, p in ref.named_parameters():
    close(full[name], p)

# layers made from sizes: every rank starts from the same unsharded weights (group rank 0's),
# even when the ranks are seeded differently
ember.manual_seed(100 + rank)
for layer, dim in (
    (ColumnParallelLinear(4, 8), 0),
    (RowParallelLinear(8, 6), 1),
    (VocabParallelEmbedding(8, 3), 0),
):
    full_w = gather_shards(layer.weight, dim)
    low, high = full_w.clone(), full_w.clone()
    dist.all_reduce(low, dist.ReduceOp.MIN)
    dist.all_reduce(high, dist.ReduceOp.MAX)
    assert bool((low == high).all()), type(layer).__name__

# errors
with pytest.raises(ValueError, match="dimension 0 of size 6 does not split into"):
    ColumnParallelLinear.from_linear(nn.Linear(2, 6), gather_output=False, stride=4)
with pytest.raises(ValueError, match="heads do not split"):
    TensorParallelBlock(Block(12, 3))
with pytest.raises(ValueError, match="gather_output=True needs stride=1"):
    ColumnParallelLinear.from_linear(nn.Linear(2, 6 * n), stride=3)
with pytest.raises(ValueError, match="max_norm is not supported"):
    VocabParallelEmbedding.from_embedding(nn.Embedding(4 * n, 2, max_norm=1.0))

# the docstring examples (written for 2 ranks) run as they say
if n == 2:
    glob = {"ember": ember, "nn": nn, "dist": dist}
    result = doctest.testmod(tp, extraglobs=glob, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 8, result
report("ok")
