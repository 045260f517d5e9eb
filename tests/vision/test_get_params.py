"""get_params of the random transforms that have one in torchvision (ColorJitter,
GaussianBlur, RandomRotation, RandomErasing): signatures, ranges and distributions, and that
the transforms apply what they draw."""

import math

import numpy as np
import pytest

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as TF


def test_color_jitter_get_params_draws_an_order_and_uniform_factors():
    ember.manual_seed(0)
    draws = [T.ColorJitter.get_params((0.5, 1.5), None, (0.0, 2.0), (-0.1, 0.1))
             for _ in range(2000)]
    orders = np.array([d[0].tolist() for d in draws])
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders[:50])
    first = np.bincount(orders[:, 0], minlength=4)
    assert first.min() > 400 and first.max() < 600                 # each first a quarter
    b, c, s, h = (np.array([d[k] for d in draws], dtype=float) for k in range(1, 5))
    assert np.isnan(c).all()                                        # None where no range
    for values, lo, hi in ((b, 0.5, 1.5), (s, 0.0, 2.0), (h, -0.1, 0.1)):
        assert lo <= values.min() and values.max() < hi
        assert abs(values.mean() - (lo + hi) / 2) < 0.03 * (hi - lo)
        assert abs(values.var() - (hi - lo) ** 2 / 12) < 0.1 * (hi - lo) ** 2 / 12
    img = ember.rand(3, 4, 4)
    t = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    ember.manual_seed(3)
    out = t(img)
    ember.manual_seed(3)
    order, *factors = t.get_params(t.brightness, t.contrast, t.saturation, t.hue)
    fns = (TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation, TF.adjust_hue)
    want = img
    for k in order.tolist():
        want = fns[k](want, factors[k])
    np.testing.assert_array_equal(out.numpy(), want.numpy())


def test_blur_and_rotation_get_params():
    ember.manual_seed(0)
    sigmas = np.array([T.GaussianBlur.get_params(0.1, 2.0) for _ in range(3000)])
    assert 0.1 <= sigmas.min() and sigmas.max() < 2.0 and abs(sigmas.mean() - 1.05) < 0.04
    angles = np.array([T.RandomRotation.get_params([-30, 10]) for _ in range(3000)])
    assert -30 <= angles.min() and angles.max() < 10 and abs(angles.mean() + 10) < 0.8
    img = ember.rand(3, 7, 7)
    ember.manual_seed(5)
    out = T.RandomRotation(40)(img)
    ember.manual_seed(5)
    np.testing.assert_array_equal(out.numpy(), TF.rotate(img, T.RandomRotation.get_params(
        (-40, 40))).numpy())
    ember.manual_seed(6)
    out = T.GaussianBlur(3, (0.5, 1.5))(img)
    ember.manual_seed(6)
    sigma = T.GaussianBlur.get_params(0.5, 1.5)
    np.testing.assert_array_equal(out.numpy(), TF.gaussian_blur(img, 3, sigma).numpy())


def test_random_erasing_get_params():
    img = ember.zeros(3, 20, 30)
    ember.manual_seed(0)
    areas, aspects = [], []
    for _ in range(1500):
        i, j, h, w, v = T.RandomErasing.get_params(img, (0.02, 0.33), (0.3, 3.3), [0.5])
        assert 0 <= i <= 20 - h and 0 <= j <= 30 - w and h < 20 and w < 30
        assert v.shape == (1, 1, 1) and v.item() == 0.5
        areas.append(h * w / 600)
        aspects.append(math.log(h / w))
    assert 0.01 < min(areas) and max(areas) < 0.36 and abs(np.mean(areas) - 0.16) < 0.03
    assert abs(np.mean(aspects)) < 0.1                      # log-uniform aspect, centred
    i, j, h, w, v = T.RandomErasing.get_params(img, (0.1, 0.2), (1.0, 1.0))
    assert v.shape == (3, h, w)                             # normal noise when value is None
    i, j, h, w, v = T.RandomErasing.get_params(img, (2.0, 3.0), (1.0, 1.0))
    assert (i, j, h, w) == (0, 0, 20, 30) and v is img      # ten misses: the whole image
    ember.manual_seed(1)
    out = T.RandomErasing(p=1.0, value=(1, 2, 3))(img)
    ember.manual_seed(1)
    ember.rand(1)
    i, j, h, w, v = T.RandomErasing.get_params(img, (0.02, 0.33), (0.3, 3.3), [1, 2, 3])
    np.testing.assert_array_equal(out.numpy(), TF.erase(img, i, j, h, w, v).numpy())
    with pytest.raises(ValueError, match="single value or 3"):
        T.RandomErasing(p=1.0, value=(1, 2))(img)
