"""The new layers of ember.vision.models (shifted window attention with its relative and
continuous position biases, Inception blocks, RegNet's squeeze-and-excitation bottleneck,
ASPP and the LR-ASPP head) against plain torch references written from the papers
(``torch_blocks.py``): same state-dict layout, and with torch's weights copied in, the same
outputs and input gradients in float64, in eval and train mode."""

import math
from functools import partial

import numpy as np
import pytest
import torch

import ember
from ember.vision import models
from ember.vision.models import inception, maxvit, regnet, swin_transformer
from ember.vision.models.googlenet import Inception as GoogLeNetInception
from ember.vision.models.segmentation import deeplabv3, lraspp
from tests.vision import torch_blocks
from tests.vision.test_models_vs_torch import (  # noqa: F401
    assert_same_outputs,
    torch_on_one_thread,
    twins,
)

RNG = np.random.default_rng(1)


def compare(ours, theirs, shape, modes=(False, True), atol=1e-11):
    assert_same_outputs(ours, theirs, RNG.standard_normal(shape), modes, atol)


def randomized(build):
    """``build()`` with every parameter redrawn from N(0, 0.5²), so that zero-initialized
    tables and biases (the v2 key bias excepted: it is zeroed in the forward) count."""
    def make():
        model = build()
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn_like(p) * 0.5)
        return model
    return make


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("shift, size", [([0, 0], (6, 6)), ([1, 1], (6, 6)),
                                         ([1, 1], (5, 7)), ([2, 1], (4, 9))])
def test_shifted_window_attention(v2, shift, size):
    """Shifts with padding to whole windows, and a window taller than the padded map (no
    vertical shift there)."""
    attention = (swin_transformer.ShiftedWindowAttentionV2 if v2
                 else swin_transformer.ShiftedWindowAttention)
    compare(partial(attention, 8, [3, 3], shift, 2),
            randomized(partial(torch_blocks.WindowAttention, 8, [3, 3], shift, 2, v2)),
            (2, *size, 8), modes=(False,))


@pytest.mark.parametrize("v2", [False, True])
def test_small_swin_transformer(v2):
    ours = partial(models.SwinTransformer, [2, 2], 8, [2, 2], [2, 4], [3, 3], num_classes=5,
                   stochastic_depth_prob=0.0,
                   **({"block": swin_transformer.SwinTransformerBlockV2,
                       "downsample_layer": swin_transformer.PatchMergingV2} if v2 else {}))
    theirs = randomized(partial(torch_blocks.swin, 2, 8, [2, 2], [2, 4], [3, 3], 5, v2))
    compare(ours, theirs, (2, 3, 20, 18), modes=(False,), atol=1e-10)


def test_swin_v2_starts_with_zero_key_bias_and_temperature_10():
    attn = swin_transformer.ShiftedWindowAttentionV2(8, [4, 4], [2, 2], 2)
    assert float(attn.qkv.bias[8:16].abs().sum()) == 0.0
    np.testing.assert_allclose(attn.logit_scale.exp().detach().numpy(), 10.0, rtol=1e-6)
    assert attn.relative_coords_table.shape == (1, 7, 7, 2)
    assert float(attn.relative_coords_table.abs().max()) == pytest.approx(math.log2(9) / 3)
    v1 = swin_transformer.ShiftedWindowAttention(8, [7, 7], [3, 3], 2)
    assert v1.relative_position_bias_table.shape == (169, 2)
    assert v1.relative_position_index.dtype == ember.int64
    assert int(v1.relative_position_index.max()) == 168


def test_googlenet_inception_block():
    block = (64, 16, 8, 16, 4, 8, 8)
    compare(partial(GoogLeNetInception, *block),
            partial(torch_blocks.googlenet_inception, *block), (2, 64, 5, 5))


def test_inception_c_and_e_blocks():  # E's widths are fixed (384, 448): eval mode only
    compare(partial(inception.InceptionC, 24, channels_7x7=8),
            partial(torch_blocks.inception_c, 24, 8), (2, 24, 7, 6))
    compare(partial(inception.InceptionE, 16), partial(torch_blocks.inception_e, 16),
            (1, 16, 3, 4), modes=(False,))


def test_regnet_bottleneck_with_squeeze_excitation():
    ours = partial(regnet.ResBottleneckBlock, 16, 24, 2, ember.nn.BatchNorm2d, ember.nn.ReLU,
                   group_width=8, se_ratio=0.25)
    compare(ours, partial(torch_blocks.regnet_block, 16, 24, 2, 8, 0.25), (2, 16, 7, 7))


def test_aspp_and_deeplab_head():  # eval: ASPP's dropout; train: batch statistics
    compare(partial(deeplabv3.ASPP, 12, [1, 2, 3], out_channels=8),
            partial(torch_blocks.aspp, 12, [1, 2, 3], 8), (2, 12, 6, 5), modes=(False,))
    compare(partial(deeplabv3.DeepLabHead, 16, 3, (2, 4)),
            partial(torch_blocks.deeplab_head, 16, 3, (2, 4)), (2, 16, 5, 5), modes=(False,))


def test_lraspp_head():
    ours, theirs = twins(partial(lraspp.LRASPPHead, 6, 10, 3, 8),
                         partial(torch_blocks.lraspp_head, 6, 10, 3, 8))
    low, high = RNG.standard_normal((2, 6, 8, 8)), RNG.standard_normal((2, 10, 4, 4))
    for train in (False, True):
        ours.train(train)
        theirs.train(train)
        yt = theirs({"low": torch.tensor(low), "high": torch.tensor(high)})
        ye = ours({"low": ember.tensor(low), "high": ember.tensor(high)})
        np.testing.assert_allclose(ye.numpy(), yt.detach().numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kind", ["window", "grid"])
def test_maxvit_partition_attention(kind):
    """3x3 windows, or a 3x3 grid of pixels 2 apart, on a 6x6 map."""
    ours = partial(maxvit.PartitionAttentionLayer, 8, 4, 3, kind, (6, 6), 4, ember.nn.GELU,
                   ember.nn.LayerNorm, 0.0, 0.0, 0.0)
    compare(ours, randomized(partial(torch_blocks.PartitionAttention, 8, 4, 3, kind)),
            (2, 8, 6, 6), modes=(False,))
