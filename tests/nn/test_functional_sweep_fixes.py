"""nn.functional behaviour a differential sweep against torch.nn.functional found different,
each checked against torch: adaptive average pooling of non-finite values, grid_sample at
NaN points, Huber and smooth L1 gradients at infinite differences, zero divisors and strides,
norms of half inputs with float32 parameters."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F

LIBS = ((torch, TF), (ember, F))


def run_both(fn, *arrays, grad=True):
    """``fn(lib, F, *tensors)`` with torch and with Ember: per library the output (float64
    NumPy), its dtype's name and the gradients of ``output.sum()`` wrt the inputs."""
    results = []
    for lib, functional in LIBS:
        xs = [lib.tensor(a, requires_grad=grad) for a in arrays]
        y = fn(lib, functional, *xs)
        grads = []
        if grad:
            y.double().sum().backward()
            grads = [x.grad.double().numpy() for x in xs]
        results.append((y.detach().double().numpy(), str(y.dtype).split(".")[-1], grads))
    return results


def assert_same(fn, *arrays, grad=True, tol=1e-12):
    (t, t_dtype, t_grads), (e, e_dtype, e_grads) = run_both(fn, *arrays, grad=grad)
    assert e_dtype == t_dtype
    np.testing.assert_allclose(e, t, rtol=tol, atol=tol)
    for eg, tg in zip(e_grads, t_grads, strict=True):
        np.testing.assert_allclose(eg, tg, rtol=tol, atol=tol)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_adaptive_avg_pool_keeps_non_finite_values_in_their_windows(nd, value):
    x = np.random.default_rng(0).standard_normal((2, 3) + (7, 5, 4)[:nd])
    x.flat[::11] = value
    out = (3, 2, 3)[:nd]
    assert_same(lambda lib, F, x: getattr(F, f"adaptive_avg_pool{nd}d")(x, out), x, grad=False)


def test_adaptive_avg_pool_uneven_windows_gradient():
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 5))
    assert_same(lambda lib, F, x: F.adaptive_avg_pool2d(x, (3, 4)), x)
    assert_same(lambda lib, F, x: F.interpolate(x, size=(3, 2), mode="area"), x)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_reads_a_nan_point_at_zero(mode, padding_mode, align_corners):
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    grid = np.array([[[[np.nan, 0.3], [0.2, np.nan], [np.inf, -0.4], [-np.inf, 0.5]]]])
    assert_same(lambda lib, F, x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
                x, grid, grad=False)


@pytest.mark.parametrize("loss", ["huber_loss", "smooth_l1_loss"])
def test_huber_and_smooth_l1_gradient_at_infinite_difference(loss):
    x = np.array([np.nan, 1.0, np.inf, 1.0, -np.inf, 0.3, 5.0])
    y = np.array([0.0, np.inf, np.inf, 2.0, 0.0, 0.0, -np.inf])
    (t, _, (tg,)), (e, _, (eg,)) = run_both(
        lambda lib, F, x: getattr(F, loss)(x, lib.tensor(y), reduction="none"), x)
    np.testing.assert_array_equal(e, t)
    np.testing.assert_array_equal(eg, tg)


@pytest.mark.parametrize("call", [
    lambda lib, F: F.avg_pool2d(lib.ones(1, 1, 4, 4), 2, divisor_override=0),
    lambda lib, F: F.avg_pool3d(lib.ones(1, 1, 2, 2, 2), 2, divisor_override=0),
    lambda lib, F: F.unfold(lib.ones(1, 1, 4, 4), 2, stride=0),
    lambda lib, F: F.unfold(lib.ones(1, 1, 4, 4), 2, dilation=0),
    lambda lib, F: F.fold(lib.ones(1, 4, 4), (3, 3), 2, stride=0),
])
def test_zero_divisor_and_stride_raise_clear_errors(call):
    for lib, functional in LIBS:
        with pytest.raises((RuntimeError, ValueError)) as info:
            call(lib, functional)
        assert info.type is not ZeroDivisionError
        if lib is ember:
            assert "zero" in str(info.value) or "positive" in str(info.value)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("norm", ["batch_norm", "instance_norm", "layer_norm", "group_norm"])
def test_norms_of_half_inputs_with_float32_parameters(dtype, norm):
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((4, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)
    w5, b5 = rng.standard_normal(5), rng.standard_normal(5)

    def fn(lib, F, x):
        half, w_, b_ = x.to(getattr(lib, dtype)), lib.tensor(w).float(), lib.tensor(b).float()
        if norm == "layer_norm":
            return F.layer_norm(half, (5,), lib.tensor(w5).float(), lib.tensor(b5).float())
        if norm == "group_norm":
            return F.group_norm(half, 3, w_, b_)
        stats = lib.zeros(3), lib.ones(3)
        return getattr(F, norm)(half, *stats, w_, b_, True)

    assert_same(fn, x, tol=1e-2)


@pytest.mark.parametrize("norm", ["batch_norm", "layer_norm", "group_norm"])
def test_norms_refuse_other_dtype_mixes(norm):
    def fn(lib, F):
        x, w = lib.ones(4, 3, 3, dtype=lib.float64), lib.ones(3)
        if norm == "layer_norm":
            return F.layer_norm(x, (3,), w, w)
        if norm == "group_norm":
            return F.group_norm(x, 3, w, w)
        return F.batch_norm(x, None, None, w, w, True)

    messages = []
    for lib, functional in LIBS:
        with pytest.raises(RuntimeError) as info:
            fn(lib, functional)
        messages.append(str(info.value))
    assert messages[1] == messages[0]
