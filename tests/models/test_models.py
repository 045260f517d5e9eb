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


def test_zero_init_residual_applies_with_the_cifar_stem():
    # it was ignored with small_input=True: every block's last norm kept weight 1
    from ember.models import BasicBlock, Bottleneck, ResNet
    for block, last in ((BasicBlock, "bn2"), (Bottleneck, "bn3")):
        model = ResNet(block, [1, 1, 1, 1], zero_init_residual=True, small_input=True)
        blocks = [m for m in model.modules() if isinstance(m, block)]
        assert len(blocks) == 4
        assert all(getattr(b, last).weight.abs().sum().item() == 0 for b in blocks)
        assert model.bn1.weight.abs().sum().item() == 64  # (other norms untouched)


@pytest.mark.parametrize("call, match", [
    (lambda: models.gpt(n_head=0), "positive number of heads"),
    (lambda: models.gpt(n_head=-2, d_model=4), "positive number of heads"),
    (lambda: _tiny_gpt()(ember.randint(0, 20, (5,))), r"shape \(batch, time\).*\(5,\)"),
    (lambda: _tiny_gpt().generate(ember.ones(1, 2, dtype=ember.long), 1, temperature=0),
     "temperature must be positive"),
    (lambda: _tiny_gpt().generate(ember.ones(1, 2, dtype=ember.long), 1, top_k=0),
     "top_k must be at least 1"),
    (lambda: _tiny_gpt().generate(ember.ones(3, dtype=ember.long), 1), "at least one token"),
    (lambda: _tiny_gpt().generate(ember.ones(1, 0, dtype=ember.long), 1), "at least one token"),
])
def test_gpt_bad_arguments_are_named(call, match):
    # were ZeroDivisionError, IndexError, multinomial's or lt's errors
    with pytest.raises(ValueError, match=match):
        call()


def _tiny_gpt():
    return models.gpt(vocab_size=20, block_size=8, n_layer=1, n_head=2, d_model=8).eval()
