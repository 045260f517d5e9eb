"""Pooling sweep 64 against PyTorch: windows a dilation steps past the whole input, integer
windows of the dtype's least value, int64 averages, float32 average bits, and the layouts of
max_unpool2d and channel_shuffle."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F

# (shape, kwargs): some windows hold no element of the input (dilation 2 over 1 element)
EMPTY_WINDOWS = [
    ((2, 3, 1), {"kernel_size": 2, "stride": 2, "padding": 1, "dilation": 2,
                 "ceil_mode": True}),
    ((1, 2, 1, 6), {"kernel_size": 2, "stride": 1, "padding": 1, "dilation": (2, 1)}),
    ((1, 2, 3, 1, 7), {"kernel_size": (2, 2, 1), "stride": (1, 2, 1), "padding": (0, 1, 0),
                       "dilation": (1, 2, 1)}),
]


@pytest.mark.parametrize("shape, kwargs", EMPTY_WINDOWS)
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_max_pool_window_outside_the_input_is_the_least_value_with_or_without_indices(
        shape, kwargs, dtype):
    # Ember's return_indices path read the input's element 0 there (1.0, not -inf)
    x = np.random.default_rng(0).integers(-9, 9, shape).astype(dtype)
    name = f"max_pool{len(shape) - 2}d"
    want, want_index = getattr(TF, name)(torch.from_numpy(x), return_indices=True, **kwargs)
    got, index = getattr(F, name)(ember.from_numpy(x), return_indices=True, **kwargs)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(index.numpy(), want_index.numpy())
    if dtype == "float64":
        plain = getattr(F, name)(ember.from_numpy(x), **kwargs)
        np.testing.assert_array_equal(plain.numpy(), want.numpy())


def test_max_pool_window_outside_the_input_passes_no_gradient():
    # (PyTorch's backward writes past the plane there; the pool without indices gives zeros)
    x = ember.arange(1.0, 7.0, dtype=ember.float64).reshape(1, 1, 1, 6).requires_grad_()
    values, _ = F.max_pool2d(x, 2, 1, 1, (2, 1), return_indices=True)
    assert bool((values == -np.inf).all())
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 1, 1, 6)))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
def test_max_pool_indices_of_integer_windows_of_the_least_value_name_the_first_inside(dtype):
    # a window whose maximum is the dtype's least value (0 for uint8) names its first element
    # past the padding, as PyTorch's; with a dilation Ember named the clipped padding element
    least = np.iinfo(dtype).min
    x = np.random.default_rng(1).choice([least, least, 1], (2, 2, 5, 6)).astype(dtype)
    for kwargs in ({"padding": 1, "dilation": 2, "stride": 1},
                   {"padding": (1, 0), "dilation": (2, 1), "stride": 2, "ceil_mode": True}):
        want = TF.max_pool2d(torch.from_numpy(x), 3, return_indices=True, **kwargs)
        got = F.max_pool2d(ember.from_numpy(x), 3, return_indices=True, **kwargs)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name, args", [("max_pool1d", (2,)), ("max_pool2d", (2,)),
                                        ("max_pool3d", (1,)), ("adaptive_max_pool2d", (2,))])
def test_max_pools_refuse_complex_input_as_torch(name, args):
    # complex numbers have no order: Ember pooled them by NumPy's lexicographic maximum
    shape = (1, 2) + (4,) * (3 if name == "max_pool3d" else 2 if "2d" in name else 1)
    with pytest.raises(RuntimeError):
        getattr(TF, name)(torch.zeros(shape, dtype=torch.complex64), *args)
    for indices in (False, True):
        with pytest.raises(ember.errors.DTypeError, match=rf"{name}: complex64 .*\.abs\(\)"):
            getattr(F, name)(ember.zeros(shape, dtype=ember.complex64), *args,
                             return_indices=indices)


INT_AVG = [
    ("avg_pool1d", (2, 3, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool1d", (3, 8), {"kernel_size": 2, "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool2d", (2, 3, 5, 6), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool2d", (2, 3, 5, 6), {"kernel_size": (2, 3), "divisor_override": 4}),
    ("avg_pool3d", (1, 2, 4, 5, 6), {"kernel_size": 2, "stride": 1, "padding": 1}),
]


@pytest.mark.parametrize("name, shape, kwargs", INT_AVG)
def test_avg_pool_of_int64_truncates_the_average_toward_zero_as_torch(name, shape, kwargs):
    # PyTorch averages int64 (only) as C does: the sum divided, truncated; Ember refused it
    x = np.random.default_rng(2).integers(-50, 50, shape)
    got = getattr(F, name)(ember.from_numpy(x), **kwargs)
    want = getattr(TF, name)(torch.from_numpy(x), **kwargs)
    assert got.dtype is ember.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_avg_pool_of_other_integers_is_still_refused():
    with pytest.raises(ember.errors.DTypeError, match="avg_pool2d: expected a floating"):
        F.avg_pool2d(ember.zeros(1, 1, 4, 4, dtype=ember.int32), 2)


@pytest.mark.parametrize("name, shape, kwargs", [
    ("avg_pool1d", (2, 3, 11), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool2d", (2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool2d", (2, 3, 7, 9), {"kernel_size": (3, 2), "divisor_override": 7}),
    ("avg_pool3d", (1, 2, 5, 6, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
])
@pytest.mark.parametrize("channels_last", [False, True])
def test_float32_avg_pool_is_bitwise_torch(name, shape, kwargs, channels_last):
    # the window sum divided by the divisor, as PyTorch (times the reciprocal differed in the
    # last bit in ~15% of the elements)
    x = torch.from_numpy(np.random.default_rng(3).standard_normal(shape).astype(np.float32))
    mine = ember.from_numpy(x.numpy())
    if channels_last and x.ndim == 4:
        x = x.contiguous(memory_format=torch.channels_last)
        mine = mine.contiguous(memory_format=ember.channels_last)
    got = getattr(F, name)(mine, **kwargs).numpy()
    np.testing.assert_array_equal(got, getattr(TF, name)(x, **kwargs).numpy())


@pytest.mark.parametrize("shape, kernel", [((2, 6, 4, 6), 2), ((2, 6, 5, 7), 3)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_max_unpool2d_keeps_a_channels_last_layout_as_torch(shape, kernel, channels_last):
    # its result was C-ordered whatever the input's layout; values and gradient unchanged
    x = np.random.default_rng(4).standard_normal(shape)
    t, e = torch.from_numpy(x), ember.from_numpy(x)
    if channels_last:
        t = t.contiguous(memory_format=torch.channels_last)
        e = e.contiguous(memory_format=ember.channels_last)
    values, indices = TF.max_pool2d(t, kernel, return_indices=True)
    mine, my_indices = F.max_pool2d(e, kernel, return_indices=True)
    values.requires_grad_()
    mine.requires_grad_()
    want = TF.max_unpool2d(values, indices, kernel, output_size=shape[2:])
    got = F.max_unpool2d(mine, my_indices, kernel, output_size=shape[2:])
    assert tuple(got.stride()) == want.stride()
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    g = np.random.default_rng(5).standard_normal(shape)
    want.backward(torch.from_numpy(g))
    got.backward(ember.from_numpy(g))
    np.testing.assert_array_equal(mine.grad.numpy(), values.grad.numpy())


@pytest.mark.parametrize("shape, memory_format", [((2, 6, 3, 4), "channels_last"),
                                                  ((2, 6, 3, 4, 5), "channels_last_3d"),
                                                  ((2, 6, 3, 4), "contiguous_format")])
def test_channel_shuffle_keeps_a_channels_last_layout_as_torch(shape, memory_format):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    t = torch.from_numpy(x).contiguous(memory_format=getattr(torch, memory_format))
    e = ember.from_numpy(x).contiguous(memory_format=getattr(ember, memory_format))
    want, got = TF.channel_shuffle(t, 3), F.channel_shuffle(e, 3)
    assert tuple(got.stride()) == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


HALF_MAX_POOLS = [
    ("max_pool1d", (2, 3, 6), {"kernel_size": 3, "stride": 1, "padding": 1}, False),
    ("max_pool1d", (3, 9), {"kernel_size": 4, "stride": 1, "padding": 2}, False),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 5, "stride": 1, "padding": 2}, True),
    ("max_pool2d", (2, 3, 9, 9), {"kernel_size": 3, "stride": 2, "dilation": 2,
                                  "ceil_mode": True}, False),
    ("max_pool3d", (1, 2, 4, 5, 6), {"kernel_size": 3, "stride": 1, "padding": 1}, False),
    ("adaptive_max_pool2d", (2, 3, 7, 9), {"output_size": (4, 5)}, False),
    ("fractional_max_pool2d", (2, 3, 9, 9), {"kernel_size": 3, "output_size": (5, 5)}, False),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name, shape, kwargs, channels_last", HALF_MAX_POOLS)
def test_half_max_pool_gradient_adds_in_the_half_type_bitwise_as_torch(dtype, name, shape,
                                                                        kwargs, channels_last):
    # torch's max-pool backward adds the gradients of a position's windows one by one in
    # the half type; summed in float32 and rounded once (ad63f6e5's gather gradient) ~5% of
    # the gradient of overlapping windows differed in the last bit
    for seed in range(12):
        rng = np.random.default_rng(seed)
        x = (rng.integers(-2, 3, shape) * 0.3 + rng.standard_normal(shape) * 0.01)
        want_x = torch.from_numpy(x).to(getattr(torch, dtype))
        got_x = ember.from_numpy(x).to(getattr(ember, dtype))
        if channels_last:
            want_x = want_x.contiguous(memory_format=torch.channels_last)
            got_x = got_x.contiguous(memory_format=ember.channels_last)
        want_kw, got_kw = dict(kwargs), dict(kwargs)
        if name.startswith("fractional"):
            samples = rng.random((shape[0], shape[1], 2))
            want_kw["_random_samples"] = torch.from_numpy(samples).to(want_x.dtype)
            got_kw["_random_samples"] = ember.from_numpy(samples).to(got_x.dtype)
        want_x.requires_grad_()
        got_x.requires_grad_()
        want, want_i = getattr(TF, name)(want_x, return_indices=True, **want_kw)
        got, got_i = getattr(F, name)(got_x, return_indices=True, **got_kw)
        np.testing.assert_array_equal(got_i.numpy(), want_i.numpy())
        g = rng.standard_normal(tuple(want.shape))
        want.backward(torch.from_numpy(g).to(want.dtype))
        got.backward(ember.from_numpy(g).to(got.dtype))
        np.testing.assert_array_equal(got_x.grad.float().numpy(), want_x.grad.float().numpy())
