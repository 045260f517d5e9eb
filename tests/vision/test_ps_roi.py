"""Position-sensitive RoI ops (torchvision.ops.ps_roi_align / ps_roi_pool): each bin reads its
own channel group; values recorded from torchvision 0.29.1 (printed by running it on the same
inputs), ps_roi_align against the diagonal of Ember's aligned roi_align, gradients by finite
differences."""

import math

import numpy as np
import pytest

import ember
from ember.autograd.gradcheck import gradcheck
from ember.vision import ops

X = ember.arange(2 * 8 * 3 * 4, dtype=ember.float32).reshape(2, 8, 3, 4)
ROIS = ember.tensor([[1, 0.3, 0.2, 3.4, 2.6], [0, 1.0, 1.0, 1.0, 2.0]])


def test_ps_roi_align_values_recorded_from_torchvision():
    out = ops.ps_roi_align(X, ROIS, 2)
    assert out.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(out[0].numpy(), [[[97.775, 111.325], [126.575, 140.125]],
                                                [[145.775, 159.325], [174.575, 188.125]]],
                               rtol=1e-5)
    # a zero-width box has zero samples per bin: 0/0, NaN, as torchvision's kernel gives
    assert np.isnan(out[1].numpy()).all()


def test_ps_roi_align_is_the_diagonal_of_aligned_roi_align():
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((1, 3 * 6, 7, 9)))
    boxes = [ember.tensor([[0.5, 1.0, 6.3, 5.2], [2.0, 0.2, 8.9, 6.6]])]
    out = ops.ps_roi_align(x, boxes, (2, 3), spatial_scale=0.8, sampling_ratio=2)
    for c in range(3):
        for i in range(2):
            for j in range(3):
                channel = (c * 2 + i) * 3 + j
                ref = ops.roi_align(x[:, channel:channel + 1], boxes, (2, 3), 0.8, 2,
                                    aligned=True)
                np.testing.assert_allclose(out[:, c, i, j].numpy(), ref[:, 0, i, j].numpy(),
                                           rtol=1e-12)


def test_ps_roi_pool_values_recorded_from_torchvision():
    out = ops.ps_roi_pool(X, ROIS, 2)
    assert out.tolist() == [[[[98.5, 111.5], [124.5, 137.5]], [[146.5, 159.5], [172.5, 185.5]]],
                            [[[5.0, 17.0], [29.0, 41.0]], [[53.0, 65.0], [77.0, 89.0]]]]
    # torchvision clips bins to H - 1 and W - 1: a box over the whole 3x4 map averages only
    # rows 0-1 and columns 0-2 (mean 3, not 5.5)
    whole = ops.ps_roi_pool(X[:1], ember.tensor([[0, 0, 0, 4, 3.0]]), 1)
    assert whole[0, :2, 0, 0].tolist() == [3.0, 15.0]


@pytest.mark.parametrize("op", [ops.ps_roi_align, ops.ps_roi_pool])
def test_gradients_match_finite_differences(op):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((1, 8, 5, 6)), requires_grad=True)
    rois = ember.tensor([[0, 0.6, 0.7, 4.1, 3.6]], dtype=ember.float64)
    assert gradcheck(lambda t: op(t, rois, 2), (x,))


def test_errors_and_layers():
    with pytest.raises(ember.ShapeError, match=r"ps_roi_align: input channels \(6\) must be a "
                                               r"multiple of the output size 2x2 = 4"):
        ops.ps_roi_align(ember.ones(1, 6, 4, 4), ember.tensor([[0, 0, 0, 2, 2.0]]), 2)
    assert ops.ps_roi_pool(ember.ones(1, 4, 4, 4), ember.zeros(0, 5), 2).shape == (0, 1, 2, 2)
    layer = ops.PSRoIAlign(2, 0.5, 2)
    assert repr(layer) == "PSRoIAlign(output_size=2, spatial_scale=0.5, sampling_ratio=2)"
    assert repr(ops.PSRoIPool(3, 1.0)) == "PSRoIPool(output_size=3, spatial_scale=1.0)"
    assert not math.isnan(float(layer(ember.ones(1, 4, 6, 6), [ember.tensor([[0, 0, 8, 8.0]])])
                                .sum()))
