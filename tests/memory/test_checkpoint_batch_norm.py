"""Batch norm inside ember.utils.checkpoint updates its running statistics as PyTorch's: once
per run (the recompute's too), before its values are saved, so a recompute that stops at its
last save (early stop) has made them as well."""

import importlib

import numpy as np
import pytest
import torch

import ember
from ember.autograd.graph import saved_tensors_hooks


def _run(lib, shape, momentum, affine, reentrant, last, steps=2):
    checkpoint = importlib.import_module(lib.__name__ + ".utils.checkpoint").checkpoint
    kind = lib.nn.BatchNorm2d if len(shape) == 4 else lib.nn.BatchNorm1d
    bn = kind(shape[1], momentum=momentum, affine=affine).double()
    fn = bn if last else (lambda t: lib.tanh(bn(t)) * 3)
    rng = np.random.default_rng(0)
    grads = []
    for _ in range(steps):  # (momentum=None: a cumulative average over the batches counted)
        x = lib.tensor(rng.standard_normal(shape) * 2 + 1, requires_grad=True)
        y = checkpoint(fn, x, use_reentrant=reentrant)
        (y.pow(3) * lib.tensor(rng.standard_normal(shape))).sum().backward()
        grads.append(x.grad.numpy())
    if affine:
        grads += [bn.weight.grad.numpy(), bn.bias.grad.numpy()]
    return (bn.running_mean.numpy(), bn.running_var.numpy(), int(bn.num_batches_tracked),
            grads)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (3, 2, 4, 5)])
@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("last", [True, False])
def test_running_statistics_and_gradients_match_torch(shape, momentum, affine, reentrant, last):
    mean, var, count, grads = _run(ember, shape, momentum, affine, reentrant, last)
    t_mean, t_var, t_count, t_grads = _run(torch, shape, momentum, affine, reentrant, last)
    assert count == t_count == 4  # (two steps, each run twice)
    np.testing.assert_allclose(mean, t_mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(var, t_var, rtol=1e-12, atol=1e-14)
    for g, t in zip(grads, t_grads, strict=True):
        np.testing.assert_allclose(g, t, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("affine", [True, False])
def test_the_last_pack_sees_the_updated_statistics_as_torch(affine):
    seen = {}
    for lib in (torch, ember):
        bn = lib.nn.BatchNorm1d(3, affine=affine).double()
        x = lib.tensor(np.arange(12.0).reshape(4, 3) ** 1.5, requires_grad=True)
        got = []

        def pack(t, got=got, bn=bn):
            got.append((tuple(t.shape), bn.running_mean.numpy().copy()))
            return t

        graph = lib.autograd.graph if lib is torch else ember.autograd.graph
        with graph.saved_tensors_hooks(pack, lambda t: t):
            bn(x).sum().backward()
        seen[lib.__name__] = got
    # the last value saved (the statistics) is packed once they are written (torch packs its
    # inputs before its kernel runs; Ember packs all after, or keeps leaves by reference)
    assert seen["ember"] and seen["torch"][-1][1].any()
    np.testing.assert_allclose(seen["ember"][-1][1], seen["torch"][-1][1], rtol=1e-12)


def test_hooks_pack_in_order_and_unpack_the_packed_values():
    packed, unpacked = [], []
    bn = ember.nn.BatchNorm1d(3).double()
    x = ember.tensor(np.arange(12.0).reshape(4, 3) ** 1.5, requires_grad=True)

    def pack(t):
        packed.append(t.detach().clone())
        return len(packed) - 1

    def unpack(i):
        unpacked.append(i)
        return packed[i]

    with saved_tensors_hooks(pack, unpack):
        y = (bn(x) * x).exp()
    y.sum().backward()
    expected = x.detach().clone().requires_grad_()
    bn2 = ember.nn.BatchNorm1d(3).double()
    (bn2(expected) * expected).exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-12)
    assert sorted(unpacked) == list(range(len(packed))) and len(packed) >= 3


def test_a_failing_batch_norm_leaves_the_hooks_as_they_were():
    from ember.autograd.saved_hooks import SAVED_HOOKS

    bn = ember.nn.BatchNorm1d(3)
    with saved_tensors_hooks(lambda t: t, lambda t: t) as hooks:
        with pytest.raises(ember.errors.ShapeError):
            bn(ember.ones(4, 2, requires_grad=True))
        assert SAVED_HOOKS.top is hooks.hooks
        y = bn(ember.randn(4, 3, requires_grad=True))
    assert SAVED_HOOKS.top is None
    y.sum().backward()
