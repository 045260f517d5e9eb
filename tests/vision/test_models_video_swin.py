"""ember.vision.models.video's Swin3D against the plain torch.nn reference of
``torch_video_swin.py``: 3-D shifted window attention and a small network with the same
weights, outputs and input gradients in float64 (eval and train mode); full-size layouts
and torchvision's published parameter counts."""

from functools import partial

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision import models
from ember.vision.models import video
from tests.vision import torch_video_swin
from tests.vision.test_models_blocks_vs_torch import randomized
from tests.vision.test_models_vs_torch import (  # noqa: F401
    assert_same_outputs,
    layout,
    torch_on_one_thread,
)

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("shift, size", [
    ([0, 0, 0], (2, 3, 3)),  # one window, unshifted
    ([1, 1, 1], (4, 6, 6)),  # shifted along every axis
    ([1, 1, 1], (3, 5, 7)),  # padded to whole windows along every axis
    ([1, 1, 1], (1, 4, 6)),  # the window shrunk to one frame, unshifted in time
    ([1, 1, 1], (2, 2, 5)),  # shrunk in time and height
])
def test_shifted_window_attention_3d(shift, size):
    ours = partial(video.ShiftedWindowAttention3d, 8, [2, 3, 3], shift, 2)
    theirs = randomized(partial(torch_video_swin.WindowAttention3d, 8, [2, 3, 3], shift, 2))
    assert_same_outputs(ours, theirs, RNG.standard_normal((2, *size, 8)), modes=(False,))


def test_small_swin3d():
    """A 5-frame clip of 18×22 (patch padding to 3×5×6 tokens); a 4×3×3 window shrunk to the
    3 frames (its bias sliced), padded and shifted in space in the first stage, covering the
    3×3 map in the second; stochastic depth 0."""
    ours = partial(video.SwinTransformer3d, [2, 4, 4], 8, [2, 2], [2, 4], [4, 3, 3],
                   num_classes=5, stochastic_depth_prob=0.0)
    theirs = randomized(partial(torch_video_swin.SwinTransformer3d, [2, 4, 4], 8, [2, 2], [2, 4],
                                [4, 3, 3], 5))
    assert_same_outputs(ours, theirs, RNG.standard_normal((2, 3, 5, 18, 22)), atol=1e-10)


@pytest.mark.parametrize("name, count, width, heads", [
    ("swin3d_t", 28_158_070, 96, [3, 6, 12, 24]), ("swin3d_s", 49_816_678, 96, [3, 6, 12, 24]),
    ("swin3d_b", 88_048_984, 128, [4, 8, 16, 32])])
def test_layout_and_parameter_counts_are_torchvisions(name, count, width, heads):
    with init.skipping():
        ours = models.get_model(name)
    depths = [2, 2, 6 if name == "swin3d_t" else 18, 2]
    with torch.device("meta"):
        theirs = torch_video_swin.SwinTransformer3d([2, 4, 4], width, depths, heads, [8, 7, 7])
    assert layout(ours.state_dict()) == layout(theirs.state_dict())
    assert sum(p.numel() for p in ours.parameters()) == count
    attn = ours.features[0][1].attn
    assert (attn.window_size, attn.shift_size) == ([8, 7, 7], [4, 3, 3])
    assert attn.relative_position_index.dtype == ember.int64
    assert ours.features[-1][-1].stochastic_depth.p == pytest.approx(0.1)


def test_relative_position_index_and_init():
    attn = video.ShiftedWindowAttention3d(8, [2, 3, 3], [0, 0, 0], 2)
    theirs = torch_video_swin.WindowAttention3d(8, [2, 3, 3], [0, 0, 0], 2)
    np.testing.assert_array_equal(attn.relative_position_index.numpy(),
                                  theirs.relative_position_index.numpy())
    assert attn.relative_position_bias_table.shape == (75, 2)
    model = video.SwinTransformer3d([2, 4, 4], 8, [1], [2], [2, 2, 2], num_classes=3)
    assert float(model.head.bias.abs().sum()) == 0.0
    assert 0.01 < float(model.head.weight.std()) < 0.03  # N(0, 0.02²)


def test_bad_inputs_raise():
    with pytest.raises(ArgumentError, match="length 3"):
        video.ShiftedWindowAttention3d(8, [2, 2], [0, 0], 2)
    with pytest.raises(ArgumentError, match=r"\(B, T, H, W, C\)"):
        video.ShiftedWindowAttention3d(8, [2, 2, 2], [0, 0, 0], 2)(ember.randn(1, 4, 4, 8))
    with pytest.raises(ArgumentError, match=r"\(B, T, H, W, C\)"):
        video.shifted_window_attention_3d(ember.randn(4, 4, 8), ember.randn(24, 8),
                                          ember.randn(8, 8), ember.zeros(1, 2, 8, 8),
                                          [2, 2, 2], 2, [0, 0, 0])
