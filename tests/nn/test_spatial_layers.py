"""The spatial layers (Fold, Unfold, PixelShuffle, PixelUnshuffle, ChannelShuffle, LPPool,
MaxUnpool, EmbeddingBag) against PyTorch's."""

import doctest
import importlib

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F

X = np.random.default_rng(0).standard_normal((2, 8, 6, 6))

LAYERS = [
    ("Unfold", dict(kernel_size=2, dilation=1, padding=1, stride=2), X),
    ("Fold", dict(output_size=(4, 5), kernel_size=2), X.reshape(2, 12, 24)[:, :, :12]),
    ("PixelShuffle", dict(upscale_factor=2), X),
    ("PixelUnshuffle", dict(downscale_factor=3), X),
    ("ChannelShuffle", dict(groups=4), X),
    ("LPPool1d", dict(norm_type=2, kernel_size=3, stride=2), np.abs(X[:, :, 0])),
    ("LPPool2d", dict(norm_type=3, kernel_size=2, ceil_mode=True), np.abs(X[:, :, :5, :5])),
    ("LPPool3d", dict(norm_type=2, kernel_size=2), np.abs(X.reshape(2, 2, 4, 6, 6))),
]


@pytest.mark.parametrize("name,kwargs,x", LAYERS, ids=[n for n, _, _ in LAYERS])
def test_layer_matches_torch(name, kwargs, x):
    mine, ref = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(mine) == repr(ref)
    a, b = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = mine(a), ref(b)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_layer_inverts_max_pool_like_torch(nd):
    x = X.reshape((2, 8) + {1: (36,), 2: (6, 6), 3: (2, 3, 6)}[nd])[..., 1:]
    results = []
    for lib in (ember, torch):
        pool = getattr(lib.nn, f"MaxPool{nd}d")(2, return_indices=True)
        unpool = getattr(lib.nn, f"MaxUnpool{nd}d")(2)
        t = lib.tensor(x)
        results.append((repr(unpool),
                        unpool(*pool(t), output_size=t.shape[2:]).numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_layer_matches_torch(mode):
    weight = np.random.default_rng(1).standard_normal((10, 3))
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    outs = []
    for lib in (ember, torch):
        bag = lib.nn.EmbeddingBag.from_pretrained(lib.tensor(weight), freeze=False, mode=mode,
                                                  padding_idx=2)
        out = bag(lib.tensor(idx), lib.tensor(offsets))
        out.sum().backward()
        outs.append((repr(bag), out.detach().numpy(), bag.weight.grad.numpy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_allclose(outs[0][1], outs[1][1], atol=1e-12)
    np.testing.assert_allclose(outs[0][2], outs[1][2], atol=1e-12)


def test_embedding_bag_layer_trains_and_keeps_its_padding_row_zero():
    bag = nn.EmbeddingBag(6, 4, mode="mean", padding_idx=0)
    assert float(bag.weight[0].abs().sum()) == 0
    bag(ember.tensor([[0, 1, 2], [3, 0, 0]])).sum().backward()
    assert float(bag.weight.grad[0].abs().sum()) == 0
    assert bag.weight.grad.shape == (6, 4)
    assert isinstance(F.embedding_bag(ember.tensor([[1]]), bag.weight), ember.Tensor)


@pytest.mark.parametrize("module", ["fold", "shuffle", "pooling", "sparse"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"ember.nn.{module}")
    result = doctest.testmod(mod, extraglobs={"ember": ember, "nn": nn, "F": F},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted and result.failed == 0
