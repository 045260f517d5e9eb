"""ember.vision.models.segmentation: FCN, DeepLabV3 and LR-ASPP with torchvision's parameter
counts (of its published weights, auxiliary heads included), state-dict keys, backbone
extraction, ``{"out", "aux"}`` outputs at the input resolution, refusal of pretrained
weights, and a few training steps that lower the loss. The heads' arithmetic is checked
against torch in ``test_models_blocks_vs_torch.py``."""

from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.nn import init
from ember.vision.models import segmentation
from ember.vision.models._utils import IntermediateLayerGetter
from ember.vision.models.segmentation import fcn
from tests.vision.test_models import SEGMENTATION

AUX = {"lraspp_mobilenet_v3_large": {}}  # the others' published weights hold the aux head

SAMPLES = {
    "fcn_resnet50": {"backbone.conv1.weight": (64, 3, 7, 7),
                     "backbone.layer4.2.conv3.weight": (2048, 512, 1, 1),
                     "classifier.0.weight": (512, 2048, 3, 3), "classifier.4.weight": (21, 512,
                                                                                       1, 1),
                     "aux_classifier.0.weight": (256, 1024, 3, 3),
                     "aux_classifier.4.bias": (21,)},
    "deeplabv3_resnet50": {"classifier.0.convs.0.0.weight": (256, 2048, 1, 1),
                           "classifier.0.convs.3.0.weight": (256, 2048, 3, 3),
                           "classifier.0.convs.4.1.weight": (256, 2048, 1, 1),
                           "classifier.0.convs.4.2.running_var": (256,),
                           "classifier.0.project.0.weight": (256, 1280, 1, 1),
                           "classifier.1.weight": (256, 256, 3, 3),
                           "classifier.4.weight": (21, 256, 1, 1)},
    "deeplabv3_mobilenet_v3_large": {"backbone.0.0.weight": (16, 3, 3, 3),
                                     "backbone.16.0.weight": (960, 160, 1, 1),
                                     "classifier.0.convs.0.0.weight": (256, 960, 1, 1),
                                     "aux_classifier.0.weight": (10, 40, 3, 3)},
    "lraspp_mobilenet_v3_large": {"backbone.4.block.0.0.weight": (72, 24, 1, 1),
                                  "classifier.cbr.0.weight": (128, 960, 1, 1),
                                  "classifier.scale.1.weight": (128, 960, 1, 1),
                                  "classifier.low_classifier.weight": (21, 40, 1, 1),
                                  "classifier.high_classifier.weight": (21, 128, 1, 1)},
}


@pytest.mark.parametrize("name", sorted(SEGMENTATION))
def test_parameter_counts_and_keys_are_torchvisions(name):
    with init.skipping():
        model = getattr(segmentation, name)(**AUX.get(name, {"aux_loss": True}))
    assert sum(p.numel() for p in model.parameters()) == SEGMENTATION[name]
    layout = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    samples = SAMPLES.get(name, {})
    assert {k: layout.get(k) for k in samples} == samples
    assert not any(k.startswith(("backbone.fc", "backbone.avgpool", "backbone.17"))
                   for k in layout)  # the backbone stops at its last returned layer


def test_backbones_are_dilated():
    with init.skipping():
        fcn = segmentation.fcn_resnet101(num_classes=3)
        mobile = segmentation.deeplabv3_mobilenet_v3_large(num_classes=3)
    assert fcn.aux_classifier is None and fcn.classifier[4].out_channels == 3
    assert fcn.backbone.layer4[0].conv2.dilation == (2, 2)
    assert fcn.backbone.layer4[1].conv2.dilation == (4, 4)
    assert fcn.backbone.layer3[0].downsample[0].stride == (1, 1)
    assert mobile.backbone.return_layers == {"16": "out"}
    assert mobile.backbone["13"].block[1][0].dilation == (2, 2)


def test_outputs_are_ordered_dicts_at_the_input_size():
    ember.manual_seed(0)
    x = ember.randn(1, 3, 40, 36)
    for build, keys in ((lambda: segmentation.deeplabv3_mobilenet_v3_large(
                            num_classes=4, aux_loss=True), ["out", "aux"]),
                        (lambda: segmentation.lraspp_mobilenet_v3_large(num_classes=4),
                         ["out"])):
        out = build().eval()(x)
        assert isinstance(out, OrderedDict) and list(out) == keys
        assert all(v.shape == (1, 4, 40, 36) for v in out.values())
    with init.skipping():
        fcn = segmentation.fcn_resnet50(num_classes=4, aux_loss=True)
    assert list(fcn.backbone.return_layers.values()) == ["out", "aux"]


def test_intermediate_layer_getter():
    body = IntermediateLayerGetter(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1),
                                                 nn.Tanh()), {"2": "last", "0": "first"})
    assert list(body) == ["0", "1", "2"]  # the children after the last returned are dropped
    out = body(ember.ones(1, 2))
    assert list(out) == ["first", "last"] and out["last"].shape == (1, 1)
    with pytest.raises(ValueError, match="return_layers are not present in model"):
        IntermediateLayerGetter(nn.Sequential(nn.ReLU()), {"layer4": "out"})


def test_pretrained_weights_and_unused_options_are_refused():
    with pytest.raises(ValueError, match="no pretrained weights are bundled"):
        segmentation.fcn_resnet50(weights_backbone="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="pretrained_backbone=True"):
        segmentation.deeplabv3_resnet50(pretrained_backbone=True)
    with pytest.raises(NotImplementedError, match="does not use auxiliary loss"):
        segmentation.lraspp_mobilenet_v3_large(aux_loss=True)


@pytest.mark.parametrize("build, size, lr", [
    (lambda: segmentation.lraspp_mobilenet_v3_large(num_classes=3), 32, 0.01),
    (lambda: segmentation.deeplabv3_mobilenet_v3_large(num_classes=3, aux_loss=True), 32,
     1e-3),
    (lambda: fcn.FCN(fcn.resnet_features([1, 1, 1, 1], aux=True), fcn.FCNHead(2048, 3),
                     fcn.FCNHead(1024, 3)), 16, 1e-3),  # fcn_resnet50's layout, 1 block a stage
])
def test_a_few_training_steps_lower_the_loss(build, size, lr):
    ember.manual_seed(0)
    model = build()
    for m in model.modules():  # the heads' dropout would make the losses noisy
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    x = ember.randn(2, 3, size, size)
    target = ember.tensor(np.random.default_rng(0).integers(0, 3, (2, size, size)))
    opt = ember.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out["out"], target)
        if "aux" in out:  # torchvision's reference recipe weighs it by 0.5
            loss = loss + 0.5 * F.cross_entropy(out["aux"], target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0] and all(np.isfinite(losses))


@pytest.mark.parametrize("name", ["fcn_resnet50", "deeplabv3_mobilenet_v3_large",
                                  "lraspp_mobilenet_v3_large"])
def test_num_classes_none_means_pascal_vocs_21(name):
    """torchvision's builders take ``num_classes=None`` (their default) as 21."""
    with init.skipping():
        model = getattr(segmentation, name)(num_classes=None)
    head = model.classifier.high_classifier if "lraspp" in name else model.classifier[4]
    assert head.out_channels == 21
