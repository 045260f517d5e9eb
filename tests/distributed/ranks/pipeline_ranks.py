"""Rank code: a Sequential cut into one stage per rank, trained with GPipe and 1F1B on
micro-batches, against the unsplit model on the whole batch (loss, gradients, and parameters
after optimizer steps); then the errors. Every rank builds the same model from one seed."""

import copy

import numpy as np
import pytest
from tests.distributed.harness import report

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed.pipeline import Pipeline

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
TOL = {ember.float64: dict(rtol=1e-10, atol=1e-13), ember.float32: dict(rtol=1e-5, atol=1e-7)}


def make_model(dtype):
    ember.manual_seed(0)
    layers = [nn.Linear(6, 16), nn.Tanh()]
    for _ in range(n):
        layers += [nn.Linear(16, 16), nn.GELU()]
    return nn.Sequential(*layers, nn.LayerNorm(16), nn.Linear(16, 3)).to(dtype)


def check(schedule, chunks, dtype, balance=None, steps=2):
    model = make_model(dtype)
    ref = copy.deepcopy(model)
    pipe = Pipeline(model, chunks, balance=balance, schedule=schedule)
    x, t = ember.randn(8, 6, dtype=dtype), ember.randn(8, 3, dtype=dtype)
    opt = ember.optim.SGD(pipe.parameters(), lr=0.1, momentum=0.9)
    opt_ref = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    mine = dict(pipe.module.named_parameters())
    for _ in range(steps):
        opt.zero_grad()
        opt_ref.zero_grad()
        loss = pipe.train_step(
            x if pipe.is_first else None, t if pipe.is_last else None, F.mse_loss
        )
        want = F.mse_loss(ref(x), t)
        want.backward()
        np.testing.assert_allclose(loss, want.item(), **TOL[dtype])
        for name, p in ref.named_parameters():
            if name in mine:
                np.testing.assert_allclose(mine[name].grad.numpy(), p.grad.numpy(), **TOL[dtype])
        opt.step()
        opt_ref.step()
    for name, p in mine.items():
        np.testing.assert_allclose(
            p.detach().numpy(), dict(ref.named_parameters())[name].detach().numpy(), **TOL[dtype]
        )
    out = pipe(x if pipe.is_first else None)
    if pipe.is_last:
        np.testing.assert_allclose(out.numpy(), ref(x).detach().numpy(), **TOL[dtype])
    else:
        assert out is None
    stats = pipe.stats
    assert 0.0 <= stats.idle_s <= stats.step_s and 0.0 <= stats.bubble <= 1.0
    assert stats.theoretical_bubble == (n - 1) / (chunks + n - 1)
    return pipe


for schedule in ("gpipe", "1f1b"):
    for chunks in (1, 4):
        check(schedule, chunks, ember.float64)
    check(schedule, 2, ember.float32)
# every stage owns a share of the layers, and a given balance is honoured
layers = len(make_model(ember.float64))
pipe = check("1f1b", 8, ember.float64, balance=[2] * (n - 1) + [layers - 2 * n + 2], steps=1)
assert len(pipe.module) == (2 if rank < n - 1 else layers - 2 * n + 2)
report(len(Pipeline(make_model(ember.float32), 2).module))

if n == 2:  # middle stages do not see the batch: they would wait for the job to abort
    with pytest.raises(ValueError, match=r"(inputs|target) of shape \(6, \d\) does not split"):
        Pipeline(make_model(ember.float32), 4).train_step(
            ember.randn(6, 6), ember.randn(6, 3), F.mse_loss
        )
with pytest.raises(ValueError, match="must give .* stages summing to the model's"):
    Pipeline(make_model(ember.float32), 2, balance=[1] * n)
with pytest.raises(ValueError, match="cannot cut 1 layers"):
    Pipeline(nn.Sequential(nn.Linear(2, 2)), 2)
with pytest.raises(TypeError, match="expected an nn.Sequential, got Linear"):
    Pipeline(nn.Linear(2, 2), 2)
with pytest.raises(ValueError, match="unknown schedule 'zb'"):
    Pipeline(make_model(ember.float32), 2, schedule="zb")
if n == 2:  # the docstring examples, written for 2 ranks, run as they say
    import doctest

    from ember.distributed import pipeline

    glob = {"ember": ember, "nn": nn, "F": F, "dist": dist}
    result = doctest.testmod(pipeline, extraglobs=glob)
    assert result.failed == 0 and result.attempted >= 5, result
report("ok")
