"""The quantizable classifiers of ``ember.vision.models.quantization`` (defined in
``ember.quant.models``) and the quantized adaptive average pooling they need: its integers
against PyTorch's kernel, the models' layouts against torchvision's float ones, fusing,
quantizing and the registry."""

import copy
import doctest
import importlib
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import ao
from ember.errors import ArgumentError
from ember.nn import init
from ember.quant.models import quantize_model
from ember.quant.modules.pooling import adaptive_avg_pool2d, avg_pool2d
from ember.vision import models
from ember.vision.models import quantization as qmodels

from .helpers import with_batch_statistics

RESNETS = ["resnet18", "resnet50", "resnext101_32x8d", "resnext101_64x4d"]
SHUFFLENETS = ["shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
               "shufflenet_v2_x2_0"]
BUILDERS = sorted(["googlenet", "inception_v3", "mobilenet_v2", "mobilenet_v3_large", *RESNETS,
                   *SHUFFLENETS])


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_adaptive_avg_pool2d_has_pytorchs_integers(dtype):
    rng = np.random.default_rng(0)
    for _ in range(60):
        height, width = (int(v) for v in rng.integers(1, 12, 2))
        size = (int(rng.integers(1, height + 1)), int(rng.integers(1, width + 1)))
        channels = int(rng.choice([1, 3, 8, 17, 40]))  # whole vectors of 8 and the rest
        x = rng.normal(size=(2, channels, height, width)).astype(np.float32)
        scale = float(rng.uniform(0.01, 0.1))
        zero = int(rng.integers(0, 255)) if dtype == "quint8" else int(rng.integers(-128, 127))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch deprecates its quantized tensors)
            q = torch.quantize_per_tensor(torch.tensor(x), scale, zero, getattr(torch, dtype))
        # (channels last: what PyTorch's quantized convolutions give, so what models pool)
        expected = torch.nn.functional.adaptive_avg_pool2d(
            q.contiguous(memory_format=torch.channels_last), size)
        got = adaptive_avg_pool2d(
            ember.quantize_per_tensor(ember.tensor(x), scale, zero, getattr(ember, dtype)), size)
        np.testing.assert_array_equal(got.int_repr().numpy(), expected.int_repr().numpy())
        assert (got.q_scale(), got.q_zero_point()) == (scale, zero)


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_avg_pool2d_has_pytorchs_integers(dtype):
    rng = np.random.default_rng(1)
    done = 0
    while done < 60:
        kernel = [int(k) for k in rng.integers(1, 5, 2)]
        stride = [int(s) for s in rng.integers(1, 4, 2)]
        padding = [int(rng.integers(0, k // 2 + 1)) for k in kernel]
        ceil_mode, count_include_pad = bool(rng.integers(2)), bool(rng.integers(2))
        divisor = int(rng.integers(1, 10)) if done % 5 == 0 else None
        height, width = (int(v) for v in rng.integers(max(kernel), 12, 2))
        # (whole vectors of 8 channels, blocks of 16 within blocks of 128, and the rest)
        channels = int(rng.choice([1, 3, 8, 17, 40, 150]))
        x = rng.normal(size=(2, channels, height, width)).astype(np.float32)
        scale = float(rng.uniform(0.01, 0.1))
        zero = int(rng.integers(0, 255)) if dtype == "quint8" else int(rng.integers(-128, 127))
        args = (kernel, stride, padding, ceil_mode, count_include_pad, divisor)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = torch.quantize_per_tensor(torch.tensor(x), scale, zero, getattr(torch, dtype))
        expected = torch.nn.functional.avg_pool2d(
            q.contiguous(memory_format=torch.channels_last), *args)
        got = avg_pool2d(
            ember.quantize_per_tensor(ember.tensor(x), scale, zero, getattr(ember, dtype)), *args)
        np.testing.assert_array_equal(got.int_repr().numpy(), expected.int_repr().numpy())
        done += 1


def test_adaptive_avg_pool2d_shapes_and_errors():
    q = ember.quantize_per_tensor(ember.rand(3, 4, 6), 0.1, 0, ember.quint8)
    assert adaptive_avg_pool2d(q, (2, None)).shape == (3, 2, 6)
    assert ao.nn.quantized.AdaptiveAvgPool2d(1)(q).shape == (3, 1, 1)
    with pytest.raises(ArgumentError, match="output sizes must be positive"):
        adaptive_avg_pool2d(q, 0)
    with pytest.raises(ember.errors.DTypeError, match="quantized adaptive_avg_pool2d"):
        adaptive_avg_pool2d(ember.rand(1, 3, 4, 4), 1)
    assert avg_pool2d(q, 3, 1, 1).shape == (3, 4, 6)
    with pytest.raises(ArgumentError, match="padding 2 should be at most half"):
        avg_pool2d(q, 3, 1, 2)
    with pytest.raises(ember.errors.ShapeError, match="smaller than kernel_size"):
        avg_pool2d(q, 5)


@pytest.mark.parametrize("name", BUILDERS)
def test_state_dict_layout_is_the_float_models(name):
    # (the float models' layouts are torchvision's: tests/vision/test_models.py)
    with init.skipping():
        quantizable = getattr(qmodels, name)()
        plain = getattr(models, name)()
    assert [(k, tuple(v.shape)) for k, v in quantizable.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in plain.state_dict().items()]


SMALL = {"googlenet": dict(aux_logits=False, init_weights=False),
         "inception_v3": dict(aux_logits=False, init_weights=False),
         "mobilenet_v2": dict(width_mult=0.5)}
FIRST_CONV = {"googlenet": "conv1.conv", "inception_v3": "Conv2d_1a_3x3.conv",
              "mobilenet_v2": "features.0.0", "mobilenet_v3_large": "features.1.block.0.0",
              "shufflenet_v2_x0_5": "conv1.0"}


def _small(name):
    return getattr(qmodels, name)(num_classes=10, **SMALL.get(name, {}))


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large",
                                  "shufflenet_v2_x0_5", "googlenet", "inception_v3"])
def test_fuse_model_keeps_the_float_outputs(name):
    ember.manual_seed(0)
    model = with_batch_statistics(_small(name)).eval()
    x = ember.rand(2, 3, 80, 80)
    with ember.no_grad():
        before = model(x).numpy()
        model.fuse_model()
        after = model(x).numpy()
    assert type(model.get_submodule(FIRST_CONV.get(name, "conv1"))).__name__ == "ConvReLU2d"
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mobilenet_v3_large",
                                  "shufflenet_v2_x0_5", "googlenet", "inception_v3"])
def test_quantized_model_is_its_float_model_within_quantization_error(name):
    ember.manual_seed(0)
    model = with_batch_statistics(_small(name)).eval()
    float_model = copy.deepcopy(model)
    quantize_model(model, "fbgemm")
    x = ember.rand(4, 3, 80, 80)
    with ember.no_grad():
        expected = float_model(x).numpy()
    got = model(x).numpy()
    last = {"mobilenet_v2": "classifier.1", "mobilenet_v3_large": "classifier.3"}.get(name, "fc")
    last = model.get_submodule(last)
    spread = np.abs(expected).max()
    assert last.scale < 0.1 * spread  # (the outputs' quantization step)
    # (errors of each layer's 8 bits add up over the depth: up to 16 steps in Inception v3)
    assert np.abs(got - expected).max() < 0.2 * spread
    assert np.corrcoef(got.ravel(), expected.ravel())[0, 1] > 0.98
    assert np.corrcoef(got.ravel(), expected.ravel())[0, 1] > 0.99


def test_quantize_true_gives_quantized_modules():
    ember.manual_seed(0)
    model = models.get_model("quantized_resnet50", quantize=True, num_classes=10)
    nnq = ao.nn.quantized
    assert isinstance(model.quant, nnq.Quantize) and isinstance(model.dequant, nnq.DeQuantize)
    assert isinstance(model.conv1, nnq.ConvReLU2d)
    block = model.layer1[0]
    assert isinstance(block.conv3, nnq.Conv2d) and isinstance(block.skip_add_relu, nnq.QFunctional)
    assert isinstance(model.avgpool, nnq.AdaptiveAvgPool2d) and isinstance(model.fc, nnq.Linear)
    assert ember.backends.quantized.engine == "fbgemm"
    assert model(ember.rand(1, 3, 32, 32)).shape == (1, 10)


def test_builders_are_registered_and_refuse_weights():
    assert models.list_models(qmodels) == [f"quantized_{n}" for n in BUILDERS]
    builder = models.get_model_builder("quantized_resnet18")
    assert builder is qmodels.resnet18 and builder.__name__ == "resnet18"
    assert "quantized_resnet18" not in models.list_models(models)
    assert {"resnet18", "QuantizableResNet"} <= set(dir(qmodels))
    from ember.vision.models.quantization import QuantizableResNet, resnext101_64x4d
    assert QuantizableResNet is ember.quant.models.QuantizableResNet
    assert resnext101_64x4d is ember.quant.models.resnext101_64x4d
    with pytest.raises(AttributeError, match="no attribute 'resnet34'"):
        qmodels.resnet34  # noqa: B018 - torchvision has no quantizable ResNet-34
    for name in BUILDERS:
        with pytest.raises(ValueError, match="no pretrained weights are bundled"):
            models.get_model(f"quantized_{name}", weights="DEFAULT", quantize=True)
    with pytest.raises(ArgumentError, match="groups is fixed at 32"):
        qmodels.resnext101_32x8d(groups=4)
    with pytest.raises(ArgumentError, match="backend 'tpu' is not supported"):
        qmodels.resnet18(quantize=True, backend="tpu")


@pytest.mark.parametrize("name", ["ember.quant.modules.pooling", "ember.quant.models._utils",
                                  "ember.quant.models.resnet", "ember.quant.models.googlenet",
                                  "ember.quant.models.mobilenetv2",
                                  "ember.quant.models.inception",
                                  "ember.quant.models.mobilenetv3",
                                  "ember.quant.models.shufflenetv2",
                                  "ember.vision.models.quantization"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={**vars(module), "ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_quantized_mean_is_the_dequantized_mean_quantized_again():
    x = ember.quantize_per_tensor(ember.rand(2, 5, 3, 4), 0.02, 3, ember.quint8)
    got = ember.quant.modules.pooling.mean(x, [2, 3])
    expected = ember.quantize_per_tensor(x.dequantize().mean([2, 3]), 0.02, 3, ember.quint8)
    np.testing.assert_array_equal(got.int_repr().numpy(), expected.int_repr().numpy())


def test_quantize_true_other_families():
    ember.manual_seed(0)
    nnq = ao.nn.quantized
    shuffle = qmodels.shufflenet_v2_x0_5(quantize=True, num_classes=10)
    assert isinstance(shuffle.stage2[0].cat, nnq.QFunctional)
    assert isinstance(shuffle.conv5[0], nnq.ConvReLU2d)
    assert shuffle(ember.rand(1, 3, 32, 32)).shape == (1, 10)
    mobile = qmodels.mobilenet_v2(quantize=True, num_classes=10)  # (qnnpack: torchvision's)
    assert ember.backends.quantized.engine == "qnnpack"
    assert isinstance(mobile.features[2].skip_add, nnq.QFunctional)
    assert mobile(ember.rand(1, 3, 32, 32)).shape == (1, 10)
    inception = qmodels.googlenet(quantize=True, num_classes=10, init_weights=False)
    assert isinstance(inception.inception3a.cat, nnq.QFunctional)
    assert isinstance(inception.maxpool1, nnq.MaxPool2d)
    assert inception(ember.rand(1, 3, 64, 64)).shape == (1, 10)
    v3 = qmodels.inception_v3(quantize=True, num_classes=10, init_weights=False)
    assert isinstance(v3.Mixed_7c.myop3, nnq.QFunctional) and v3.Mixed_7c.myop1 is not None
    assert v3(ember.rand(1, 3, 80, 80)).shape == (1, 10)


def test_mobilenet_v3_squeeze_excitation_is_quantizable():
    # (quantize=True, torchvision's QAT flow: tests/quant/test_qat_conv_bn.py)
    model = qmodels.mobilenet_v3_large(num_classes=10)
    se = model.features[4].block[2]
    assert type(se).__name__ == "QuantizableSqueezeExcitation"
    assert isinstance(se.scale_activation, ember.nn.Hardsigmoid)


@pytest.mark.parametrize("with_bias", [False, True])
def test_conv_bn_folding_has_pytorchs_bits(with_bias):
    # (an ulp in a folded bias flipped a requantization tie in ResNeXt-101's grouped conv)
    rng = np.random.default_rng(0)
    c = 64
    conv_w = rng.normal(size=(c, 8, 3, 3)).astype(np.float32)
    conv_b = rng.normal(size=c).astype(np.float32) if with_bias else None
    mean, var = rng.uniform(-0.1, 0.1, c), rng.uniform(0.5, 1.5, c)
    weight, bias = rng.uniform(0.5, 1.5, c), rng.uniform(-0.2, 0.2, c)
    stats = [a.astype(np.float32) for a in (mean, var, weight, bias)]
    args = lambda make: [make(conv_w), None if conv_b is None else make(conv_b), make(stats[0]),  # noqa: E731
                         make(stats[1]), 1e-5, make(stats[2]), make(stats[3])]
    tw, tb = torch.nn.utils.fusion.fuse_conv_bn_weights(*args(torch.tensor))
    ew, eb = ember.nn.utils.fusion.fuse_conv_bn_weights(*args(ember.tensor))
    np.testing.assert_array_equal(ew.detach().numpy(), tw.detach().numpy())
    np.testing.assert_array_equal(eb.detach().numpy(), tb.detach().numpy())
