"""Batch and instance norm in training with ``eps <= 0``: a channel whose variance plus eps is
0 (a constant one with ``eps=0``) has invstd 0, as PyTorch's, so it gives 0 and zero
gradients (not NaN), in eager, compiled and exported code; with ``eps < 0`` and a channel whose
variance is ``-eps`` it gives NaN, as PyTorch's; ``F.batch_norm`` still refuses ``eps <= 0`` in
training, as PyTorch's."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck


def _input(shape):
    x = np.random.default_rng(0).standard_normal(shape)
    x[:, 0] = 2.0  # a constant channel
    x[0, 1] = -1.5  # a constant (sample, channel) plane: instance norm's case
    return x


def _batch(lib, x, w, b, rm, rv, eps=0.0):
    return lib.batch_norm(x, w, b, rm, rv, True, 0.1, eps, False)


def _instance(lib, x, w, b, rm, rv, eps=0.0):
    return lib.nn.functional.instance_norm(x, rm, rv, w, b, eps=eps)


@pytest.mark.parametrize("shape", [(4, 3, 5), (8, 3, 16, 16)])  # (the second: numba's size)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("norm", [_batch, _instance])
def test_values_gradients_and_second_derivatives_match_torch(norm, affine, shape):
    x = _input(shape)
    seed = np.random.default_rng(1).standard_normal(shape)
    results = []
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        w = b = None
        if affine:
            w = lib.tensor([1.5, -0.5, 2.0], dtype=lib.float64, requires_grad=True)
            b = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64, requires_grad=True)
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        y = norm(lib, xt, w, b, rm, rv)
        leaves = [xt] + ([w, b] if affine else [])
        grads = lib.autograd.grad((y * lib.tensor(seed)).sum(), leaves, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads[:2]), leaves[:2])
        results.append([t.detach().numpy() for t in (y, rm, rv, *grads, *second)])
    assert np.isfinite(results[1][0]).all()
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("norm", [_batch, _instance])
def test_negative_eps_equal_to_minus_the_variance_gives_nan_as_torch(norm):
    x = 3 * np.random.default_rng(3).standard_normal((2, 3, 2))
    x[:, 0] = [0.0, 1.0]  # biased variance 0.25 (per batch channel and per instance plane)
    results = []
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor([1.5, -0.5, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64, requires_grad=True)
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        y = norm(lib, xt, w, b, rm, rv, eps=-0.25)
        y.sum().backward()
        results.append([t.detach().numpy() for t in (y, rm, rv, xt.grad, w.grad, b.grad)])
    assert np.isnan(results[1][0][:, 0]).all()
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_finite_differences_with_eps_zero():
    x = ember.tensor(np.random.default_rng(2).standard_normal((3, 2, 4)), requires_grad=True)
    w = ember.tensor([1.5, -0.5], dtype=ember.float64, requires_grad=True)

    def f(x, w):
        return ember.nn.functional.instance_norm(x, weight=w, eps=0.0) + \
            ember.batch_norm(x, w, None, None, None, True, 0.1, 0.0, False)

    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def test_compiled_and_exported_give_zero(tmp_path):
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort

    x = ember.tensor(_input((2, 3, 4)))

    class Norm(ember.nn.Module):
        def forward(self, x):
            return ember.nn.functional.instance_norm(x, eps=0.0)

    want = Norm()(x).numpy()
    assert want[:, 0].tolist() == np.zeros((2, 4)).tolist()
    compiled = ember.jit.compile(Norm())
    for _ in range(2):  # the tracing call, then the generated code
        np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-12)
    path = tmp_path / "norm.onnx"
    ember.onnx.export(Norm(), (x,), str(path))
    session = ort.InferenceSession(str(path))
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_functional_batch_norm_still_refuses_eps_zero_in_training():
    with pytest.raises(ember.errors.ArgumentError, match="eps must be positive"):
        ember.nn.functional.batch_norm(ember.randn(4, 3), None, None, training=True, eps=0.0)
