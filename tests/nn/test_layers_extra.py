"""Shrink, threshold, RReLU and Softmax2d activations, alpha dropouts, local response norms and
the distance modules against torch.nn's."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.autograd.gradcheck import gradcheck
from tests.nn.helpers import compare


@pytest.mark.parametrize("name, args, kwargs, shapes", [
    ("Hardshrink", (), {}, [(3, 4)]),
    ("Hardshrink", (0.8,), {}, [(5,)]),
    ("Softshrink", (), {"lambd": 0.3}, [(2, 3, 4)]),
    ("Threshold", (0.1, -2.0), {}, [(3, 4)]),
    ("RReLU", (0.1, 0.3), {}, [(3, 4)]),
    ("Softmax2d", (), {}, [(2, 3, 4, 4)]),
    ("Softmax2d", (), {}, [(3, 2, 2)]),
    ("LocalResponseNorm", (3,), {"alpha": 0.5, "beta": 0.7, "k": 1.5}, [(2, 5, 3, 3)]),
    ("LocalResponseNorm", (2,), {}, [(2, 4, 6)]),
    ("CosineSimilarity", (), {}, [(4, 3), (4, 3)]),
    ("CosineSimilarity", (0,), {"eps": 1e-6}, [(4, 3), (1, 3)]),
    ("PairwiseDistance", (), {}, [(4, 3), (4, 3)]),
    ("PairwiseDistance", (1.0,), {"keepdim": True}, [(4, 3), (4, 3)]),
])
def test_module_matches_torch(name, args, kwargs, shapes):
    mine, ref = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    compare(ref, mine, *shapes, train=False)  # (RReLU is deterministic in evaluation)
    assert repr(mine) == repr(ref)


def test_reprs():
    for name, args in [("RReLU", ()), ("AlphaDropout", (0.2,)), ("FeatureAlphaDropout", ()),
                       ("CrossMapLRN2d", (3,)), ("Threshold", (0.5, 1.0))]:
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


def test_inplace_modules():
    x = ember.tensor([-2.0, 0.5, 3.0])
    assert nn.Threshold(1.0, 0.0, inplace=True)(x) is x and x.tolist() == [0.0, 0.0, 3.0]
    y = ember.tensor([-2.0, 3.0])
    assert nn.RReLU(0.5, 0.5, inplace=True).eval()(y) is y and y.tolist() == [-1.0, 3.0]


def test_rrelu_module_trains_randomly():
    m = nn.RReLU(0.1, 0.3)
    x = -ember.ones(10000)
    a, b = m(x), m(x)
    assert not np.array_equal(a.numpy(), b.numpy())
    assert abs(-a.mean().item() - 0.2) < 0.005
    np.testing.assert_allclose(m.eval()(x).numpy(), -0.2)


def test_softmax2d_and_threshold_errors():
    with pytest.raises(ValueError, match="Softmax2d: expected a 3-D or 4-D input"):
        nn.Softmax2d()(ember.randn(2, 3))
    with pytest.raises(TypeError, match="missing required argument 'value'"):
        nn.Threshold(0.5)


@pytest.mark.parametrize("cls", [nn.AlphaDropout, nn.FeatureAlphaDropout])
def test_alpha_dropout_modules(cls):
    m = cls(0.3)
    x = ember.randn(200, 20, 8)
    y = m(x)
    assert not np.allclose(y.numpy(), x.numpy())
    assert abs(y.mean().item()) < 0.03 and abs(y.std().item() - 1) < 0.03
    assert m.eval()(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        cls(1.5)


def test_cross_map_lrn2d_module():
    m = nn.CrossMapLRN2d(5, alpha=0.5, beta=0.75, k=2.0)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4))  # 3 channels: all in reach
    np.testing.assert_allclose(m(ember.tensor(x)).numpy(),
                               torch.nn.CrossMapLRN2d(5, 0.5, 0.75, 2.0)(torch.tensor(x)).numpy(),
                               rtol=1e-12)
    assert gradcheck(m, (ember.tensor(x, requires_grad=True),))
    np.testing.assert_allclose(m(ember.tensor(x)).numpy(),
                               nn.LocalResponseNorm(5, 0.5, 0.75, 2.0)(ember.tensor(x)).numpy())


def test_gradchecks():
    for m in (nn.LocalResponseNorm(3, alpha=0.5), nn.Softmax2d(), nn.Softshrink(0.3),
              nn.RReLU().eval()):
        x = ember.tensor(np.random.default_rng(1).uniform(0.05, 1.0, (2, 3, 2, 2))
                         * np.sign(np.random.default_rng(2).standard_normal((2, 3, 2, 2))),
                         requires_grad=True)
        assert gradcheck(m, (x,)), m
