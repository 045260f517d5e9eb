"""ember.vision.models.video's MViT against the plain torch.nn reference of
``torch_video_mvit.py``: multiscale attention and blocks, and small networks with the same
weights, outputs and input gradients in float64 (eval and train mode); full-size layouts and
torchvision's published parameter counts."""

from functools import partial

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, ShapeError
from ember.nn import init
from ember.vision import models
from ember.vision.models import video
from ember.vision.models.video import mvit
from tests.vision import torch_video_mvit
from tests.vision.test_models_blocks_vs_torch import randomized
from tests.vision.test_models_vs_torch import (  # noqa: F401
    assert_same_outputs,
    layout,
    torch_on_one_thread,
)

RNG = np.random.default_rng(4)
V1 = (False, False, False, False)  # residual_pool, residual_with_cls_embed, rel_pos_embed,
V2 = (True, False, True, True)  # proj_after_attn
FLAG_NAMES = ("residual_pool", "residual_with_cls_embed", "rel_pos_embed", "proj_after_attn")


def _on_grid(base):
    """A ``base`` module class running a block on a fixed token grid, returning its tokens."""
    class OnGrid(base):
        def __init__(self, module, thw):
            super().__init__()
            self.module, self.thw = module, thw

        def forward(self, x):
            return self.module(x, self.thw)[0]
    return OnGrid


Ours, Theirs = _on_grid(ember.nn.Module), _on_grid(torch.nn.Module)


def _ours_block(grid, setting, flags):
    cnf = mvit.MSBlockConfig(*setting)
    block = mvit.MultiscaleBlock(list(grid), cnf, **dict(zip(FLAG_NAMES, flags)),
                                 norm_layer=partial(ember.nn.LayerNorm, eps=1e-6))
    return Ours(block, grid)


@pytest.mark.parametrize("setting, flags, grid", [
    # v1: keys and values pooled 2×2 in space, queries kept, channels widened before the MLP
    ((2, 8, 16, [], [3, 3, 3], [], [1, 2, 2]), V1, (2, 4, 4)),
    # v2: queries pooled (odd grid: tables interpolated, key and query grids differ), the
    # skip path max-pooled, channels widened before attention, pooled-query residual
    ((2, 8, 16, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 4, 4]), V2, (2, 5, 7)),
    # the class token in the residual, time pooled, no key/value pooling
    ((2, 8, 8, [3, 3, 3], [], [2, 1, 1], []), (True, True, True, False), (3, 2, 3)),
])
def test_multiscale_block(setting, flags, grid):
    theirs = randomized(lambda: Theirs(torch_video_mvit.Block(list(grid), setting, flags), grid))
    tokens = 1 + grid[0] * grid[1] * grid[2]
    assert_same_outputs(partial(_ours_block, grid, setting, flags), theirs,
                        RNG.standard_normal((2, tokens, 8)), modes=(False,), atol=1e-10)


SMALL = [(1, 8, 8, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 2, 2]),
         (2, 8, 16, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 2, 2])]


@pytest.mark.parametrize("flags", [V1, V2], ids=["v1", "v2"])
def test_small_mvit(flags):
    """Clips of 4 frames of 32×40 (a 2×8×10 grid), two blocks, the second pooling queries;
    dropouts and stochastic depth 0."""
    ours = partial(mvit.MViT, (32, 40), 4, [mvit.MSBlockConfig(*s) for s in SMALL],
                   *flags, dropout=0.0, num_classes=5)
    theirs = randomized(partial(torch_video_mvit.MViT, (32, 40), 4, SMALL, flags, 5))
    assert_same_outputs(ours, theirs, RNG.standard_normal((2, 3, 4, 32, 40)), atol=1e-10)


def _torchvision_setting(v2):
    """torchvision's block settings, its lists as written there."""
    heads = [1, 2, 2] + [4] * 11 + [8, 8]
    if v2:
        widths_in = [96, 96, 192, 192] + [384] * 11 + [768]
        widths_out = [96, 192, 192] + [384] * 11 + [768, 768]
    else:
        widths_in = [96, 192, 192] + [384] * 11 + [768, 768]
        widths_out = [192, 192] + [384] * 11 + [768] * 3
    strides_kv = [[1, 8, 8]] + [[1, 4, 4]] * 2 + [[1, 2, 2]] * 11 + [[1, 1, 1]] * 2
    setting = []
    for i in range(16):
        pooled = i in (1, 3, 14)
        setting.append((heads[i], widths_in[i], widths_out[i],
                        [3, 3, 3] if v2 or pooled else [], [3, 3, 3],
                        [1, 2, 2] if pooled else [1, 1, 1] if v2 else [], strides_kv[i]))
    return setting


@pytest.mark.parametrize("name, count, v2", [("mvit_v1_b", 36_610_672, False),
                                            ("mvit_v2_s", 34_537_744, True)])
def test_layout_and_parameter_counts_are_torchvisions(name, count, v2):
    with init.skipping():
        ours = models.get_model(name)
    with torch.device("meta"):
        theirs = torch_video_mvit.MViT((224, 224), 16, _torchvision_setting(v2), V2 if v2 else V1)
    assert layout(ours.state_dict()) == layout(theirs.state_dict())
    assert sum(p.numel() for p in ours.parameters()) == count
    assert [tuple(vars(c).values()) for c in mvit._block_setting(v2)] == _torchvision_setting(v2)
    assert ours.blocks[-1].stochastic_depth.p == pytest.approx(0.2)
    assert ours.head[0].p == 0.5 and ours.norm.eps == 1e-6


def test_init():
    model = mvit.MViT((32, 32), 4, [mvit.MSBlockConfig(*SMALL[1])], *V2, num_classes=3)
    assert float(model.head[1].bias.abs().sum()) == 0.0
    assert float(model.blocks[0].norm1.weight.sum()) == 8
    assert 0.005 < float(model.blocks[0].attn.rel_pos_h.std()) < 0.04


def test_bad_inputs_raise():
    with pytest.raises(ArgumentError, match="block_setting is empty"):
        mvit.MViT((32, 32), 4, [], *V1)
    model = video.MViT((32, 32), 4, [mvit.MSBlockConfig(*SMALL[0])], *V1, num_classes=3)
    with pytest.raises(ShapeError, match="built for"):
        model(ember.randn(1, 3, 4, 36, 32))
    with pytest.raises(ShapeError, match=r"\(B, C, T, H, W\)"):
        model(ember.randn(3, 4, 32, 32, 1, 1))
