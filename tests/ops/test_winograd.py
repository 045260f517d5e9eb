"""3×3 convolutions and their weight gradients by Winograd's F(2×2, 3×3): the same values as
im2col's (float64, every layout and padding), PyTorch's in float32 where the size rule picks
it, and gradients of every order through it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.backend import compiled
from ember.ops import winograd
from tests.ops.test_im2col_kernel import _layouts

pytest.importorskip("numba")


@pytest.fixture
def served(monkeypatch):
    """Counts the convolutions Winograd runs."""
    calls = []
    original = winograd.conv3x3

    def spy(*args):
        calls.append(args[0].shape)
        return original(*args)

    monkeypatch.setattr(winograd, "conv3x3", spy)
    return calls


@pytest.fixture
def graded(monkeypatch):
    """Counts the weight gradients Winograd runs."""
    calls = []
    original = winograd.weight_grad3x3

    def spy(*args):
        got = original(*args)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(winograd, "weight_grad3x3", spy)
    return calls


@pytest.fixture
def everywhere(monkeypatch, served):
    """Winograd for every 3×3 stride-1 convolution, however small."""
    monkeypatch.setattr(winograd, "_MIN_TILES", 1)
    monkeypatch.setattr(winograd, "_MIN_CHANNELS", 1)
    return served


def _im2col(fn):
    saved = winograd._MIN_TILES
    winograd._MIN_TILES = 1 << 60
    try:
        return fn()
    finally:
        winograd._MIN_TILES = saved


@pytest.mark.parametrize("shape, padding", [
    ((2, 3, 8, 8), 1), ((3, 5, 9, 7), 1), ((2, 4, 6, 11), 0), ((1, 2, 5, 5), 2),
    ((2, 3, 4, 3), (1, 0)), ((4, 6, 3, 3), 0),
])
@pytest.mark.parametrize("whole", [False, True], ids=["shares", "whole-batch"])
def test_equals_im2col_in_every_layout(everywhere, monkeypatch, shape, padding, whole):
    if whole:  # the path of a large weight: all tiles at once, each GEMM on BLAS's threads
        monkeypatch.setattr(winograd, "_SHARED_WEIGHT_BYTES", 0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    w = ember.tensor(rng.standard_normal((7, shape[1], 3, 3)))
    want = _im2col(lambda: F.conv2d(ember.tensor(x), w, padding=padding).numpy())
    for name, view in _layouts(x).items():
        got = F.conv2d(ember.from_numpy(view), w, padding=padding)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=name)
    assert len(everywhere) == len(_layouts(x))


@pytest.mark.parametrize("shape, out_channels, padding", [
    ((2, 3, 8, 8), 7, 1), ((3, 5, 9, 7), 4, 1), ((2, 4, 6, 11), 6, 0), ((1, 2, 5, 5), 3, 2),
    ((2, 3, 4, 3), 5, (1, 0)),
])
def test_weight_gradient_equals_im2col_in_every_layout(everywhere, graded, shape, out_channels,
                                                       padding):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((out_channels, shape[1], 3, 3))

    def weight_grad(x_view, g_view=None):
        we = ember.tensor(w, requires_grad=True)
        out = F.conv2d(ember.from_numpy(x_view), we, padding=padding)
        g = rng.standard_normal(out.shape) if g_view is None else g_view
        out.backward(ember.from_numpy(g))
        return we.grad.numpy(), g

    want, g = _im2col(lambda: weight_grad(x))
    for name, view in _layouts(x).items():
        for g_name, g_view in _layouts(g).items():
            np.testing.assert_allclose(weight_grad(view, g_view)[0], want, rtol=1e-12,
                                       atol=1e-12, err_msg=f"{name}, gradient {g_name}")
    assert graded and all(graded)


def test_weight_gradient_is_the_same_bits_on_every_run(graded):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 32, 16, 16)).astype(np.float32)
    g = rng.standard_normal((8, 40, 16, 16)).astype(np.float32)
    saved = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        runs = [winograd.weight_grad3x3(x, g, (1, 1)) for _ in range(4)]
    finally:
        ember.set_num_threads(saved)
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])


def test_weight_gradient_with_fewer_tiles_than_threads(everywhere, graded):
    rng = np.random.default_rng(7)
    x, g = rng.standard_normal((1, 2, 2, 2)), rng.standard_normal((1, 3, 2, 2))  # one tile
    saved = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        got = winograd.weight_grad3x3(x, g, (1, 1))
    finally:
        ember.set_num_threads(saved)
    want = torch.ops.aten.convolution_backward(
        torch.from_numpy(g), torch.from_numpy(x), torch.zeros(3, 2, 3, 3, dtype=torch.float64),
        None, (1, 1), (1, 1), (1, 1), False, (0, 0), 1, (False, True, False))[1]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


def test_a_float64_gradient_of_a_float32_convolution(graded):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 32, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32)
    g = rng.standard_normal((8, 32, 16, 16))
    ew, tw = ember.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(w).requires_grad_()
    F.conv2d(ember.from_numpy(x), ew, padding=1).backward(ember.from_numpy(g))
    TF.conv2d(torch.from_numpy(x), tw, padding=1).backward(torch.from_numpy(g).float())
    assert ew.grad.dtype == ember.float32  # (the gradient cast to float32 first, as torch's)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_a_large_weight_gradient_stays_im2col(graded):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 256, 8, 8)).astype(np.float32)  # 4.5 MiB transformed
    w = (rng.standard_normal((288, 256, 3, 3)) / 48).astype(np.float32)
    g = rng.standard_normal((8, 288, 8, 8)).astype(np.float32)
    ew, tw = ember.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(w).requires_grad_()
    F.conv2d(ember.from_numpy(x), ew, padding=1).backward(ember.from_numpy(g))
    TF.conv2d(torch.from_numpy(x), tw, padding=1).backward(torch.from_numpy(g))
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)
    assert graded == [False]


def test_float32_matches_torch_forward_and_backward_at_the_size_it_runs(served, graded):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 32, 16, 16)).astype(np.float32)  # 512 tiles
    w = (rng.standard_normal((48, 32, 3, 3)) / 17).astype(np.float32)
    g = rng.standard_normal((8, 48, 16, 16)).astype(np.float32)
    ex, ew = (ember.from_numpy(a.copy()).requires_grad_() for a in (x, w))
    tx, tw = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w))
    out = F.conv2d(ex, ew, padding=1)
    out.backward(ember.from_numpy(g))
    want = TF.conv2d(tx, tw, padding=1)
    want.backward(torch.from_numpy(g))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=2e-5)
    exact = torch.ops.aten.convolution_backward(  # float64: sums of 2048 products of ~100
        torch.from_numpy(g).double(), tx.double(), tw.double(), None, (1, 1), (1, 1), (1, 1),
        False, (0, 0), 1, (False, True, False))[1].detach().numpy()
    error = np.abs(ew.grad.numpy() - exact).max() / np.abs(exact).max()
    assert error < 2e-6  # (PyTorch's own float32 one: 9e-7)
    assert len(served) == 2  # the forward and the input gradient (itself a convolution)
    assert graded == [True]


@pytest.mark.parametrize("batch, runs", [(8, True), (4, False)])
def test_a_large_weight_runs_from_128_tiles(served, batch, runs):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((batch, 256, 8, 8)).astype(np.float32)  # 16 tiles an image
    w = (rng.standard_normal((288, 256, 3, 3)) / 48).astype(np.float32)  # 4.5 MiB transformed
    got = F.conv2d(ember.from_numpy(x), ember.from_numpy(w), padding=1).numpy()
    want = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=5e-5)
    assert served == ([(batch, 256, 8, 8)] if runs else [])


def test_gradients_of_every_order_through_it(everywhere):
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((2, 3, 5, 6)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    conv = lambda a, b: F.conv2d(a, b, padding=1)  # noqa: E731
    assert ember.autograd.gradcheck(conv, (x, w))
    assert ember.autograd.gradgradcheck(conv, (x, w))
    assert everywhere


@pytest.mark.parametrize("change", [
    dict(stride=2), dict(dilation=2), dict(kernel=5), dict(channels=16), dict(batch=4),
    dict(dtype=np.float16), dict(out_channels=2048, channels=1024),
])
def test_runs_only_where_it_wins(served, change):
    kernel, channels = change.get("kernel", 3), change.get("channels", 32)
    x = np.zeros((change.get("batch", 8), channels, 16, 16), change.get("dtype", np.float32))
    w = np.zeros((change.get("out_channels", 32), channels, kernel, kernel), x.dtype)
    F.conv2d(ember.from_numpy(x), ember.from_numpy(w), padding=kernel // 2,
             stride=change.get("stride", 1), dilation=change.get("dilation", 1))
    assert not served


def test_not_without_numba(served):
    saved = compiled.numba_enabled()
    compiled.use_numba(False)
    try:
        x, w = ember.zeros(8, 32, 16, 16), ember.zeros(32, 32, 3, 3)
        F.conv2d(x, w, padding=1)
    finally:
        compiled.use_numba(saved)
    assert not served
    F.conv2d(x, w, padding=1)
    assert served == [(8, 32, 16, 16)]
