"""Fixes from the nn.functional misc sweep of session 65 (sweep65g), checked against torch
2.13."""

import itertools

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F


@pytest.mark.parametrize("mode, padding_mode", itertools.product(
    ["bilinear", "nearest"], ["zeros", "border", "reflection"]))
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_grid_sample_5d_non_finite_grid_points_read_as_torch(mode, padding_mode, value):
    # torch's 5-D CPU sampler sends NaN to the last pixel under border/reflection (its 4-D
    # one to the first) and reads 0 at a non-finite point with zeros padding; ember read the
    # first pixel, and NaN for bilinear with zeros padding
    x = np.arange(48.0).reshape(1, 2, 2, 3, 4) + 1
    g = np.full((1, 2, 1, 3, 3), 0.3)
    g[0, 0, 0, 0, 0] = value
    g[0, 1, 0, 1, 1] = value
    g[0, 0, 0, 2, 2] = value
    for align_corners in (False, True):
        want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode=mode,
                                               padding_mode=padding_mode,
                                               align_corners=align_corners)
        got = F.grid_sample(ember.tensor(x), ember.tensor(g), mode=mode,
                            padding_mode=padding_mode, align_corners=align_corners)
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_grid_sample_5d_zeros_non_finite_point_gives_zero_gradients():
    # the point reads 0 (torch: every corner out of bounds), and sends no NaN back
    x = ember.ones(1, 1, 2, 2, 2, dtype=ember.float64, requires_grad=True)
    g = ember.tensor([[[[[np.nan, 0.2, 0.1], [0.1, 0.2, 0.3]]]]], dtype=ember.float64,
                     requires_grad=True)
    out = F.grid_sample(x, g, align_corners=False)
    out.sum().backward()
    assert out.detach().numpy().ravel().tolist() == [0.0, 1.0]
    assert np.isfinite(x.grad.numpy()).all() and np.isfinite(g.grad.numpy()).all()
    assert g.grad.numpy()[0, 0, 0, 0].tolist() == [0.0, 0.0, 0.0]
