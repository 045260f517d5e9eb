"""GoogLeNet, Inception v3, RegNet, Swin (v1, v2) and MaxViT beyond their parameter counts (in
``test_models.py``): state-dict keys and shapes of torchvision's module structure, the
training-mode outputs with auxiliary logits, ``transform_input``, RegNet's design-space rule,
constructor errors, and a few training steps that lower the loss."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn import init
from ember.vision import models
from ember.vision.models import inception
from ember.vision.models.regnet import BlockParams

# (key, shape) pairs of torchvision's state dicts, written out from its module structure
SAMPLES = {
    "googlenet": {"conv1.conv.weight": (64, 3, 7, 7), "conv1.bn.running_var": (64,),
                  "inception3a.branch2.1.conv.weight": (128, 96, 3, 3),
                  "inception3a.branch3.1.conv.weight": (32, 16, 3, 3),  # the 3x3 "5x5"
                  "inception4e.branch4.1.conv.weight": (128, 528, 1, 1),
                  "aux1.conv.conv.weight": (128, 512, 1, 1), "aux2.fc1.weight": (1024, 2048),
                  "aux2.fc2.bias": (1000,), "fc.weight": (1000, 1024)},
    "inception_v3": {"Conv2d_1a_3x3.conv.weight": (32, 3, 3, 3),
                     "Mixed_5b.branch_pool.conv.weight": (32, 192, 1, 1),
                     "Mixed_6b.branch7x7_2.conv.weight": (128, 128, 1, 7),
                     "Mixed_6e.branch7x7dbl_5.conv.weight": (192, 192, 1, 7),
                     "Mixed_7a.branch3x3_2.conv.weight": (320, 192, 3, 3),
                     "Mixed_7c.branch3x3dbl_3b.conv.weight": (384, 384, 3, 1),
                     "AuxLogits.conv1.conv.weight": (768, 128, 5, 5),
                     "AuxLogits.fc.weight": (1000, 768), "fc.weight": (1000, 2048)},
    "regnet_y_400mf": {"stem.0.weight": (32, 3, 3, 3), "stem.1.running_mean": (32,),
                       "trunk_output.block1.block1-0.proj.0.weight": (48, 32, 1, 1),
                       "trunk_output.block1.block1-0.f.b.0.weight": (48, 8, 3, 3),
                       "trunk_output.block1.block1-0.f.se.fc1.weight": (8, 48, 1, 1),
                       "trunk_output.block4.block4-5.f.c.1.bias": (440,),
                       "fc.weight": (1000, 440)},
    "regnet_x_400mf": {"trunk_output.block1.block1-0.f.b.0.weight": (32, 16, 3, 3),
                       "trunk_output.block4.block4-11.f.a.0.weight": (400, 400, 1, 1),
                       "fc.weight": (1000, 400)},
    "swin_t": {"features.0.0.weight": (96, 3, 4, 4), "features.0.2.weight": (96,),
               "features.1.0.attn.relative_position_bias_table": (169, 3),
               "features.1.0.attn.relative_position_index": (2401,),
               "features.1.1.attn.qkv.weight": (288, 96), "features.1.1.mlp.3.weight": (96, 384),
               "features.2.reduction.weight": (192, 384), "features.2.norm.weight": (384,),
               "features.7.1.norm2.bias": (768,), "norm.weight": (768,),
               "head.weight": (1000, 768)},
    "swin_v2_t": {"features.1.0.attn.logit_scale": (3, 1, 1),
                  "features.1.0.attn.relative_coords_table": (1, 15, 15, 2),
                  "features.1.0.attn.relative_position_index": (4096,),
                  "features.1.0.attn.cpb_mlp.0.weight": (512, 2),
                  "features.1.0.attn.cpb_mlp.2.weight": (3, 512),
                  "features.2.norm.weight": (192,), "features.6.reduction.weight": (768, 1536)},
}
SAMPLES["maxvit_t"] = {
    "stem.0.0.weight": (64, 3, 3, 3), "stem.1.0.bias": (64,),
    "blocks.0.layers.0.layers.MBconv.proj.1.weight": (64, 64, 1, 1),
    "blocks.0.layers.0.layers.MBconv.layers.pre_norm.running_var": (64,),
    "blocks.0.layers.0.layers.MBconv.layers.conv_b.0.weight": (256, 1, 3, 3),
    "blocks.0.layers.0.layers.MBconv.layers.squeeze_excitation.fc1.weight": (16, 256, 1, 1),
    "blocks.1.layers.1.layers.MBconv.layers.conv_c.bias": (128,),
    "blocks.2.layers.4.layers.grid_attention.attn_layer.1.relative_position_bias_table": (
        169, 8),
    "blocks.3.layers.0.layers.window_attention.attn_layer.1.relative_position_index": (49, 49),
    "blocks.3.layers.1.layers.grid_attention.mlp_layer.1.weight": (2048, 512),
    "classifier.3.weight": (512, 512), "classifier.5.weight": (1000, 512)}
ENTRIES = {"swin_t": 185, "swin_v2_t": 233}  # 14 (v1) or 18 (v2) per block, 17 besides


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_state_dict_keys_are_torchvisions(name):
    with init.skipping():
        state = models.get_model(name).state_dict()
    layout = {k: tuple(v.shape) for k, v in state.items()}
    assert {k: layout.get(k) for k in SAMPLES[name]} == SAMPLES[name]
    if name in ENTRIES:
        assert len(layout) == ENTRIES[name]
        assert not any("relative_position_bias_table" in k for k in layout) == ("v2" in name)


def test_regnet_design_space_rule():
    """regnet_y_400mf's stages (torchvision's float32 arithmetic reproduced)."""
    p = BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8)
    assert (p.depths, p.widths, p.group_widths, p.strides) == (
        [1, 3, 6, 6], [48, 104, 208, 440], [8, 8, 8, 8], [2, 2, 2, 2])
    with pytest.raises(ValueError, match="Invalid RegNet settings"):
        BlockParams.from_init_params(depth=4, w_0=12, w_a=8.0, w_m=2.0, group_width=8)
    with init.skipping():
        y = models.regnet_y_400mf()
    bn = y.stem[1]
    assert (bn.eps, bn.momentum) == (1e-5, 0.1)


def test_googlenet_and_inception_outputs():
    ember.manual_seed(0)
    net = models.googlenet(num_classes=4, dropout=0.0, init_weights=False)
    x = ember.randn(2, 3, 32, 32)
    out = net(x)
    assert type(out).__name__ == "GoogLeNetOutputs" and out._fields == (
        "logits", "aux_logits2", "aux_logits1")
    assert all(o.shape == (2, 4) for o in out)
    assert net.eval()(x).shape == (2, 4)
    # torchvision's order: aux_logits2 is aux2's output (after inception4d), aux_logits1 aux1's
    seen = {}
    for name in ("aux1", "aux2"):
        getattr(net, name).register_forward_hook(
            lambda m, i, o, name=name: seen.__setitem__(name, o.detach().numpy()))
    out = net.train()(x)
    np.testing.assert_array_equal(out.aux_logits1.detach().numpy(), seen["aux1"])
    np.testing.assert_array_equal(out.aux_logits2.detach().numpy(), seen["aux2"])
    assert models.googlenet(aux_logits=False).aux1 is None
    # the auxiliary classifier needs 299-pixel inputs: a pooled linear one stands in for it
    # (through inception_blocks), and the real one runs on its 17x17 grid alone
    blocks = [inception.BasicConv2d, inception.InceptionA, inception.InceptionB,
              inception.InceptionC, inception.InceptionD, inception.InceptionE,
              lambda channels, classes: ember.nn.Sequential(
                  ember.nn.AdaptiveAvgPool2d(1), ember.nn.Flatten(), ember.nn.Linear(channels,
                                                                                     classes))]
    inc = models.inception_v3(num_classes=3, init_weights=False, inception_blocks=blocks)
    y = inc(ember.randn(2, 3, 75, 75))
    assert type(y).__name__ == "InceptionOutputs" and y.aux_logits.shape == (2, 3)
    assert inc.eval()(ember.randn(1, 3, 75, 75)).shape == (1, 3)
    assert inception.InceptionAux(768, 3)(ember.randn(2, 768, 17, 17)).shape == (2, 3)
    with init.skipping():
        assert models.inception_v3(aux_logits=False, num_classes=3).AuxLogits is None


def test_transform_input_renormalizes_imagenet_input():
    ember.manual_seed(0)
    plain = models.GoogLeNet(num_classes=3, aux_logits=False, init_weights=False).eval()
    shifted = models.GoogLeNet(num_classes=3, aux_logits=False, transform_input=True,
                               init_weights=False).eval()
    shifted.load_state_dict(plain.state_dict())
    x = ember.randn(1, 3, 32, 32)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    renormalized = (x.numpy() * std[:, None, None] + mean[:, None, None] - 0.5) / 0.5
    np.testing.assert_allclose(shifted(x).detach().numpy(),
                               plain(ember.tensor(renormalized, dtype=ember.float32))
                               .detach().numpy(), rtol=1e-4, atol=1e-5)


def test_initialization():  # GoogLeNet's and Inception's truncated normals take seconds
    ember.manual_seed(0)
    swin = models.SwinTransformer([4, 4], 16, [2], [2], [2, 2], num_classes=3)
    assert float(swin.head.bias.abs().sum()) == 0.0
    assert float(swin.features[1][0].mlp[0].bias.abs().max()) < 1e-4
    reg = models.regnet_x_400mf(num_classes=10)
    assert abs(float(reg.fc.weight.std()) - 0.01) < 0.001


def test_errors():
    with pytest.raises(ValueError, match="blocks length should be 3 instead of 2"):
        models.GoogLeNet(blocks=[None, None])
    with pytest.raises(ValueError, match="inception_blocks should be 7 instead of 1"):
        models.Inception3(inception_blocks=[None])
    with pytest.raises(ValueError, match="Input size \\(8, 8\\) of block 0 is not divisible"):
        models.MaxVit((32, 32), 8, 3, [8, 16], [1, 1], head_dim=4, stochastic_depth_prob=0.0)
    with pytest.raises(ValueError, match="window_size and shift_size must be of length 2"):
        models.swin_transformer.ShiftedWindowAttention(8, [7], [0, 0], 2)
    with pytest.raises(ValueError, match=r"expected an \(N, H, W, C\) input"):
        models.swin_transformer.shifted_window_attention(
            ember.zeros(4, 4, 8), ember.zeros(24, 8), ember.zeros(8, 8),
            ember.zeros(1, 2, 4, 4), [2, 2], 2, [0, 0])


def _fit(model, x, target, loss_of, steps=3):
    for m in model.modules():  # dropout would make the losses noisy
        if isinstance(m, ember.nn.Dropout):
            m.p = 0.0
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(model(x), target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def _with_aux(out, target):  # torchvision's reference recipe weighs auxiliary losses by 0.4/0.3
    return F.cross_entropy(out[0], target) + 0.3 * sum(
        F.cross_entropy(o, target) for o in out[1:])


@pytest.mark.parametrize("build, size, loss_of", [
    (lambda: models.googlenet(num_classes=4, init_weights=False), 32, _with_aux),
    (lambda: models.regnet_y_400mf(num_classes=4), 64, F.cross_entropy),
    (lambda: models.SwinTransformer([2, 2], 16, [2, 2], [2, 4], [4, 4], num_classes=4), 32,
     F.cross_entropy),
    (lambda: models.MaxVit((32, 32), 8, 2, [8, 16], [1, 2], head_dim=4,
                           stochastic_depth_prob=0.0, num_classes=4), 32, F.cross_entropy),
    (lambda: models.swin_v2_t(num_classes=4, embed_dim=24, depths=[1, 1, 1, 1],
                              window_size=[2, 2]), 32, F.cross_entropy),
])
def test_a_few_training_steps_lower_the_loss(build, size, loss_of):
    ember.manual_seed(0)
    model = build()
    x, target = ember.randn(4, 3, size, size), ember.tensor([0, 1, 2, 3])
    losses = _fit(model, x, target, loss_of)
    assert losses[-1] < losses[0] and all(np.isfinite(losses))


def test_maxvit_batch_norm_is_torchvisions():
    """torchvision builds BatchNorm2d(eps=1e-3, momentum=0.99) in PyTorch's convention (the new
    batch weighs 0.99), not TensorFlow's 0.99 decay: a train step moves running stats that far."""
    net = models.MaxVit((32, 32), 8, 2, [8], [1], head_dim=4, stochastic_depth_prob=0.0)
    norms = {(m.eps, m.momentum) for m in net.modules() if isinstance(m, ember.nn.BatchNorm2d)}
    assert norms == {(1e-3, 0.99)}
    bn = net.stem[0][1]
    x = ember.randn(2, 3, 32, 32)
    net.train()(x)
    batch_mean = net.stem[0][0](x).mean((0, 2, 3)).detach()
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.99 * batch_mean.numpy(), rtol=1e-4,
                               atol=1e-6)
