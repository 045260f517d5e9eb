"""``nn.AdaptiveLogSoftmaxWithLoss`` against torch on the same weights: the (output, loss) pair
and its gradients, ``log_prob``, ``predict``, the layout, the initialization and the errors."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.autograd import gradcheck
from tests.nn.helpers import copy_state

CONFIGS = [dict(in_features=16, n_classes=12, cutoffs=[3, 7], div_value=2.0),
           dict(in_features=8, n_classes=6, cutoffs=[4], head_bias=True)]


def pair(**config):
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(**config).double()
    e = nn.AdaptiveLogSoftmaxWithLoss(**config, dtype=ember.float64)
    copy_state(t, e)
    return t, e


@pytest.mark.parametrize("config", CONFIGS)
def test_forward_and_gradients_match_torch(config):
    t, e = pair(**config)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    rng = np.random.default_rng(0)
    target = np.concatenate([rng.permutation(config["n_classes"]), [0]])  # every class
    x = rng.standard_normal((len(target), config["in_features"]))
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    t_out, e_out = t(tx, torch.tensor(target)), e(ex, ember.tensor(target))
    assert type(e_out).__name__ == "_ASMoutput" and e_out._fields == ("output", "loss")
    np.testing.assert_allclose(e_out.output.detach().numpy(), t_out.output.detach().numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(e_out.loss.item(), t_out.loss.item(), rtol=1e-12)
    w = rng.standard_normal(len(target))
    (t_out.loss + (t_out.output * torch.tensor(w)).sum()).backward()
    (e_out.loss + (e_out.output * ember.tensor(w)).sum()).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    grads = dict(e.named_parameters())
    for name, p in t.named_parameters():
        np.testing.assert_allclose(grads[name].grad.numpy(), p.grad.numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)
    single = e(ex[2].detach(), ember.tensor(target[2]))  # unbatched
    assert single.output.shape == () and np.isclose(single.output.item(),
                                                    e_out.output[2].item())


@pytest.mark.parametrize("config", CONFIGS)
def test_log_prob_and_predict_match_torch(config):
    t, e = pair(**config)
    x = np.random.default_rng(1).standard_normal((9, config["in_features"])) * 3
    np.testing.assert_allclose(e.log_prob(ember.tensor(x)).detach().numpy(),
                               t.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(e.predict(ember.tensor(x)).numpy(),
                                  t.predict(torch.tensor(x)).numpy())


def test_gradcheck():
    _, e = pair(in_features=4, n_classes=5, cutoffs=[2], div_value=2.0)
    target = ember.tensor([0, 3, 4])
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x: e(x, target).output, (x,))


def test_initialization_matches_torch_distribution():
    e = nn.AdaptiveLogSoftmaxWithLoss(64, 100, cutoffs=[10, 40], div_value=2.0)
    assert [tuple(p.shape) for p in e.parameters()] == [(12, 64), (32, 64), (30, 32),
                                                        (16, 64), (60, 16)]
    bound = 1 / np.sqrt(64)  # Linear's kaiming_uniform(a=sqrt(5)) over fan-in 64
    w = e.head.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert e.head.bias is None and nn.AdaptiveLogSoftmaxWithLoss(8, 4, [2], head_bias=True
                                                                 ).head.bias is not None


def test_errors():
    with pytest.raises(ValueError, match="length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [])
    for bad in ([5, 3], [0, 3], [3, 10], [3, 3]):
        with pytest.raises(ValueError, match="unique, positive integers"):
            nn.AdaptiveLogSoftmaxWithLoss(4, 10, bad)
    e = nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3])
    with pytest.raises(IndexError, match=r"should be in \[0, 5\].*\[0, 6\]"):
        e(ember.randn(2, 4), ember.tensor([0, 6]))
    with pytest.raises(ValueError, match="same batch size"):
        e(ember.randn(3, 4), ember.tensor([0, 1]))
    with pytest.raises(ValueError, match="0-D or 1-D target"):
        e(ember.randn(2, 4), ember.tensor([[0, 1]]))
    for dtype in ("float32", "bool", "uint8", "int8", "int16"):  # (torch: gather refuses them)
        with pytest.raises(TypeError, match="AdaptiveLogSoftmaxWithLoss: target must hold "
                           f"integer class indices as int64 or int32, got {dtype}"):
            e(ember.randn(2, 4), ember.tensor([0, 1], dtype=getattr(ember, dtype)))
    assert e(ember.randn(2, 4), ember.tensor([0, 5], dtype=ember.int32)).output.shape == (2,)
    with pytest.raises(ValueError, match=r"log_prob: expected an \(N, 4\) input"):
        e.log_prob(ember.randn(4))
