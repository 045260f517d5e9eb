"""ember.vision.models: torchvision's classifiers, checked by the parameter counts torchvision
publishes, by their state-dict layouts (written out from torchvision's module structure in
``torchvision_keys.py``), by torchvision's initialization, constructor options and errors, and
by the registry (``get_model``, ``list_models``, ``get_model_builder``)."""

import math
from functools import partial

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn import init
from ember.vision import models
from tests.vision import torchvision_keys as tk

# torchvision's published num_params of each builder's ImageNet weights
PARAMS = {
    "alexnet": 61_100_840, "convnext_base": 88_591_464, "convnext_large": 197_767_336,
    "convnext_small": 50_223_688, "convnext_tiny": 28_589_128, "densenet121": 7_978_856,
    "densenet161": 28_681_000, "densenet169": 14_149_480, "densenet201": 20_013_928,
    "efficientnet_b0": 5_288_548, "efficientnet_b1": 7_794_184, "efficientnet_b2": 9_109_994,
    "efficientnet_b3": 12_233_232, "efficientnet_b4": 19_341_616, "efficientnet_b5": 30_389_784,
    "efficientnet_b6": 43_040_704, "efficientnet_b7": 66_347_960,
    "efficientnet_v2_s": 21_458_488, "efficientnet_v2_m": 54_139_356,
    "efficientnet_v2_l": 118_515_272, "googlenet": 6_624_904, "inception_v3": 27_161_264,
    "maxvit_t": 30_919_624, "mnasnet0_5": 2_218_512, "mnasnet0_75": 3_170_208,
    "mnasnet1_0": 4_383_312, "mnasnet1_3": 6_282_256, "mobilenet_v2": 3_504_872,
    "mobilenet_v3_large": 5_483_032, "mobilenet_v3_small": 2_542_856, "resnet101": 44_549_160,
    "resnet152": 60_192_808, "resnet18": 11_689_512, "resnet34": 21_797_672,
    "regnet_x_16gf": 54_278_536, "regnet_x_1_6gf": 9_190_136, "regnet_x_32gf": 107_811_560,
    "regnet_x_3_2gf": 15_296_552, "regnet_x_400mf": 5_495_976, "regnet_x_800mf": 7_259_656,
    "regnet_x_8gf": 39_572_648, "regnet_y_128gf": 644_812_894, "regnet_y_16gf": 83_590_140,
    "regnet_y_1_6gf": 11_202_430, "regnet_y_32gf": 145_046_770, "regnet_y_3_2gf": 19_436_338,
    "regnet_y_400mf": 4_344_144, "regnet_y_800mf": 6_432_512, "regnet_y_8gf": 39_381_472,
    "resnet50": 25_557_032, "resnext101_32x8d": 88_791_336, "resnext101_64x4d": 83_455_272,
    "resnext50_32x4d": 25_028_904, "shufflenet_v2_x0_5": 1_366_792,
    "shufflenet_v2_x1_0": 2_278_604, "shufflenet_v2_x1_5": 3_503_624,
    "shufflenet_v2_x2_0": 7_393_996, "squeezenet1_0": 1_248_424, "squeezenet1_1": 1_235_496,
    "swin_b": 87_768_224, "swin_s": 49_606_258, "swin_t": 28_288_354, "swin_v2_b": 87_930_848,
    "swin_v2_s": 49_737_442, "swin_v2_t": 28_351_570,
    "vgg11": 132_863_336, "vgg11_bn": 132_868_840, "vgg13": 133_047_848, "vgg13_bn": 133_053_736,
    "vgg16": 138_357_544, "vgg16_bn": 138_365_992, "vgg19": 143_667_240, "vgg19_bn": 143_678_248,
    "vit_b_16": 86_567_656, "vit_b_32": 88_224_232, "vit_h_14": 632_045_800,
    "vit_l_16": 304_326_632, "vit_l_32": 306_535_400, "wide_resnet101_2": 126_886_696,
    "wide_resnet50_2": 68_883_240,
}

# torchvision publishes GoogLeNet's count without its auxiliary classifiers, which its
# checkpoint file holds but its builder drops
PUBLISHED_WITH = {"googlenet": {"aux_logits": False}}
SEGMENTATION = {"deeplabv3_mobilenet_v3_large": 11_029_328, "deeplabv3_resnet101": 60_996_202,
                "deeplabv3_resnet50": 42_004_074, "fcn_resnet101": 54_314_346,
                "fcn_resnet50": 35_322_218, "lraspp_mobilenet_v3_large": 3_221_538}

VGG_CFG = {"11": "A", "13": "B", "16": "D", "19": "E"}
VIT = {"b_16": (16, 12, 768, 3072), "b_32": (32, 12, 768, 3072), "l_16": (16, 24, 1024, 4096),
       "l_32": (32, 24, 1024, 4096), "h_14": (14, 32, 1280, 5120)}

FUSED, PLAIN = True, False  # the kinds of MBConv stage
EFFICIENTNET_V2 = {
    "s": ([(FUSED, 1, 3, 24, 24, 2), (FUSED, 4, 3, 24, 48, 4), (FUSED, 4, 3, 48, 64, 4),
           (PLAIN, 4, 3, 64, 128, 6), (PLAIN, 6, 3, 128, 160, 9), (PLAIN, 6, 3, 160, 256, 15)], 24),
    "m": ([(FUSED, 1, 3, 24, 24, 3), (FUSED, 4, 3, 24, 48, 5), (FUSED, 4, 3, 48, 80, 5),
           (PLAIN, 4, 3, 80, 160, 7), (PLAIN, 6, 3, 160, 176, 14), (PLAIN, 6, 3, 176, 304, 18),
           (PLAIN, 6, 3, 304, 512, 5)], 24),
    "l": ([(FUSED, 1, 3, 32, 32, 4), (FUSED, 4, 3, 32, 64, 7), (FUSED, 4, 3, 64, 96, 7),
           (PLAIN, 4, 3, 96, 192, 10), (PLAIN, 6, 3, 192, 224, 19), (PLAIN, 6, 3, 224, 384, 25),
           (PLAIN, 6, 3, 384, 640, 7)], 32)}


def expected_layout(name):
    """(key, shape) pairs in order, or None where only the counts are written down."""
    if name.startswith("vgg"):
        depth, bn = name[3:5], name.endswith("_bn")
        return tk.vgg(models.vgg.CONFIGS[VGG_CFG[depth]], bn)
    if name.startswith("mnasnet"):
        return tk.mnasnet(float(name[7:].replace("_", ".")))
    if name.startswith("squeezenet"):
        return tk.squeezenet(name[-3:])
    if name.startswith("mobilenet_v3"):
        return tk.mobilenet_v3(name.rsplit("_", 1)[1])
    if name.startswith("densenet"):
        return tk.densenet(*{"121": (32, (6, 12, 24, 16), 64), "161": (48, (6, 12, 36, 24), 96),
                             "169": (32, (6, 12, 32, 32), 64),
                             "201": (32, (6, 12, 48, 32), 64)}[name[8:]])
    if name.startswith("shufflenet"):
        return tk.shufflenet_v2({"0_5": [48, 96, 192], "1_0": [116, 232, 464],
                                 "1_5": [176, 352, 704], "2_0": [244, 488, 976]}[name[-3:]])
    if name.startswith("efficientnet_v2"):
        return tk.efficientnet_v2(*EFFICIENTNET_V2[name[-1]])
    if name.startswith("efficientnet"):
        return tk.efficientnet(*{"b0": (1.0, 1.0), "b1": (1.0, 1.1), "b2": (1.1, 1.2),
                                 "b3": (1.2, 1.4), "b4": (1.4, 1.8), "b5": (1.6, 2.2),
                                 "b6": (1.8, 2.6), "b7": (2.0, 3.1)}[name[-2:]])
    if name.startswith("convnext"):
        widths = {"tiny": 96, "small": 96, "base": 128, "large": 192}[name[9:]]
        return tk.convnext([widths * 2 ** i for i in range(4)],
                           (3, 3, 9 if name.endswith("tiny") else 27, 3))
    if name.startswith("vit"):
        return tk.vit(*VIT[name[4:]])
    return None  # resnets: below; alexnet, mobilenet_v2: against torch in test_models_vs_torch


RESNET_SAMPLES = {"conv1.weight": (64, 3, 7, 7), "layer2.0.downsample.1.running_var": (512,),
                  "fc.weight": (1000, 2048)}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_count_and_state_dict_layout_are_torchvisions(name):
    with init.skipping():  # no random fills: the big models build in milliseconds
        model = models.get_model(name, **PUBLISHED_WITH.get(name, {}))
    assert sum(p.numel() for p in model.parameters()) == PARAMS[name]
    layout = [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
    expected = expected_layout(name)
    if expected is not None:
        assert len(layout) == len(expected)
        assert layout == expected
    elif name in ("resnet50", "resnext50_32x4d", "wide_resnet50_2"):
        assert len(layout) == 320 and set(RESNET_SAMPLES.items()) <= set(layout)


def test_the_registry_is_torchvisions():
    everything = sorted({**PARAMS, **SEGMENTATION,
                         **dict.fromkeys(models.list_models(models.detection)),
                         **dict.fromkeys(models.list_models(models.video)),
                         **dict.fromkeys(models.list_models(models.optical_flow)),
                         **dict.fromkeys(models.list_models(models.quantization))})
    assert models.list_models() == everything
    assert models.list_models(models) == sorted(PARAMS)
    assert models.list_models(models.segmentation) == sorted(SEGMENTATION)
    assert models.list_models(include=["vit_*", "alex*"], exclude="*_32") == [
        "alexnet", "vit_b_16", "vit_h_14", "vit_l_16"]
    # torchvision filters only on non-empty patterns: an empty include keeps everything
    assert models.list_models(models, include=[]) == sorted(PARAMS)
    assert models.list_models(include="") == models.list_models(exclude=[]) == everything
    assert models.get_model_builder("VGG11_BN") is models.vgg11_bn
    # one object per exported name: the MobileNets' blocks stay in their modules
    assert len(set(models.__all__)) == len(models.__all__)
    assert not hasattr(models, "InvertedResidual")
    assert models.get_model_builder("vgg11").__module__ == "ember.vision.models.vgg"
    with pytest.raises(ValueError, match="unknown model 'vgg17'"):
        models.get_model("vgg17")


@pytest.mark.parametrize("name", sorted({**PARAMS, **SEGMENTATION}))
def test_pretrained_weights_are_refused(name):
    with pytest.raises(ValueError, match="no pretrained weights are bundled"):
        models.get_model(name, weights="DEFAULT")
    with pytest.warns(UserWarning, match="'pretrained' is deprecated"), \
            pytest.raises(ValueError, match="pretrained=True"):
        models.get_model(name, pretrained=True)


def _std(t):
    return float(t.detach().numpy().std())


def test_torchvision_initialization():
    ember.manual_seed(0)
    m = models.mobilenet_v2(num_classes=100)
    w = m.features[0][0].weight
    assert abs(_std(w) - math.sqrt(2 / (32 * 9))) < 0.1 * math.sqrt(2 / (32 * 9))  # fan-out
    assert abs(_std(m.classifier[1].weight) - 0.01) < 0.001
    assert float(m.features[0][1].weight.mean()) == 1.0
    assert float(m.classifier[1].bias.abs().sum()) == 0
    s = models.squeezenet1_1(num_classes=50)
    assert abs(_std(s.classifier[1].weight) - 0.01) < 0.001
    bound = math.sqrt(6 / (3 * 9))  # kaiming_uniform_, fan-in
    assert abs(float(s.features[0].weight.abs().max()) - bound) < 0.05 * bound
    d = models.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, num_classes=4)
    assert abs(_std(d.features.conv0.weight) - math.sqrt(2 / 147)) < 0.15 * math.sqrt(2 / 147)
    e = models.efficientnet_b0(num_classes=10)
    assert float(e.classifier[1].weight.abs().max()) <= 1 / math.sqrt(10)
    assert _std(e.classifier[1].weight) > 0.9 / math.sqrt(30)  # uniform(-b, b): std b/sqrt(3)
    c = models.ConvNeXt([models.CNBlockConfig(16, None, 2)], num_classes=5)
    assert abs(_std(c.features[1][0].block[3].weight) - 0.02) < 0.002  # trunc_normal_ at +-2
    assert np.allclose(c.features[1][0].layer_scale.detach().numpy(), 1e-6)
    v = models.VisionTransformer(32, 8, 1, 2, 16, 32, num_classes=5, representation_size=6)
    assert float(v.heads.head.weight.abs().sum()) == 0.0 and float(v.class_token.abs().sum()) == 0
    assert abs(_std(v.encoder.pos_embedding) - 0.02) < 0.005
    assert abs(_std(v.conv_proj.weight) - math.sqrt(1 / (3 * 64))) < 0.01
    assert float(v.heads.pre_logits.weight.abs().max()) < 2.0
    assert _std(v.encoder.layers[0].mlp[0].bias) < 1e-5


def test_constructor_options():
    with init.skipping():  # (options, not values: no random fills)
        assert models.squeezenet1_0(num_classes=7, dropout=0.3).classifier[0].p == 0.3
        assert models.mobilenet_v2(dropout=0.4, width_mult=0.5).classifier[0].p == 0.4
        assert models.mobilenet_v3_small(dropout=0.1).classifier[2].p == 0.1
        alex = models.alexnet(num_classes=7, dropout=0.1)
        assert alex.classifier[0].p == alex.classifier[3].p == 0.1
        assert alex.classifier[6].out_features == 7
        vgg = models.vgg13_bn(num_classes=7, dropout=0.2, init_weights=False)
        assert vgg.classifier[2].p == 0.2 and vgg.classifier[6].out_features == 7
        assert models.efficientnet_b7().classifier[0].p == 0.5
        b6 = models.efficientnet_b6(dropout=0.1, stochastic_depth_prob=0.4)
        assert b6.classifier[0].p == 0.1 and b6.features[1][0].block[0][1].eps == 0.001
        assert b6.features[7][-1].stochastic_depth.p == pytest.approx(0.4 * 44 / 45)
        v2 = models.efficientnet_v2_m(num_classes=3)
        assert v2.classifier[0].p == 0.3 and v2.features[0][1].eps == 1e-3
        assert isinstance(v2.features[1][0], models.FusedMBConv)
        tiny = models.convnext_tiny(num_classes=3)
        assert tiny.features[7][-1].stochastic_depth.p == pytest.approx(0.1)
        assert models.convnext_base().features[7][-1].stochastic_depth.p == pytest.approx(0.5)
        vit = models.vit_b_32(image_size=64, num_classes=3, dropout=0.1)
        assert vit.encoder.pos_embedding.shape == (1, 5, 768) and vit.encoder.dropout.p == 0.1
        tail = models.mobilenet_v3_large(reduced_tail=True, dilated=True, num_classes=3)
    assert tail.features[14].block[0][0].weight.shape == (480, 80, 1, 1)  # 960 // 2, 160 // 2
    assert (tail.classifier[0].in_features, tail.classifier[0].out_features) == (480, 640)
    assert tail.features[13].block[1][0].dilation == (2, 2)
    assert tail.features[13].block[1][0].stride == (1, 1)


def _norms(model):
    return {(type(m).__name__, m.eps, getattr(m, "momentum", None)) for m in model.modules()
            if isinstance(m, (ember.nn.BatchNorm2d, ember.nn.LayerNorm))}


def test_norm_settings_are_torchvisions():
    """eps and momentum change no parameter count, and the momentum no output either."""
    with init.skipping():
        assert _norms(models.mnasnet0_5()) == {("BatchNorm2d", 1e-5, 1 - 0.9997)}
        assert _norms(models.mobilenet_v3_large()) == {("BatchNorm2d", 1e-3, 0.01)}
        assert _norms(models.efficientnet_b4()) == {("BatchNorm2d", 1e-5, 0.1)}
        assert _norms(models.efficientnet_b5()) == {("BatchNorm2d", 1e-3, 0.01)}
        assert _norms(models.efficientnet_v2_s()) == {("BatchNorm2d", 1e-3, 0.1)}
        assert _norms(models.convnext_tiny()) == {("LayerNorm", 1e-6, None),
                                                  ("LayerNorm2d", 1e-6, None)}
        assert _norms(models.vit_b_32()) == {("LayerNorm", 1e-6, None)}
        assert _norms(models.densenet121()) == {("BatchNorm2d", 1e-5, 0.1)}


def test_small_models_run_forward_and_backward():
    ember.manual_seed(0)
    v2_like = partial(models.EfficientNet, [models.FusedMBConvConfig(1, 3, 1, 8, 8, 1),
                                            models.FusedMBConvConfig(4, 3, 2, 8, 16, 2),
                                            models.MBConvConfig(4, 3, 2, 16, 24, 1)], 0.1)
    for build in (models.squeezenet1_1, models.shufflenet_v2_x0_5, models.mobilenet_v3_small,
                  v2_like, models.mnasnet0_5):
        model = build(num_classes=4)
        x = ember.randn(2, 3, 32, 32, requires_grad=True)
        loss = F.cross_entropy(model(x), ember.tensor([0, 3]))
        loss.backward()
        assert x.grad.shape == (2, 3, 32, 32) and math.isfinite(float(loss))


def test_densenet_memory_efficient_gives_the_same_gradients():
    ember.manual_seed(0)
    plain = models.DenseNet(8, (2, 2), 16, num_classes=3)
    frugal = models.DenseNet(8, (2, 2), 16, num_classes=3, memory_efficient=True)
    frugal.load_state_dict(plain.state_dict())
    x = ember.randn(2, 3, 16, 16)
    for model in (plain, frugal):
        model(x).square().sum().backward()
    g1, g2 = plain.features.conv0.weight.grad, frugal.features.conv0.weight.grad
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-5, atol=1e-6)


def test_efficientnet_and_convnext_stochastic_depth_train_mode():
    ember.manual_seed(0)
    model = models.ConvNeXt([models.CNBlockConfig(8, None, 3)], stochastic_depth_prob=0.5,
                            layer_scale=1.0, num_classes=2)
    x = ember.randn(4, 3, 16, 16)
    model.eval()
    assert np.array_equal(model(x).detach().numpy(), model(x).detach().numpy())
    model.train()
    assert not np.array_equal(model(x).detach().numpy(), model(x).detach().numpy())


def test_errors():
    with pytest.raises(ValueError, match="groups is fixed at 32"):
        models.resnext50_32x4d(groups=8)
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        models.resnet18(groups=2)
    with pytest.raises(ValueError, match="alpha should be greater than 0.0 instead of 0"):
        models.MNASNet(0)
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 1_2"):
        models.SqueezeNet("1_2")
    with pytest.raises(ValueError, match="inverted_residual_setting should be non-empty"):
        models.MobileNetV2(inverted_residual_setting=[[1, 16, 1]])
    with pytest.raises(ValueError, match="stride should be 1 or 2 instead of 3"):
        models.mobilenetv2.InvertedResidual(8, 8, 3, 6)
    with pytest.raises(ValueError, match="should not be empty"):
        models.MobileNetV3([], 1280)
    with pytest.raises(TypeError, match="List\\[MBConvConfig\\]"):
        models.EfficientNet([(1, 3, 1, 32, 16, 1)], dropout=0.2)
    with pytest.raises(TypeError, match="List\\[CNBlockConfig\\]"):
        models.ConvNeXt([(96, 192, 3)])
    with pytest.raises(ValueError, match="stages_repeats as list of 3"):
        models.ShuffleNetV2([4, 8], [24, 48, 96, 192, 1024])
    with pytest.raises(ValueError, match="Invalid combination of stride 1, inp 24 and oup 48"):
        models.shufflenetv2.InvertedResidual(24, 48, 1)
    with pytest.raises(ValueError, match="indivisible by patch size"):
        models.VisionTransformer(30, 16, 1, 2, 8, 16)
    vit = models.VisionTransformer(32, 16, 1, 2, 8, 16)
    with pytest.raises(ValueError, match="Expected 32x32 but got 32x48"):
        vit(ember.randn(1, 3, 32, 48))


def test_torchvisions_published_checkpoint_names_load():
    """torchvision's DenseNet files name ``norm1`` ``norm.1`` (and have no batch counters);
    its ViT files name the MLP's linears ``linear_1``/``linear_2``."""
    dense = models.DenseNet(8, (2, 2), 16, num_classes=3)
    state = {k.replace("norm1", "norm.1").replace("conv2", "conv.2"): v
             for k, v in dense.state_dict().items() if "num_batches" not in k}
    assert "features.denseblock1.denselayer1.norm.1.weight" in state
    state["classifier.bias"] = ember.ones(3)
    dense.load_state_dict(state)
    assert float(dense.classifier.bias.sum()) == 3.0
    assert "features.denseblock1.denselayer1.norm.1.weight" in state  # the caller's dict kept
    vit = models.VisionTransformer(32, 16, 1, 2, 8, 16)
    state = {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v
             for k, v in vit.state_dict().items()}
    state["encoder.layers.encoder_layer_0.mlp.linear_2.bias"] = ember.ones(8)
    vit.load_state_dict(state)
    assert float(vit.encoder.layers[0].mlp[3].bias.sum()) == 8.0
    with pytest.raises(RuntimeError, match="Unexpected key"):
        vit.load_state_dict({**state, "encoder.mlp.linear_3.bias": ember.ones(8)})
