"""ember.vision.models.optical_flow against torchvision's RAFT rebuilt in plain torch.nn
(``torch_raft.py``), in float64 with torch's weights copied in: the correlation pyramid and
its lookup, one update step with convex upsampling, and RAFT-small end to end (three pyramid
levels so 64×64 images do); the full-size state-dict layouts and parameter counts; gradient
flow, errors, the registry. (/work/fuzz/raft52/compare_torchvision.py runs torchvision 0.28's
own raft_large/raft_small against these at full size.)"""

import doctest
import importlib

import numpy as np
import pytest
import torch

import ember
from ember.nn import init
from ember.vision import models
from ember.vision.models import optical_flow
from ember.vision.models.optical_flow import _utils, corr, encoder, update
from tests.vision import torch_raft
from tests.vision.test_models_vs_torch import (  # noqa: F401
    torch_on_one_thread,
    twins,
)

RNG = np.random.default_rng(5)


def close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol,
                               atol=tol)


def both(x):
    return ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("levels, radius", [(4, 4), (2, 3)])
def test_correlation_block_matches_torch(levels, radius):
    """Matches off the pixel grid, some outside the map (zeros padding), in float64; outputs
    and the gradients of both feature maps and of the matches."""
    n, c, h, w = 1, 3, 16, 16
    fe1, ft1 = both(RNG.standard_normal((n, c, h, w)))
    fe2, ft2 = both(RNG.standard_normal((n, c, h, w)))
    grid = torch_raft.coords_grid(n, h, w).numpy()
    ce, ct = both(grid + RNG.uniform(-6, 6, grid.shape))
    block = corr.CorrBlock(num_levels=levels, radius=radius)
    block.build_pyramid(fe1, fe2)
    ours = block.index_pyramid(ce)
    theirs = torch_raft.lookup(torch_raft.pyramid(ft1, ft2, levels), ct, radius)
    assert ours.shape == (n, block.out_channels, h, w) == theirs.shape
    close(ours, theirs)
    g = RNG.standard_normal(ours.shape)
    ours.backward(ember.tensor(g))
    theirs.backward(torch.tensor(g))
    for e, t in ((fe1, ft1), (fe2, ft2), (ce, ct)):
        close(e.grad, t.grad)


@pytest.mark.parametrize("arch", ["raft_large", "raft_small"])
def test_update_step_matches_torch(arch, torch_on_one_thread):  # noqa: F811
    """One refinement of each architecture's update block (with the mask predictor and the
    convex upsampling for raft_large, bilinear upsampling for raft_small) on 8×8 maps:
    hidden state, flow increment and upsampled flow, and the inputs' gradients."""
    def ours():
        model = getattr(optical_flow, arch)()
        return ember.nn.ModuleList([model.update_block,
                                    model.mask_predictor or ember.nn.Identity()])

    def theirs():
        model = torch_raft.RAFT(arch)
        return torch.nn.ModuleList([model.update_block,
                                    model.mask_predictor or torch.nn.Identity()])

    ours, theirs = twins(ours, theirs)
    hidden = theirs[0].recurrent_block.convgru1.convz.out_channels
    corr_in = theirs[0].motion_encoder.convcorr1[0].in_channels
    context = theirs[0].recurrent_block.convgru1.convz.in_channels - hidden - \
        theirs[0].motion_encoder.conv[0].out_channels - 2
    inputs = [RNG.standard_normal((1, k, 8, 8)) for k in (hidden, context, corr_in, 2)]
    pairs = [both(x) for x in inputs]
    he, de = ours[0](*(e for e, _ in pairs))
    ht, dt = theirs[0](*(t for _, t in pairs))
    close(he, ht)
    close(de, dt)
    mask = arch == "raft_large"
    fe = _utils.upsample_flow(de, ours[1](he) if mask else None)
    ft = torch_raft.convex_upsample(dt, theirs[1](ht) if mask else None)
    assert fe.shape == (1, 2, 64, 64)
    close(fe, ft)
    g = RNG.standard_normal(fe.shape)
    ((fe * ember.tensor(g)).sum() + (he * he).sum()).backward()
    ((ft * torch.tensor(g)).sum() + (ht * ht).sum()).backward()
    for e, t in pairs:
        close(e.grad, t.grad)


@pytest.mark.parametrize("arch, batch, updates", [("raft_small", 2, 3), ("raft_large", 1, 2)])
def test_matches_torch_end_to_end(arch, batch, updates, torch_on_one_thread):  # noqa: F811
    """Each model with a three-level pyramid on 64×64 pairs in train mode (raft_large's
    context encoder normalizes by batch statistics; its eval mode differs only there, and the
    script checks it): every flow estimate and both images' gradients."""
    def ours():
        model = getattr(optical_flow, arch)
        return model(corr_block=corr.CorrBlock(num_levels=3, radius=3 if arch == "raft_small"
                                               else 4))

    ours, theirs = twins(ours, lambda: torch_raft.RAFT(arch, levels=3))
    (ae, at), (be, bt) = (both(RNG.standard_normal((batch, 3, 64, 64))) for _ in range(2))
    fe, ft = ours(ae, be, num_flow_updates=updates), theirs(at, bt, num_flow_updates=updates)
    assert len(fe) == len(ft) == updates
    for e, t in zip(fe, ft, strict=True):
        close(e, t, 1e-9)
    sum(f.sum() for f in fe).backward()
    sum(f.sum() for f in ft).backward()
    close(ae.grad, at.grad, 1e-9)
    close(be.grad, bt.grad, 1e-9)


@pytest.mark.parametrize("arch", ["raft_large", "raft_small"])
def test_full_size_state_dict_is_torchvisions(arch):
    with init.skipping():
        ours = getattr(optical_flow, arch)()
    with torch.device("meta"):
        theirs = torch_raft.RAFT(arch)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]


@pytest.mark.parametrize("name, count", [("raft_large", 5_257_536), ("raft_small", 990_162)])
def test_parameter_counts_are_torchvisions(name, count):
    with init.skipping():
        model = models.get_model(name)
    assert sum(p.numel() for p in model.parameters()) == count


def test_raft_small_shapes_and_gradient_flow():
    """Every parameter gets a gradient from the flows; the matches each update starts from
    are detached, so an update's input flow carries no gradient to the one before."""
    model = optical_flow.raft_small(corr_block=corr.CorrBlock(num_levels=3, radius=3))
    a, b = ember.randn(1, 3, 64, 64), ember.randn(1, 3, 64, 64)
    flows = model(a, b, num_flow_updates=2)
    assert [tuple(f.shape) for f in flows] == [(1, 2, 64, 64)] * 2
    flows[-1].abs().mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None
               or not np.isfinite(p.grad.numpy()).all() or not p.grad.abs().sum().item()]
    assert missing == []


def test_encoders_downsample_by_eight_and_start_as_torchvision():
    enc = encoder.FeatureEncoder(block=encoder.BottleneckBlock, layers=(8, 8, 16, 16, 24),
                                 norm_layer=ember.nn.BatchNorm2d)
    assert enc(ember.randn(2, 3, 32, 40)).shape == (2, 24, 4, 5)
    assert enc.downsample_factor == 8 and enc.output_dim == 24
    norms = [m for m in enc.modules() if isinstance(m, ember.nn.BatchNorm2d)]
    assert all(float(m.weight.sum()) == m.num_features for m in norms)
    conv = enc.layer2[0].convnormrelu2[0]  # Kaiming normal, fan out: std √(2 / (4·3·3))
    assert abs(float(conv.weight.std()) - (2 / 36) ** 0.5) < 0.07


def test_errors_are_clear():
    model = optical_flow.raft_small()
    with pytest.raises(ember.errors.ShapeError, match="multiples of 8"):
        model(ember.randn(1, 3, 132, 128), ember.randn(1, 3, 132, 128))
    with pytest.raises(ember.errors.ShapeError, match="images differ in shape"):
        model(ember.randn(1, 3, 128, 128), ember.randn(1, 3, 128, 136))
    with pytest.raises(ember.errors.ShapeError, match="images differ in shape"):
        model(ember.randn(1, 3, 128, 128), ember.randn(2, 3, 128, 128))
    with pytest.raises(ember.errors.ShapeError, match=r"RAFT: expected \(N, 3, H, W\)"):
        model(ember.randn(3, 128, 128), ember.randn(3, 128, 128))  # (unbatched)
    with pytest.raises(ember.errors.ShapeError, match=r"RAFT: expected \(N, 3, H, W\)"):
        model(ember.randn(1, 3, 128, 128), ember.randn(3, 128, 128))
    with pytest.raises(ember.errors.ShapeError, match="at least 128 pixels"):
        model(ember.randn(1, 3, 64, 64), ember.randn(1, 3, 64, 64))
    with pytest.raises(ember.errors.ArgumentError, match="build_pyramid"):
        corr.CorrBlock().index_pyramid(ember.zeros(1, 2, 4, 4))
    with pytest.raises(ember.errors.ArgumentError, match="1 or 2"):
        update.RecurrentBlock(input_size=4, hidden_size=4, kernel_size=(3, 3, 3),
                              padding=(1, 1, 1))
    with pytest.raises(ember.errors.ArgumentError, match="5 widths"):
        encoder.FeatureEncoder(layers=(8, 8))


def test_registered_under_the_optical_flow_module():
    assert models.list_models(optical_flow) == ["raft_large", "raft_small"]
    assert "raft_small" not in models.list_models(models)
    assert type(models.get_model("raft_small")).__name__ == "RAFT"
    with pytest.raises(ValueError, match="no pretrained weights"):
        optical_flow.raft_large(weights="C_T_SKHT_V2")
    with pytest.raises(ValueError, match="no pretrained weights"):
        optical_flow.raft_small(pretrained=True)


@pytest.mark.parametrize("name", ["", ".raft", ".corr", ".encoder", ".update"])
def test_docstring_examples(name):
    module = importlib.import_module(f"ember.vision.models.optical_flow{name}")
    extra = {**vars(module), "ember": ember}
    result = doctest.testmod(module, extraglobs=extra, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
