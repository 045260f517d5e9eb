"""Fractional max pooling (``F.fractional_max_pool2d/3d``, ``nn.FractionalMaxPool2d/3d``)
against torch: with the same ``_random_samples`` the same values and indices, exactly, and the
same gradients; finite differences; the layers and the errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests


def samples(*shape):
    return arg(*shape, low=0.0, high=1.0, grad=False)


def with_samples(fn, **fixed):
    return lambda x, u, **k: fn(x, _random_samples=u, **fixed, **k)


CASES = [
    OpCase("fractional_max_pool2d", with_samples(F.fractional_max_pool2d),
           with_samples(TF.fractional_max_pool2d), [
               S(arg(2, 2, 6, 5), samples(2, 2, 2), kernel_size=2, output_size=(4, 3)),
               S(arg(2, 7, 6, noncontig=True), samples(1, 2, 2), kernel_size=(3, 2),
                 output_ratio=(0.6, 0.6)),                              # unbatched
               S(arg(1, 2, 5, 5), samples(3, 2, 2), kernel_size=1, output_size=5)]),
    OpCase("fractional_max_pool2d_indices",
           with_samples(F.fractional_max_pool2d_with_indices),
           with_samples(TF.fractional_max_pool2d_with_indices),
           [S(arg(1, 2, 7, 6), samples(1, 2, 2), kernel_size=3, output_size=(4, 3))]),
    OpCase("fractional_max_pool3d", with_samples(F.fractional_max_pool3d, return_indices=True),
           with_samples(TF.fractional_max_pool3d, return_indices=True), [
               S(arg(1, 1, 5, 6, 4), samples(1, 1, 3), kernel_size=2, output_size=(3, 4, 2)),
               S(arg(2, 5, 4, 6), samples(1, 2, 3), kernel_size=(2, 1, 3),
                 output_ratio=(0.5, 0.75, 0.5))]),                      # unbatched
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_windows_match_torch_exactly(dtype):
    """Many sizes, ties and NaNs: the offsets are computed in the input's precision."""
    rng = np.random.default_rng(0)
    for trial in range(30):
        nd = 2 + trial % 2
        spatial = rng.integers(4, 30 if nd == 2 else 9, nd)
        kernel = tuple(int(rng.integers(1, 4)) for _ in range(nd))
        out = tuple(int(rng.integers(1, s - k + (2 if nd == 2 else 1)))
                    for s, k in zip(spatial, kernel))
        x = rng.integers(-2, 3, (2, 3, *spatial)).astype(dtype)  # many ties
        x[0, 1].flat[[0, 4]] = np.nan
        u = rng.random((2, 3, nd)).astype(dtype)
        name = f"fractional_max_pool{nd}d"
        values, indices = getattr(F, name)(ember.tensor(x), kernel, out, return_indices=True,
                                           _random_samples=ember.tensor(u))
        t_values, t_indices = getattr(TF, name)(torch.tensor(x), kernel, out,
                                                return_indices=True,
                                                _random_samples=torch.tensor(u))
        np.testing.assert_array_equal(indices.numpy(), t_indices.numpy())
        np.testing.assert_array_equal(values.numpy(), t_values.numpy())


def test_gradient_through_unpool_and_without_samples():
    x = ember.randn(2, 3, 9, 9, requires_grad=True)
    values, indices = F.fractional_max_pool2d(x, 3, output_ratio=0.5, return_indices=True)
    assert values.shape == (2, 3, 4, 4) and indices.dtype is ember.int64
    values.sum().backward()
    assert x.grad.sum().item() == 96  # one winner per window (a cell may win twice)
    flat = x.detach().reshape(2, 3, 81).gather(2, indices.reshape(2, 3, 16))
    np.testing.assert_array_equal(flat.reshape(2, 3, 4, 4).numpy(), values.detach().numpy())
    back = F.max_unpool2d(values, indices, 2, output_size=(9, 9))  # the indices unpool
    np.testing.assert_array_equal(back.detach().reshape(2, 3, 81).gather(
        2, indices.reshape(2, 3, 16)).numpy(), flat.numpy())


@pytest.mark.parametrize("nd", [2, 3])
def test_layers_match_torch(nd):
    name = f"FractionalMaxPool{nd}d"
    u = np.random.default_rng(1).random((2, 3, nd))
    t = getattr(torch.nn, name)(2, output_size=3, return_indices=True,
                                _random_samples=torch.tensor(u))
    e = getattr(nn, name)(2, output_size=3, return_indices=True,
                          _random_samples=ember.tensor(u))
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict())
    assert e.kernel_size == t.kernel_size and e.output_size == t.output_size
    x = np.random.default_rng(2).standard_normal((2, 3) + (6,) * nd)
    for mine, ref in zip(e(ember.tensor(x)), t(torch.tensor(x))):
        np.testing.assert_array_equal(mine.numpy(), ref.numpy())
    ratio = getattr(nn, name)(2, output_ratio=0.5)
    assert ratio.output_ratio == (0.5,) * nd and ratio.output_size is None
    assert list(ratio.state_dict()) == []
    assert ratio(ember.randn(1, 2, *(8,) * nd)).shape == (1, 2) + (4,) * nd


def test_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="pool height 3 too large relative to input height 5"):
        F.fractional_max_pool2d(x, 3, output_size=4)
    with pytest.raises(ValueError, match="pool time 2 too large"):  # torch's 3-D bound is <
        F.fractional_max_pool3d(ember.randn(1, 1, 5, 5, 5), 2, output_size=(4, 2, 2))
    with pytest.raises(ValueError, match=r"_random_samples must have shape \(N', 2, 2\)"):
        F.fractional_max_pool2d(x, 2, 2, _random_samples=ember.rand(1, 2, 3))
    with pytest.raises(ValueError, match="at least the batch size 2"):
        F.fractional_max_pool2d(ember.randn(2, 2, 5, 5), 2, 2, _random_samples=ember.rand(1, 2, 2))
    with pytest.raises(TypeError, match="input's dtype float32, got float64"):
        F.fractional_max_pool2d(x, 2, 2, _random_samples=ember.rand(1, 2, 2, dtype=ember.float64))
    with pytest.raises(TypeError, match="floating input"):
        F.fractional_max_pool2d(ember.ones(1, 1, 4, 4, dtype=ember.int64), 2, 2)
    with pytest.raises(ValueError, match=r"expected a 3-D \(C, H, W\) or 4-D"):
        F.fractional_max_pool2d(ember.randn(5, 5), 2, 2)
    with pytest.raises(ValueError, match="must be positive"):
        F.fractional_max_pool2d(x, 0, 2)
    with pytest.raises(ValueError, match="output_ratio must be a number or 2 numbers"):
        F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5)
    with pytest.raises(ValueError, match="either an output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)


@pytest.mark.parametrize("nd", [2, 3])
def test_empty_output_or_batch_as_torch(nd):
    """An output_ratio that rounds an axis to 0 (or an empty batch) gives an empty result, as
    torch's (no error), and a zero gradient."""
    name = f"fractional_max_pool{nd}d"
    for shape, ratio in [((1, 2) + (4,) * (nd - 1) + (2,), (0.4,) * nd),
                         ((0, 2) + (6,) * nd, (0.5,) * nd)]:
        x = ember.randn(*shape, requires_grad=True)
        values, indices = getattr(F, name)(x, 2, output_ratio=ratio, return_indices=True)
        expected = getattr(TF, name)(torch.randn(*shape), 2, output_ratio=ratio)
        assert values.shape == indices.shape == tuple(expected.shape)
        values.sum().backward()
        assert x.grad.shape == shape and not x.grad.numpy().any()


def test_vmap_over_images_and_samples_equals_a_loop():
    x, s = ember.randn(3, 2, 4, 9, 9), ember.rand(3, 2, 4, 2)

    def pool(x, s):
        return F.fractional_max_pool2d(x, 3, output_size=(4, 5), _random_samples=s)
    for in_dims, pick in (((0, 0), lambda i: s[i]), ((0, None), lambda i: s[0])):
        got = ember.vmap(pool, in_dims=in_dims)(x, s if in_dims[1] == 0 else s[0])
        want = ember.stack([pool(x[i], pick(i)) for i in range(3)])
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("nd", [2, 3])
def test_functional_given_both_sizes_takes_output_size_as_torch(nd):
    """F.fractional_max_poolNd(output_size=..., output_ratio=...) pools to output_size, as
    torch's functions (only the modules refuse both); Ember raised. sweep62j"""
    x = np.random.default_rng(3).standard_normal((1, 2) + (6,) * nd)
    samples = np.full((1, 2, nd), 0.3)
    name = f"fractional_max_pool{nd}d"
    out = getattr(F, name)(ember.tensor(x), 2, output_size=3, output_ratio=0.5,
                           _random_samples=ember.tensor(samples))
    ref = getattr(TF, name)(torch.tensor(x), 2, output_size=3, output_ratio=0.5,
                            _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
