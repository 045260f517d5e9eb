"""roi_align and roi_pool against a literal, one-sample-at-a-time transcription of
torchvision's CPU kernels, plus float64 gradient checks."""

import math

import numpy as np
import pytest

import ember
from ember.vision import ops

RNG = np.random.default_rng(0)


def bilinear(img, y, x):
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y1 = y0 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x1 = x0 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1]
            + ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def reference_align(x, rois, ph, pw, scale, ratio, aligned):
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sw, sh = x1 * scale - off, y1 * scale - off
        rw, rh = x2 * scale - off - sw, y2 * scale - off - sh
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    total = 0.0
                    for iy in range(gh):
                        for ix in range(gw):
                            yy = sh + i * bh + (iy + 0.5) * bh / gh
                            xx = sw + j * bw + (ix + 0.5) * bw / gw
                            total += bilinear(x[int(b), c], yy, xx)
                    out[k, c, i, j] = total / max(gh * gw, 1)
    return out


def reference_pool(x, rois, ph, pw, scale):
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    h, w = x.shape[2:]
    rnd = lambda v: int(math.copysign(math.floor(abs(v) + 0.5), v))  # noqa: E731 (C's round)
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sw, sh, ew, eh = rnd(x1 * scale), rnd(y1 * scale), rnd(x2 * scale), rnd(y2 * scale)
        bh, bw = max(eh - sh + 1, 1) / ph, max(ew - sw + 1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                h0 = min(max(math.floor(i * bh) + sh, 0), h)
                h1 = min(max(math.ceil((i + 1) * bh) + sh, 0), h)
                w0 = min(max(math.floor(j * bw) + sw, 0), w)
                w1 = min(max(math.ceil((j + 1) * bw) + sw, 0), w)
                if h1 <= h0 or w1 <= w0:
                    continue
                out[k, :, i, j] = x[int(b), :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


def random_rois(n_images, count, size):
    b = RNG.integers(0, n_images, (count, 1))
    xy = RNG.uniform(-2, size, (count, 2))
    wh = RNG.uniform(0.3, size / 1.5, (count, 2))
    return np.concatenate([b, xy, xy + wh], 1)


@pytest.mark.parametrize("ratio, aligned, scale", [(-1, False, 1.0), (2, False, 0.5),
                                                   (-1, True, 0.5), (3, True, 1.0)])
def test_roi_align_matches_the_kernel(ratio, aligned, scale):
    x = RNG.standard_normal((2, 3, 7, 9))
    rois = random_rois(2, 6, 14)
    rois[0] = [1, 3, 3, 3, 3]          # a degenerate box
    got = ops.roi_align(ember.tensor(x), ember.tensor(rois), (3, 2), scale, ratio, aligned)
    np.testing.assert_allclose(got.numpy(), reference_align(x, rois, 3, 2, scale, ratio,
                                                            aligned), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_reversed_and_border_boxes_with_aligned(ratio):
    # aligned=True keeps a reversed box's negative size: the kernel's sample grid is then
    # empty (0) for sampling_ratio <= 0, and walks backwards for a fixed ratio
    x = RNG.standard_normal((1, 2, 6, 8))
    rois = np.array([[0, 4, 4, 1, 1], [0, 0, 0, 8, 6], [0, 7, 5, 8, 6], [0, -1, -1, 0, 0],
                     [0, 7.5, 0, 9, 6]])
    for scale in (1.0, 2.0):
        got = ops.roi_align(ember.tensor(x), ember.tensor(rois), (3, 2), scale, ratio, True)
        np.testing.assert_allclose(got.numpy(), reference_align(x, rois, 3, 2, scale, ratio,
                                                                True), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_roi_pool_matches_the_kernel(scale):
    x = RNG.standard_normal((2, 3, 7, 9))
    rois = random_rois(2, 8, 14)
    rois[0] = [0, 20, 20, 30, 30]      # outside the image: empty bins give 0
    got = ops.roi_pool(ember.tensor(x), ember.tensor(rois), (2, 3), scale)
    np.testing.assert_allclose(got.numpy(), reference_pool(x, rois, 2, 3, scale))


def test_per_image_box_lists_equal_the_indexed_form():
    x = ember.randn(2, 2, 6, 6)
    boxes = [ember.tensor([[0.0, 0, 4, 4]]), ember.tensor([[1.0, 1, 5, 3], [0, 0, 6, 6]])]
    indexed = ember.tensor([[0.0, 0, 0, 4, 4], [1, 1, 1, 5, 3], [1, 0, 0, 6, 6]])
    for fn in (lambda b: ops.roi_align(x, b, 2, sampling_ratio=2), lambda b: ops.roi_pool(x, b, 2)):
        np.testing.assert_array_equal(fn(boxes).numpy(), fn(indexed).numpy())


def test_gradients_reach_the_input():
    x = ember.tensor(RNG.standard_normal((1, 2, 5, 5)), requires_grad=True)
    rois = ember.tensor(random_rois(1, 3, 6))
    assert ember.autograd.gradcheck(lambda t: ops.roi_align(t, rois, 2, 0.8, -1, True), (x,))
    assert ember.autograd.gradcheck(lambda t: ops.roi_pool(t, rois, 2), (x,))
    # enough samples (over a thousand) for index_put's per-channel accumulation
    x = ember.tensor(RNG.standard_normal((1, 3, 5, 5)), requires_grad=True)
    rois = ember.tensor(random_rois(1, 24, 5))
    assert ember.autograd.gradcheck(lambda t: ops.roi_align(t, rois, 2, 1.0, 2), (x,))
    layer = ops.RoIAlign((2, 2), 1.0, 2)
    layer(x, rois).sum().backward()
    assert x.grad.shape == x.shape


def test_errors():
    x = ember.zeros(1, 1, 4, 4)
    with pytest.raises(ember.ShapeError, match=r"\(K, 5\)"):
        ops.roi_align(x, ember.zeros(2, 4), 2)
    with pytest.raises(ember.ShapeError, match="batch index"):
        ops.roi_pool(x, ember.tensor([[3.0, 0, 0, 1, 1]]), 2)
    with pytest.raises(ember.ShapeError, match=r"input must be \(N, C, H, W\)"):
        ops.roi_align(ember.zeros(4, 4), ember.zeros(0, 5), 2)
    assert ops.roi_align(x, ember.zeros(0, 5), 2).shape == (0, 1, 2, 2)
    box = ember.tensor([[0.0, 0, 0, 2, 2]])
    for fn in (ops.roi_align, ops.roi_pool):   # torchvision's kernels take floats only
        with pytest.raises(TypeError, match=fn.__name__ + r".*int64.*float\(\)"):
            fn(ember.arange(16).reshape(1, 1, 4, 4), box, 1)
    assert ops.roi_pool(x, ember.zeros(0, 5), 2).shape == (0, 1, 2, 2)
