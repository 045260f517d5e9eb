"""ember.vision.models.video against torchvision's video ResNets and S3D rebuilt in plain torch.nn
(``torch_video_models.py``): identical state-dict layouts, and, with torch's weights copied in,
the same outputs and input gradients in float64; torchvision's published parameter counts."""

from functools import partial

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision import models
from ember.vision.models import video
from tests.vision import torch_video_models
from tests.vision.test_models_vs_torch import (  # noqa: F401
    assert_same_outputs,
    torch_on_one_thread,
)

RNG = np.random.default_rng(2)
R = video.resnet
KINDS = {"r3d_18": (["3d"] * 4, False), "mc3_18": (["3d"] + ["2d"] * 3, False),
         "r2plus1d_18": (["2+1d"] * 4, True)}
MAKERS = {"r3d_18": ([R.Conv3DSimple] * 4, R.BasicStem),
          "mc3_18": ([R.Conv3DSimple] + [R.Conv3DNoTemporal] * 3, R.BasicStem),
          "r2plus1d_18": ([R.Conv2Plus1D] * 4, R.R2Plus1dStem)}


def layout(model):
    return [(k, tuple(v.shape)) for k, v in model.state_dict().items()]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_matches_torch(name):
    """One block per stage (every conv maker, stem, stride and shortcut of the builder; two
    per stage cost seconds in float64 here); eval and train mode; 4 frames so the temporal
    strides (4 → 2 → 1 → 1) and paddings are exercised; 32 pixels so the last batch norms
    see 8 values per channel in train mode (2 make their statistics ill-conditioned)."""
    (kinds, split_stem), (makers, stem) = KINDS[name], MAKERS[name]
    ours = partial(video.VideoResNet, R.BasicBlock, makers, [1, 1, 1, 1], stem, num_classes=5)
    theirs = partial(torch_video_models.VideoResNet, kinds, split_stem, num_classes=5,
                     blocks=1)
    assert_same_outputs(ours, theirs, RNG.standard_normal((2, 3, 4, 32, 32)), atol=1e-9)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_builder_layouts_match_torch(name):
    with init.skipping():
        ours = getattr(video, name)(num_classes=7)
    with torch.device("meta"):
        theirs = torch_video_models.VideoResNet(*KINDS[name], num_classes=7)
    assert layout(ours) == layout(theirs)


@pytest.mark.parametrize("name, count", [("r3d_18", 33_371_472), ("mc3_18", 11_695_440),
                                         ("r2plus1d_18", 31_505_325)])
def test_parameter_counts_are_torchvisions(name, count):
    with init.skipping():
        model = models.get_model(name)
    assert sum(p.numel() for p in model.parameters()) == count


def test_registered_under_the_video_module():
    assert models.list_models(video) == ["mc3_18", "mvit_v1_b", "mvit_v2_s", "r2plus1d_18",
                                         "r3d_18", "s3d", "swin3d_b", "swin3d_s", "swin3d_t"]
    assert "r3d_18" not in models.list_models(models)
    with pytest.raises(ValueError, match="no pretrained weights"):
        video.r3d_18(weights="KINETICS400_V1")


def test_zero_init_residual_starts_each_block_as_its_shortcut():
    model = video.mc3_18(num_classes=3, zero_init_residual=True)
    blocks = [m for m in model.modules() if isinstance(m, R.BasicBlock)]
    assert len(blocks) == 8
    assert all(float(b.conv2[1].weight.abs().sum()) == 0 for b in blocks)
    assert float(model.layer1[0].conv1[1].weight.sum()) == 64  # the other norms start at 1


def test_bottleneck_stages():
    net = video.VideoResNet(R.Bottleneck, [R.Conv2Plus1D] * 4,
                            [1, 1, 1, 1], R.R2Plus1dStem, num_classes=2,
                            zero_init_residual=True)
    assert net.fc.in_features == 2048
    assert net.layer2[0].conv2[0][0].out_channels == 128 * 256 * 27 // (256 * 9 + 3 * 128)
    out = net.eval()(ember.randn(1, 3, 2, 16, 16))
    assert out.shape == (1, 2)


def test_stage_count_is_checked():
    with pytest.raises(ArgumentError, match="one entry per stage"):
        video.VideoResNet(R.BasicBlock, [R.Conv3DSimple] * 3, [2, 2, 2], R.BasicStem)



def _without_pool(build, identity):
    def make():
        model = build(num_classes=5, dropout=0.0)
        model.avgpool = identity()
        return model
    return make


def test_s3d_matches_torch_without_its_fixed_pool():
    """The whole network but its 2×7×7 average pool (which needs 13 frames of 209×209, too
    slow in float64 here; an identity on both sides instead) on 8 frames of 64×64, so the
    last batch norms see 8 values per channel in train mode."""
    assert_same_outputs(_without_pool(video.S3D, ember.nn.Identity),
                        _without_pool(torch_video_models.S3D, torch.nn.Identity),
                        RNG.standard_normal((2, 3, 8, 64, 64)), atol=1e-9)


def test_s3d_layout_pool_and_parameter_count():
    with init.skipping():
        ours = models.get_model("s3d")
    with torch.device("meta"):
        theirs = torch_video_models.S3D()
    assert layout(ours) == layout(theirs)
    assert sum(p.numel() for p in ours.parameters()) == 8_320_048
    assert ours.avgpool.kernel_size == (2, 7, 7) and ours.avgpool.stride == 1
    norm = ours.features[2][1]
    assert (norm.eps, norm.momentum) == (0.001, 0.001)
