"""Batch, instance and layer norm without their affine part (``BatchNorm(affine=False)``,
``InstanceNorm``'s default, ``LayerNorm(elementwise_affine=False)``) keep their input and
statistics, not their output (as PyTorch's), so an in-place op may follow them: ``relu_``,
``F.relu(inplace=True)``, ``add_``, ``mul_``, with and without checkpoint."""

import importlib

import numpy as np
import pytest
import torch

import ember

IN_PLACE = {
    "relu_": lambda lib, y: y.relu_(),
    "relu(inplace)": lambda lib, y: lib.nn.functional.relu(y, inplace=True),
    "add_": lambda lib, y: y.add_(1.5),
    "mul_": lambda lib, y: y.mul_(y.detach() + 2),
}


def _run(lib, op, shape, checkpoint):
    bn = (lib.nn.BatchNorm2d if len(shape) == 4 else lib.nn.BatchNorm1d)(shape[1], affine=False)
    bn = bn.double()

    def fn(t):
        return IN_PLACE[op](lib, bn(t)) * 1

    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal(shape) * 2 + 1, requires_grad=True)
    if checkpoint is None:
        y = fn(x)
    else:
        run = importlib.import_module(lib.__name__ + ".utils.checkpoint").checkpoint
        y = run(fn, x, use_reentrant=checkpoint)
    (y.pow(3) * lib.tensor(rng.standard_normal(shape))).sum().backward()
    return x.grad.numpy(), bn.running_mean.numpy(), bn.running_var.numpy()


MODULES = {
    "InstanceNorm2d": lambda lib: lib.nn.InstanceNorm2d(3),
    "InstanceNorm2d(stats)": lambda lib: lib.nn.InstanceNorm2d(3, track_running_stats=True),
    "InstanceNorm1d": lambda lib: lib.nn.InstanceNorm1d(3),
    "LayerNorm": lambda lib: lib.nn.LayerNorm((5, 2), elementwise_affine=False),
}


@pytest.mark.parametrize("module", list(MODULES))
@pytest.mark.parametrize("op", list(IN_PLACE))
@pytest.mark.parametrize("checkpoint", [None, False])
def test_in_place_after_instance_and_layer_norm_matches_torch(module, op, checkpoint):
    results = []
    for lib in (torch, ember):
        m = MODULES[module](lib).double()
        shape = (4, 3, 5) if module == "InstanceNorm1d" else (4, 3, 5, 2)
        rng = np.random.default_rng(3)
        x = lib.tensor(rng.standard_normal(shape) * 2 + 1, requires_grad=True)

        def fn(t, m=m, lib=lib):
            return IN_PLACE[op](lib, m(t)) * 1

        run = importlib.import_module(lib.__name__ + ".utils.checkpoint").checkpoint
        y = fn(x) if checkpoint is None else run(fn, x, use_reentrant=checkpoint)
        (y.pow(3) * lib.tensor(rng.standard_normal(shape))).sum().backward()
        results.append([x.grad.numpy(), y.detach().numpy()] + [
            b.numpy() for b in m.buffers() if b.dtype == lib.float64])
    for got, want in zip(*results[::-1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", list(IN_PLACE))
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5, 2)])
@pytest.mark.parametrize("checkpoint", [None, False, True])
def test_in_place_after_batch_norm_without_affine_matches_torch(op, shape, checkpoint):
    for got, want in zip(_run(ember, op, shape, checkpoint), _run(torch, op, shape, checkpoint),
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_values_and_gradients_match_torch(dtype):
    x = np.random.default_rng(1).standard_normal((8, 4, 3)).astype(dtype)
    results = []
    for lib in (torch, ember):
        bn = lib.nn.BatchNorm1d(4, affine=False).to(getattr(lib, dtype))
        t = lib.tensor(x, requires_grad=True)
        y = bn(t)
        (y.float() * lib.arange(3.0)).sum().backward()
        results.append([y.float().detach().numpy(), t.grad.float().numpy(),
                        bn.running_var.float().numpy()])
    tol = 1e-5 if dtype == "float32" else 2e-3
    for got, want in zip(*results[::-1], strict=True):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_gradcheck_float64():
    x = ember.tensor(np.random.default_rng(2).standard_normal((5, 3, 4)), requires_grad=True)

    def fn(t):
        y = ember.nn.functional.batch_norm(t, None, None, training=True)
        return y.mul_(3).add_(0.5).square()

    assert ember.autograd.gradcheck(fn, (x,))
    for norm in (lambda t: ember.nn.functional.instance_norm(t),
                 lambda t: ember.nn.functional.layer_norm(t, (4,))):
        assert ember.autograd.gradcheck(lambda t, norm=norm: norm(t).mul_(3).square(), (x,))
    assert ember.autograd.gradgradcheck(lambda t: ember.nn.functional.batch_norm(
        t, None, None, training=True), (x,))
