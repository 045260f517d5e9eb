"""ember.vision.models: torchvision's ResNet family, checked by the parameter counts and state
dict layouts torchvision documents, and by a training step."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.vision import models


@pytest.mark.parametrize("name, params, keys", [("resnet18", 11_689_512, 122),
                                                ("resnet50", 25_557_032, 320),
                                                ("resnext50_32x4d", 25_028_904, 320)])
def test_parameter_counts_and_state_dict_keys_are_torchvisions(name, params, keys):
    model = models.get_model(name)
    assert sum(p.numel() for p in model.parameters()) == params
    state = model.state_dict()
    assert len(state) == keys
    assert "layer2.0.downsample.1.running_var" in state and "fc.weight" in state
    assert tuple(state["conv1.weight"].shape) == (64, 3, 7, 7)


def test_torchvision_initialization():
    model = models.resnet50(zero_init_residual=True)
    assert float(model.layer1[0].bn3.weight.abs().sum()) == 0.0
    assert float(model.layer1[0].bn1.weight.mean()) == 1.0
    w = model.conv1.weight.detach().numpy()
    fan_out = 64 * 7 * 7
    assert abs(w.std() - np.sqrt(2.0 / fan_out)) < 0.1 * np.sqrt(2.0 / fan_out)


def test_a_training_step_and_dilation():
    ember.manual_seed(0)
    model = models.resnet18(num_classes=4)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    x, y = ember.randn(2, 3, 32, 32), ember.tensor([0, 3])
    first = F.cross_entropy(model(x), y)
    first.backward()
    opt.step()
    assert model(x).shape == (2, 4)
    dilated = models.resnet50(replace_stride_with_dilation=[False, True, True], num_classes=2)
    assert dilated.layer4[0].conv2.dilation == (2, 2)
    assert dilated.layer4(dilated.layer3(ember.randn(1, 512, 4, 4))).shape == (1, 2048, 4, 4)


def test_errors():
    with pytest.raises(ValueError, match="no pretrained weights are bundled"):
        models.resnet18(weights="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="groups is fixed at 32"):
        models.resnext50_32x4d(groups=8)
    with pytest.raises(ValueError, match="unknown model 'vgg16'"):
        models.get_model("vgg16")
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        models.resnet18(groups=2)


def test_the_legacy_pretrained_flag_warns_as_torchvision():
    with pytest.warns(UserWarning, match="'pretrained' is deprecated"):
        assert isinstance(models.resnet18(pretrained=False, num_classes=3), models.ResNet)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="pretrained=True"):
        models.resnet50(pretrained=True)
