"""ember.vision.models against the same networks built in plain torch.nn
(``torch_models.py``, one per family, most built small): identical state-dict layouts, and,
with torch's weights copied in, the same outputs (eval and train mode) and input gradients in
float64."""

import contextlib
from functools import partial

import numpy as np
import pytest
import torch

import ember
from ember.nn import init
from ember.vision import models
from tests.vision import torch_models

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def torch_on_one_thread():
    """torch's float64 (depthwise) convolutions on two OpenMP threads of a busy machine run
    tens of times slower than on one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def layout(state):
    return [(k, tuple(v.shape)) for k, v in state.items()]


@contextlib.contextmanager
def float64_by_default():
    before = torch.get_default_dtype(), ember.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    ember.set_default_dtype(ember.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before[0])
        ember.set_default_dtype(before[1])


def twins(ours, theirs):
    """Both networks built in float64, ours holding theirs's weights (shared memory, no copies
    of the big classifiers; ours skips its own random fills)."""
    torch.manual_seed(0)
    with float64_by_default():
        theirs = theirs()
        with init.skipping():
            ours = ours()
    assert layout(ours.state_dict()) == layout(theirs.state_dict())
    ours.load_state_dict({k: ember.from_numpy(v.numpy()) for k, v in theirs.state_dict().items()},
                         assign=True)
    for model in (ours, theirs):  # only input gradients are compared
        for p in model.parameters():
            p.requires_grad_(False)
    return ours, theirs


def narrowed(build, hidden=16):
    """``build()`` with the hidden linear layers of its classifier ``hidden`` wide instead of
    4096 (a float64 twin of AlexNet's or VGG's costs gigabytes); the classifier's order,
    activations and dropouts stay the model's own."""
    def make():
        model = build()
        linears = [i for i, m in enumerate(model.classifier) if isinstance(m, ember.nn.Linear)]
        for i in linears:
            m = model.classifier[i]
            model.classifier[i] = ember.nn.Linear(m.in_features if i == linears[0] else hidden,
                                                  m.out_features if i == linears[-1] else hidden)
        return model
    return make


def assert_same_network(ours, theirs, size, batch=2, modes=(False, True), atol=1e-11):
    """Outputs and input gradients of the twins in eval mode, then in train mode (batch
    statistics; torch runs first, so the shared running statistics it updates are read by
    neither). ``size``: the input's side, or its (height, width)."""
    x = RNG.standard_normal((batch, 3, *((size, size) if isinstance(size, int) else size)))
    assert_same_outputs(ours, theirs, x, modes, atol)


def assert_same_outputs(ours, theirs, x, modes=(False, True), atol=1e-11):
    """The twins' outputs and input gradients on the array ``x``, each mode of ``modes``."""
    ours, theirs = twins(ours, theirs)
    for train in modes:
        ours.train(train)
        theirs.train(train)
        xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
        yt, ye = theirs(xt), ours(xe)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-9,
                                   atol=atol)
        g = RNG.standard_normal(tuple(yt.shape))
        yt.backward(torch.tensor(g))
        ye.backward(ember.tensor(g))
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=atol)


def test_alexnet():  # no norm layers: with dropout 0 train mode is eval mode
    assert_same_network(narrowed(partial(models.alexnet, num_classes=10, dropout=0.0)),
                        partial(torch_models.alexnet, num_classes=10, dropout=0.0, hidden=16),
                        size=64, modes=(False,))


def test_vgg11_bn():  # train mode only: its batch norms' eval mode is MobileNetV2's test
    cfg = models.vgg.CONFIGS["A"]
    assert_same_network(narrowed(partial(models.vgg11_bn, num_classes=10, dropout=0.0)),
                        partial(torch_models.vgg, cfg, True, num_classes=10, dropout=0.0,
                                hidden=16), size=32, modes=(True,))


@pytest.mark.parametrize("width_mult", [1.0, 0.35])
def test_mobilenet_v2(width_mult):
    assert_same_network(
        partial(models.mobilenet_v2, num_classes=10, width_mult=width_mult, dropout=0.0),
        partial(torch_models.mobilenet_v2, num_classes=10, width_mult=width_mult, dropout=0.0),
        size=64)  # at 32 pixels the last norms see 2 values per channel: ill-conditioned


def test_vision_transformer():
    def theirs():
        model = torch_models.VisionTransformer(32, 8, 2, 2, 16, 24, num_classes=5)
        torch.nn.init.normal_(model.heads.head.weight)  # torchvision zeroes it: make it count
        return model

    ours = partial(models.VisionTransformer, image_size=32, patch_size=8, num_layers=2,
                   num_heads=2, hidden_dim=16, mlp_dim=24, num_classes=5)
    assert_same_network(ours, theirs, size=32, batch=3)


@pytest.mark.parametrize("ours, theirs", [(models.alexnet, torch_models.alexnet),
                                           (models.mobilenet_v2, torch_models.mobilenet_v2)])
def test_full_size_layouts_match_torch(ours, theirs):
    with init.skipping():
        ours = ours()
    with torch.device("meta"):  # shapes without memory
        theirs = theirs()
    assert layout(ours.state_dict()) == layout(theirs.state_dict())


@pytest.mark.parametrize("version, size", [("1_0", 39), ("1_1", 36)])
def test_squeezenet(version, size):  # sizes where the ceil-mode pools round up
    assert_same_network(partial(models.SqueezeNet, version, num_classes=10, dropout=0.0),
                        partial(torch_models.squeezenet, version, num_classes=10, dropout=0.0),
                        size=size)


def test_shufflenet_v2():
    assert_same_network(partial(models.shufflenet_v2_x0_5, num_classes=10),
                        partial(torch_models.shufflenet_v2, [4, 8, 4], [24, 48, 96, 192, 1024],
                                num_classes=10), size=(65, 47))


def test_mobilenet_v3_small():  # train mode: the small late norms cost a few digits
    assert_same_network(
        partial(models.mobilenet_v3_small, num_classes=5, dropout=0.0, width_mult=0.5),
        partial(torch_models.mobilenet_v3_small, num_classes=5, dropout=0.0, width_mult=0.5),
        size=48, atol=1e-9)


def test_efficientnet_mbconv_and_fused_mbconv():
    rows = [(True, 1, 3, 1, 8, 8, 2), (True, 4, 3, 2, 8, 16, 1), (False, 4, 5, 2, 16, 24, 2),
            (False, 1, 3, 1, 24, 16, 1)]

    def ours():
        setting = [(models.FusedMBConvConfig if fused else models.MBConvConfig)(*row)
                   for fused, *row in rows]
        return models.EfficientNet(setting, 0.0, stochastic_depth_prob=0.0, num_classes=5,
                                   norm_layer=partial(ember.nn.BatchNorm2d, eps=1e-3))

    theirs = partial(torch_models.efficientnet, rows, num_classes=5,
                     norm=partial(torch.nn.BatchNorm2d, eps=1e-3))
    assert_same_network(ours, theirs, size=(33, 45))


def test_densenet():
    assert_same_network(partial(models.DenseNet, 8, (2, 3), 16, num_classes=5),
                        partial(torch_models.densenet, 8, (2, 3), 16, num_classes=5),
                        size=(35, 29))


def test_mnasnet():
    assert_same_network(partial(models.mnasnet0_5, num_classes=5, dropout=0.0),
                        partial(torch_models.mnasnet, 0.5, num_classes=5), size=48)


def test_convnext():
    def ours():
        setting = [models.CNBlockConfig(8, 16, 2), models.CNBlockConfig(16, None, 1)]
        return models.ConvNeXt(setting, num_classes=4)

    theirs = partial(torch_models.convnext, (8, 16), (2, 1), num_classes=4)
    assert_same_network(ours, theirs, size=32)
