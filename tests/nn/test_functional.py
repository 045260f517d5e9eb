"""ember.nn.functional: the namespace, linear/bilinear, and a small network end to end
against torch.nn.functional."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

CASES = [
    OpCase("linear", F.linear, TF.linear, [
        S(arg(4, 3), arg(2, 3), arg(2)),
        S(arg(2, 5, 3, noncontig=True), arg(2, 3)),
        S(arg(3), arg(3)),                             # 1-D weight: one output
        S(arg(0, 3), arg(2, 3), arg(2)),
        S(arg(2, 4, 3), arg(5, 3), arg(5)),            # leading dims folded into one GEMM
        S(arg(0, 2, 3), arg(2, 3)),
    ]),
    OpCase("bilinear", F.bilinear, TF.bilinear, [
        S(arg(4, 2), arg(4, 3), arg(5, 2, 3), arg(5)),
        S(arg(2, 3, 2), arg(2, 3, 3), arg(2, 2, 3)),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_every_name_is_torch_functional_name():
    for name in F.__all__:
        assert callable(getattr(F, name)), name
        assert hasattr(TF, name), f"{name} is not a torch.nn.functional name"
    for name in ("conv2d", "max_pool2d", "cross_entropy", "relu", "gelu", "softmax",
                 "layer_norm", "batch_norm", "dropout", "embedding", "interpolate", "pad",
                 "unfold", "fold", "sigmoid", "tanh", "logsigmoid", "one_hot", "linear"):
        assert name in F.__all__, name
    assert ember.nn.functional is F


def _net(lib, x, params, training=True):
    f = F if lib == "ember" else TF
    w1, b1, g, beta, w2, b2, emb = params
    h = f.conv2d(x, w1, b1, padding=1)
    h = f.batch_norm(h, None, None, g, beta, training=training)
    h = f.max_pool2d(f.relu(h), 2)
    h = f.avg_pool2d(f.interpolate(h, scale_factor=2, mode="bilinear"), 2)
    h = f.adaptive_avg_pool2d(h, 1).reshape(x.shape[0], -1)
    h = f.layer_norm(h, (h.shape[-1],))
    return f.linear(h, w2, b2) + f.embedding(
        (ember if lib == "ember" else torch).tensor([0, 2, 1, 2]), emb)


def test_small_network_loss_and_gradients_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 8, 8))
    shapes = [(6, 3, 3, 3), (6,), (6,), (6,), (5, 6), (5,), (3, 5)]
    params = [rng.standard_normal(s) * 0.5 for s in shapes]
    target = np.array([1, 0, 4, 2])
    e_params = [ember.from_numpy(p.copy()).requires_grad_() for p in params]
    t_params = [torch.from_numpy(p.copy()).requires_grad_() for p in params]
    e_loss = F.cross_entropy(_net("ember", ember.from_numpy(x), e_params),
                             ember.from_numpy(target), label_smoothing=0.1)
    t_loss = TF.cross_entropy(_net("torch", torch.from_numpy(x), t_params),
                              torch.from_numpy(target), label_smoothing=0.1)
    np.testing.assert_allclose(e_loss.item(), t_loss.item(), rtol=1e-10)
    e_loss.backward()
    t_loss.backward()
    for i, (e, t) in enumerate(zip(e_params, t_params, strict=True)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-10,
                                   err_msg=f"parameter {i}")


def test_functional_pad_is_the_indexing_familys():
    x = ember.ones(1, 1, 2, 2)
    assert F.pad(x, (1, 1, 1, 1)).shape == (1, 1, 4, 4)


@pytest.mark.parametrize("module", ["conv", "im2col", "pool", "softmax", "normalization",
                                    "loss", "dropout", "embedding", "interpolate", "linear",
                                    "attention", "distance", "pixel_shuffle",
                                    "margin_loss"])
def test_docstring_examples(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"ember.ops.{module}")
    result = doctest.testmod(mod, extraglobs={"ember": ember, "F": F, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "conv2d", "max_pool2d",
                                  "layer_norm", "group_norm"])
def test_top_level_aliases(name):
    top = getattr(ember, name)  # (wrapped with ``out=`` where torch's top-level one has it)
    assert getattr(top, "__wrapped__", top) is getattr(F, name)


@pytest.mark.parametrize("weight,bias", [((1, 3), (3,)), ((4, 3), (4, 1)), ((4, 3), (3, 4))])
def test_linear_refuses_a_bias_that_would_broadcast_the_output_as_torch(weight, bias):
    x, w, b = (np.ones(s, np.float32) for s in ((2, 3), weight, bias))
    with pytest.raises(RuntimeError):
        TF.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    with pytest.raises(ember.errors.ShapeError, match="bias of shape"):
        F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b))


@pytest.mark.parametrize("bias", [(4,), (1,), (2, 4), (1, 4), ()])
def test_linear_takes_a_bias_that_broadcasts_to_the_output_as_torch(bias):
    x, w, b = (np.full(s, 0.5, np.float32) for s in ((2, 3), (4, 3), bias))
    want = TF.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    got = F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    np.testing.assert_allclose(got.numpy(), want.numpy())
