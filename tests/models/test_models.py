"""The model zoo: output shapes, parameter counts of the PyTorch definitions, GPT sampling."""

import pytest

import ember
from ember import models
from tests.models import torch_twins


@pytest.mark.parametrize("name, twin, shape", [
    ("mlp", torch_twins.mlp, (2, 1, 28, 28)),
    ("cnn", torch_twins.cnn, (2, 1, 28, 28)),
    ("lenet5", torch_twins.lenet5, (2, 1, 28, 28)),
    ("resnet18", torch_twins.ResNet18, (2, 3, 32, 32)),
])
def test_classifiers_shape_and_parameter_count(name, twin, shape):
    model = getattr(models, name)()
    assert model(ember.randn(*shape)).shape == (2, 10)
    counts = {k: v.numel() for k, v in model.state_dict().items()}
    torch_counts = {k: v.numel() for k, v in twin().state_dict().items()
                    if not k.endswith("num_batches_tracked")}
    assert {k: v for k, v in counts.items() if not k.endswith("num_batches_tracked")} \
        == torch_counts


def test_resnet18_reads_grey_images():
    model = models.resnet18(num_classes=5, in_channels=1)
    assert model(ember.randn(2, 1, 28, 28)).shape == (2, 5)


def test_gpt_logits_generate_and_errors():
    ember.manual_seed(0)
    model = models.gpt(vocab_size=50, block_size=8, n_layer=1, n_head=2, d_model=16)
    model.eval()
    assert model(ember.randint(0, 50, (3, 8))).shape == (3, 8, 50)
    out = model.generate(ember.randint(0, 50, (2, 3)), 10, top_k=5)
    assert out.shape == (2, 13) and int(out.max().item()) < 50
    with pytest.raises(ValueError, match="exceeds block_size 8"):
        model(ember.randint(0, 50, (1, 9)))
    with pytest.raises(ValueError, match="divisible by n_head"):
        models.gpt(d_model=30, n_head=4)


@pytest.mark.parametrize("module", ["ember.models", "ember.models.small",
                                    "ember.models.resnet", "ember.models.gpt",
                                    "ember.train.config", "ember.train.progress"])
def test_docstring_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module), extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0
