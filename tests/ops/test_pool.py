"""Pooling against PyTorch and finite differences."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

MAX2D = [
    S(arg(2, 3, 5, 5), kernel_size=2),
    S(arg(2, 3, 5, 5, noncontig=True), kernel_size=3, stride=2, padding=1),
    S(arg(2, 3, 5, 5), kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
    S(arg(2, 3, 5, 5), kernel_size=2, stride=2, ceil_mode=True),
    S(arg(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
    S(arg(3, 5, 5), kernel_size=2, stride=1),                       # unbatched, overlapping
    S(arg(0, 3, 4, 4), kernel_size=2),                              # empty batch
    # channels-last, as a convolution leaves it (numba's loops, when installed)
    S(arg(2, 3, 6, 6, channels_last=True), kernel_size=2),
    S(arg(2, 3, 5, 5, channels_last=True), kernel_size=3, stride=2, padding=1),
    S(arg(2, 3, 5, 5, channels_last=True), kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
    S(arg(1, 2, 6, 5, channels_last=True), kernel_size=3, stride=2, padding=1, ceil_mode=True),
    S(arg(2, 4, 5, 5, channels_last=True), kernel_size=2, stride=1),  # overlapping
    S(arg(0, 3, 4, 4, channels_last=True), kernel_size=2),             # empty batch
]
AVG2D = [
    S(arg(2, 3, 5, 5), kernel_size=2),
    S(arg(2, 3, 5, 5, noncontig=True), kernel_size=3, stride=2, padding=1),
    S(arg(2, 3, 5, 5), kernel_size=3, stride=2, padding=1, count_include_pad=False),
    S(arg(2, 3, 5, 5), kernel_size=2, stride=2, ceil_mode=True),
    S(arg(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True,
      count_include_pad=False),
    S(arg(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
    S(arg(2, 3, 5, 5), kernel_size=(2, 3), divisor_override=5),
    S(arg(3, 4, 4), kernel_size=2),                                 # unbatched
]

CASES = [
    OpCase("max_pool2d", F.max_pool2d, TF.max_pool2d, MAX2D),
    OpCase("max_pool2d_indices", lambda x, **k: F.max_pool2d(x, return_indices=True, **k),
           lambda x, **k: TF.max_pool2d(x, return_indices=True, **k), MAX2D[1:5]),
    OpCase("max_pool1d", F.max_pool1d, TF.max_pool1d, [
        S(arg(2, 3, 7), kernel_size=3, stride=2, padding=1),
        S(arg(3, 6), kernel_size=2, dilation=2, ceil_mode=True),
    ]),
    OpCase("max_pool3d", F.max_pool3d, TF.max_pool3d, [
        S(arg(1, 2, 3, 4, 4), kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1)),
    ]),
    OpCase("avg_pool2d", F.avg_pool2d, TF.avg_pool2d, AVG2D),
    OpCase("avg_pool1d", F.avg_pool1d, TF.avg_pool1d, [
        S(arg(2, 3, 7), kernel_size=3, stride=2, padding=1, count_include_pad=False),
        S(arg(3, 7), kernel_size=2, ceil_mode=True),
    ]),
    OpCase("adaptive_avg_pool2d", F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, [
        S(arg(2, 3, 5, 5), output_size=(2, 3)),                     # windows overlap
        S(arg(2, 3, 6, 4, noncontig=True), output_size=(3, 2)),     # divides evenly
        S(arg(2, 3, 5, 7), output_size=1),                          # global average
        S(arg(2, 3, 5, 7), output_size=(None, 4)),
        S(arg(3, 4, 5), output_size=(7, 3)),                        # unbatched, upsampling
    ]),
    OpCase("adaptive_max_pool2d", F.adaptive_max_pool2d, TF.adaptive_max_pool2d, [
        S(arg(2, 3, 5, 5), output_size=(2, 3)),                     # windows overlap
        S(arg(2, 3, 6, 4, noncontig=True), output_size=(3, 2)),
        S(arg(2, 3, 5, 7), output_size=(None, 4)),
        S(arg(3, 4, 5), output_size=(7, 3)),                        # unbatched, upsampling
    ]),
    OpCase("adaptive_max_pool2d_indices",
           lambda x, **k: F.adaptive_max_pool2d(x, return_indices=True, **k),
           lambda x, **k: TF.adaptive_max_pool2d(x, return_indices=True, **k),
           [S(arg(2, 3, 5, 7), output_size=(3, 4))]),
    OpCase("adaptive_max_pool1d", F.adaptive_max_pool1d, TF.adaptive_max_pool1d, [
        S(arg(2, 3, 7), output_size=3),
    ]),
    OpCase("adaptive_avg_pool1d", F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, [
        S(arg(2, 3, 7), output_size=3),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_max_pool_ties_send_gradient_to_one_element_like_torch():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1:3, 1:3] = 1.0  # every 3×3 window has several equal maxima
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    F.max_pool2d(mine, 3, stride=1, padding=1).sum().backward()
    TF.max_pool2d(ref, 3, stride=1, padding=1).sum().backward()
    np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_max_pool_indices_are_flat_per_plane():
    x = ember.arange(16.0).reshape(1, 1, 4, 4)
    _, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.dtype is ember.int64
    assert idx.tolist() == [[[[5, 7], [13, 15]]]]


def test_pool_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(ember.ShapeError, match="at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ember.ShapeError, match="too small"):
        F.max_pool2d(ember.randn(1, 1, 2, 2), 3)
    with pytest.raises(ember.ShapeError, match="4-D"):
        F.avg_pool2d(ember.randn(5, 5), 2)
    with pytest.raises(ember.DTypeError):
        F.avg_pool2d(ember.ones(1, 1, 4, 4, dtype=ember.int32), 2)  # (int64: as torch's)


def test_adaptive_avg_pool_float32_uneven_windows():
    x = np.random.default_rng(0).standard_normal((2, 4, 9, 11)).astype(np.float32)
    mine = F.adaptive_avg_pool2d(ember.from_numpy(x), (4, 5))
    ref = TF.adaptive_avg_pool2d(torch.from_numpy(x), (4, 5))
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_max_pool_nan_wins_its_window_like_torch():
    x = np.arange(32.0).reshape(1, 2, 4, 4)
    x[0, 0, 1, 1] = np.nan  # second element of its 2×2 window (the masked loop's fallback)
    for k, kw in [(2, {}), (3, {"stride": 1, "padding": 1})]:
        mine = ember.from_numpy(x.copy()).requires_grad_()
        ref = torch.from_numpy(x.copy()).requires_grad_()
        out, want = F.max_pool2d(mine, k, **kw), TF.max_pool2d(ref, k, **kw)
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        out.sum().backward()
        want.sum().backward()
        np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_max_pool_large_kernel_and_int_input():
    # more than 127 kernel elements: the window numbers are int32, not int8
    x = np.random.default_rng(1).standard_normal((2, 3, 300))
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    out, want = F.max_pool1d(mine, 150, stride=100), TF.max_pool1d(ref, 150, stride=100)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    (out * out).sum().backward()
    (want * want).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy())
    ints = ember.tensor([[[3, 1, 4, 1, 5, 9]]])
    assert F.max_pool1d(ints, 2).tolist() == [[[3, 4, 9]]]


def test_max_pool_float32_training_shape_matches_torch():
    # the cnn benchmark's first pool, at a small batch: forward, backward, double backward
    x = np.random.default_rng(2).standard_normal((3, 4, 28, 28)).astype(np.float32)
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    out, want = F.max_pool2d(mine, 2), TF.max_pool2d(ref, 2)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    (g,) = ember.autograd.grad((out ** 2).sum(), [mine], create_graph=True)
    (gt,) = torch.autograd.grad((want ** 2).sum(), [ref], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-6)
    (gg,) = ember.autograd.grad((g * g).sum(), [mine])
    (ggt,) = torch.autograd.grad((gt * gt).sum(), [ref])
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-6)


def test_max_pool_under_vmap_matches_torch():
    x = np.random.default_rng(3).standard_normal((3, 2, 2, 6, 6))
    got = ember.func.vmap(lambda t: F.max_pool2d(t, 3, stride=2, padding=1))(
        ember.from_numpy(x))
    want = torch.func.vmap(lambda t: TF.max_pool2d(t, 3, stride=2, padding=1))(
        torch.from_numpy(x))
    np.testing.assert_array_equal(got.numpy(), want.numpy())

    def loss(t, fn):  # per-sample gradients through the window gather and scatter
        return (fn(t * t, 2) ** 2).sum()

    got = ember.func.vmap(ember.func.grad(lambda t: loss(t, F.max_pool2d)))(
        ember.from_numpy(x))
    want = torch.func.vmap(torch.func.grad(lambda t: loss(t, TF.max_pool2d)))(
        torch.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_max_pool_gradient_of_non_finite_values_stays_in_its_window():
    # a non-finite gradient reaches only the winner, as PyTorch's (not NaN to its neighbours)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    for kw in [{"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}]:
        mine = ember.from_numpy(x.copy()).requires_grad_()
        ref = torch.from_numpy(x.copy()).requires_grad_()
        out, want = F.max_pool2d(mine, **kw), TF.max_pool2d(ref, **kw)
        g = np.ones(tuple(out.shape))
        g.flat[0] = np.inf
        out.backward(ember.from_numpy(g))
        want.backward(torch.from_numpy(g))
        np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_max_pool_of_a_channels_last_input_matches_torch():
    # a conv's output is channels-last memory; the gradient arriving from a flatten is not
    x = np.random.default_rng(13).standard_normal((2, 5, 6, 3)).astype(np.float32)
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    out = F.max_pool2d(mine.permute(0, 3, 1, 2), 2).reshape(2, -1)
    want = TF.max_pool2d(ref.permute(0, 3, 1, 2), 2).reshape(2, -1)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    w = np.random.default_rng(14).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * ember.from_numpy(w)).sum().backward()
    (want * torch.from_numpy(w)).sum().backward()
    np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_max_pool_without_gradient_computes_the_same_values():
    # no grad wanted: the values-only kernel (NaN wins, as in PyTorch); with grad: the winners
    x = ember.randn(2, 3, 9, 9)
    x[0, 1, 2, 2] = float("nan")
    with ember.no_grad():
        fast = F.max_pool2d(x, 3, stride=2, padding=1)
    full = F.max_pool2d(x.detach().requires_grad_(), 3, stride=2, padding=1)
    ref = TF.max_pool2d(torch.from_numpy(x.numpy()), 3, stride=2, padding=1)
    np.testing.assert_array_equal(fast.numpy(), ref.numpy())
    np.testing.assert_array_equal(full.detach().numpy(), ref.numpy())


@pytest.mark.parametrize("geometry", [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": (2, 3), "stride": 1, "dilation": (2, 1)},
])
def test_channels_last_max_pool_with_nan_inf_and_ties_matches_torch(numba_or_numpy,
                                                                   geometry):
    # values: ties (rounded), NaN and -inf inside windows, a window of -inf at a padded edge;
    # gradient: arrives channels-first (a flatten's), with an inf in it
    rng = np.random.default_rng(21)
    x = np.round(rng.standard_normal((3, 9, 10, 16)), 1).astype(np.float32)
    x[0, 1, 1, 2] = x[1, 4, 4, 7] = np.nan
    x[2, :2, :3, 5] = -np.inf
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    out = F.max_pool2d(mine.permute(0, 3, 1, 2), **geometry)
    want = TF.max_pool2d(ref.permute(0, 3, 1, 2), **geometry)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    g[1, 3, 0, 0] = np.inf
    out.backward(ember.from_numpy(g))
    want.backward(torch.from_numpy(g))
    # (overlapping windows sum in another order than PyTorch's)
    np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-6, atol=1e-6)
    with ember.no_grad():
        values = F.max_pool2d(mine.detach().permute(0, 3, 1, 2), **geometry)
    np.testing.assert_array_equal(values.numpy(), want.detach().numpy())


@pytest.mark.parametrize("channels_last", [False, True])
def test_max_pool_two_nans_in_a_window_send_the_gradient_to_the_last_like_torch(
        numba_or_numpy, channels_last):
    x = np.arange(2 * 16 * 4 * 4, dtype=np.float32).reshape(2, 4, 4, 16)
    x[1, 0, 0, 3] = x[1, 1, 1, 3] = np.nan  # both in the first 2×2 window of channel 3
    x = np.moveaxis(x, -1, 1) if channels_last else np.ascontiguousarray(np.moveaxis(x, -1, 1))
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_()
    out, want = F.max_pool2d(mine, 2), TF.max_pool2d(ref, 2)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2), "stride": 1, "dilation": (1, 2)},
])
def test_channels_last_winners_of_many_ties_and_nans_match_torch(numba_or_numpy, geometry,
                                                                 dtype):
    # a handful of values, so most windows tie; NaNs scattered: the gradient reaches the
    # first of equal elements, else the last NaN (the two-pass loop's order). Integer
    # gradients: overlapping windows' sums are exact in any order.
    rng = np.random.default_rng(23)
    x = rng.integers(0, 3, (2, 7, 8, 24)).astype(dtype)
    x[rng.random(x.shape) < 0.05] = np.nan
    mine = ember.from_numpy(x).requires_grad_()
    ref = torch.from_numpy(x).requires_grad_()
    out = F.max_pool2d(mine.permute(0, 3, 1, 2), **geometry)
    want = TF.max_pool2d(ref.permute(0, 3, 1, 2), **geometry)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    g = rng.integers(1, 5, tuple(want.shape)).astype(dtype)
    out.backward(ember.from_numpy(g))
    want.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


@pytest.mark.parametrize("channels_last", [False, True])
def test_max_pool_of_signed_zeros_keeps_the_first_like_torch(numba_or_numpy, channels_last):
    # +0.0 == -0.0: the first of the window wins, with or without gradient
    x = np.zeros((1, 4, 2, 2), np.float32)
    x[0, :, 1, 1] = -0.0
    x[0, 1::2, 0, 0] = -0.0
    x[0, 1::2, 1, 1] = 0.0
    if channels_last:
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    want = TF.max_pool2d(torch.from_numpy(x), 2).numpy()
    with ember.no_grad():
        values = F.max_pool2d(ember.from_numpy(x), 2).numpy()
    both = F.max_pool2d(ember.from_numpy(x).requires_grad_(), 2).detach().numpy()
    for got in (values, both):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_return_indices_of_a_window_of_minus_inf_name_its_first_element_inside():
    x = np.random.default_rng(22).standard_normal((1, 2, 6, 6)).astype(np.float32)
    x[0, 1] = -np.inf
    for geometry in ({"padding": 1, "stride": 1, "dilation": 2}, {"padding": 1, "stride": 2}):
        _, got = F.max_pool2d(ember.from_numpy(x), 3, return_indices=True, **geometry)
        _, want = TF.max_pool2d(torch.from_numpy(x), 3, return_indices=True, **geometry)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


HALF_POOLS = [
    ("max_pool1d", (2, 3, 9), {"kernel_size": 3, "return_indices": True}),
    ("max_pool2d", (4, 3, 6, 6), {"kernel_size": 2}),
    ("max_pool2d", (2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "return_indices": True}),
    ("max_pool3d", (2, 3, 4, 4, 4), {"kernel_size": 2, "return_indices": True}),
    ("avg_pool1d", (2, 3, 9), {"kernel_size": 3}),
    ("avg_pool2d", (2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool3d", (2, 3, 4, 4, 4), {"kernel_size": 2}),
    ("adaptive_avg_pool1d", (2, 3, 7), {"output_size": 4}),
    ("adaptive_avg_pool2d", (2, 3, 7, 5), {"output_size": (3, 2)}),
    ("adaptive_max_pool1d", (2, 3, 7), {"output_size": 3, "return_indices": True}),
    ("adaptive_max_pool2d", (2, 3, 7, 5), {"output_size": (3, 2), "return_indices": True}),
    ("adaptive_max_pool3d", (2, 3, 5, 5, 5), {"output_size": 2}),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name, shape, kwargs", HALF_POOLS)
def test_pooling_in_half_precision_matches_torch(name, shape, kwargs, dtype):
    # torch's float32 on the same rounded values (it has no half avg_pool3d on the CPU)
    rng = np.random.default_rng(23)
    x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(getattr(ember, dtype))
    g = ember.from_numpy(rng.standard_normal(shape).astype(np.float32))
    x.requires_grad_()
    ref = torch.from_numpy(x.detach().float().numpy()).requires_grad_()
    got, want = getattr(F, name)(x, **kwargs), getattr(TF, name)(ref, **kwargs)
    if kwargs.get("return_indices"):
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
        got, want = got[0], want[0]
    assert got.dtype is x.dtype
    np.testing.assert_allclose(got.detach().float().numpy(), want.detach().numpy(),
                               rtol=1e-2, atol=1e-2)
    g = g[tuple(slice(n) for n in got.shape)]
    (got * g.to(x.dtype)).sum().backward()
    (want * torch.from_numpy(g.numpy())).sum().backward()
    assert x.grad.dtype is x.dtype
    np.testing.assert_allclose(x.grad.float().numpy(), ref.grad.numpy(), rtol=2e-2, atol=2e-2)


def test_max_pool_of_bool_with_padding_is_the_windows_any():
    # (PyTorch refuses bool; Ember pools it, padding with False: it raised NumPy's "Invalid
    # integer data type 'b'" with padding and pooled without)
    x = np.random.default_rng(0).random((1, 2, 5, 6)) > 0.7
    got = F.max_pool2d(ember.tensor(x), 3, 1, padding=1)
    want = TF.max_pool2d(torch.tensor(x, dtype=torch.float32), 3, 1, padding=1) > 0
    assert got.dtype is ember.bool and np.array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
                                  "avg_pool2d", "avg_pool3d"])
@pytest.mark.parametrize("batched", [False, True])
def test_pooling_zero_channels_is_refused_as_torch_but_a_zero_batch_is_not(name, batched):
    nd = int(name[-2])
    shape = (1,) * batched + (0,) + (3,) * nd
    with pytest.raises(RuntimeError):
        getattr(TF, name)(torch.zeros(shape), 1)
    shown = re.escape(str(shape))
    with pytest.raises(ember.errors.ShapeError, match=rf"{name}: .*no channels.*{shown}"):
        getattr(F, name)(ember.zeros(shape), 1)
    empty_batch = (0, 2) + (3,) * nd  # (a batch of none is an empty result in both)
    assert getattr(F, name)(ember.zeros(empty_batch), 1).shape == \
        getattr(TF, name)(torch.zeros(empty_batch), 1).shape
