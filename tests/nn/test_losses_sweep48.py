"""Differences a torch-differential sweep of the losses found (fuzz losses48): warnings,
NaN propagation and shape checks, each compared with PyTorch."""

import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError, ShapeError

RNG = np.random.default_rng(48)
X = RNG.standard_normal((3, 4)).astype(np.float32)


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if w.category is UserWarning]


@pytest.mark.parametrize("legacy", [{"size_average": False}, {"reduce": False},
                                    {"size_average": True, "reduce": True}])
def test_legacy_reduction_arguments_warn_as_torch(legacy):
    x, t = ember.tensor(X), ember.tensor(X[::-1].copy())
    mine = _warnings(lambda: F.mse_loss(x, t, **legacy))
    ref = _warnings(lambda: torch.nn.functional.mse_loss(torch.tensor(X), torch.tensor(X),
                                                         **legacy))
    assert len(mine) == 1 and mine == ref
    assert len(_warnings(lambda: nn.CrossEntropyLoss(**legacy))) == 1
    assert _warnings(lambda: nn.CrossEntropyLoss()) == []


def test_kl_div_mean_warns_and_batchmean_does_not():
    x, t = ember.tensor(X).log_softmax(1), ember.tensor(X).softmax(1)
    assert any("batchmean" in m for m in _warnings(lambda: F.kl_div(x, t)))
    assert _warnings(lambda: F.kl_div(x, t, reduction="batchmean")) == []
    assert _warnings(lambda: F.kl_div(x, t, reduction="sum")) == []


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_kl_div_negative_target_is_nan_as_torch(dtype):
    x, t = X.astype(dtype), np.array([[-0.5, 0.0, 0.5, 1.0]] * 3, dtype)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    mine = F.kl_div(xe, ember.tensor(t), reduction="none")
    ref = torch.nn.functional.kl_div(xt, torch.tensor(t), reduction="none")
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-3)
    mine.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())


def test_kl_div_int_reduction_alias_is_silent_as_torch():
    x, t = ember.tensor(X).log_softmax(1), ember.tensor(X[::-1].copy()).softmax(1)
    assert _warnings(lambda: torch.kl_div(torch.tensor(X), torch.tensor(X).abs(), 1)) == []
    assert _warnings(lambda: ember.kl_div(x, t, 1)) == []
    np.testing.assert_allclose(ember.kl_div(x, t, 1).item(),
                               F.kl_div(x, t, reduction="sum").item() / X.size, rtol=1e-6)


def test_kl_div_gradients_with_zero_and_negative_targets_as_torch():
    x = RNG.standard_normal((2, 3))
    t = np.array([[0.0, 0.5, -0.25], [1.5, 0.0, 0.3]])
    out = []
    for lib, fn in ((ember, F.kl_div), (torch, torch.nn.functional.kl_div)):
        xi, ti = lib.tensor(x, requires_grad=True), lib.tensor(t, requires_grad=True)
        loss = fn(xi, ti, reduction="none")
        loss.sum().backward()
        out.append((loss.detach().numpy(), xi.grad.numpy(), ti.grad.numpy()))
    zero = t == 0  # the target's gradient there: torch's NaN, Ember's -input (as documented)
    assert np.isnan(out[1][2][zero]).all()
    np.testing.assert_array_equal(out[0][2][zero], -x[zero])
    out[1][2][zero] = out[0][2][zero]
    for mine, ref in zip(*out, strict=True):  # (a negative target: NaN loss and gradient)
        np.testing.assert_allclose(mine, ref, rtol=1e-12, equal_nan=True)
    tp = ember.tensor(np.abs(t) + 0.1, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda v: F.kl_div(ember.tensor(x), v, reduction="sum"), (tp,))


def test_binary_cross_entropy_refuses_nan_probabilities():
    with pytest.raises(ArgumentError, match=r"input contains NaN \(1 of 2 elements\)"):
        F.binary_cross_entropy(ember.tensor([float("nan"), 0.5]), ember.tensor([1.0, 1.0]))
    with pytest.raises(ArgumentError, match=r"in \[0.5, 1.5\]\)\. Hint: apply sigmoid"):
        F.binary_cross_entropy(ember.tensor([1.5, 0.5]), ember.tensor([1.0, 1.0]))
    with pytest.raises(RuntimeError):
        torch.nn.functional.binary_cross_entropy(torch.tensor([float("nan"), 0.5]),
                                                 torch.tensor([1.0, 1.0]))


# shapes PyTorch refuses (each case: the call's arguments as NumPy arrays)
_F32, _I64 = np.float32, np.int64
REFUSED = [
    ("margin_ranking_loss", (np.zeros(3, _F32), np.zeros((1, 3), _F32), np.ones(3, _F32))),
    ("margin_ranking_loss", (np.zeros((2, 3), _F32), np.zeros(3, _F32), np.ones((2, 1), _F32))),
    ("multilabel_soft_margin_loss", (np.float32(1), np.float32(1))),
    ("multi_margin_loss", (np.zeros((2, 3), _F32), np.zeros((2, 1), _I64))),
    ("multi_margin_loss", (np.zeros((2, 0), _F32), np.zeros(2, _I64))),
    ("cosine_embedding_loss", (X, X, np.float32(1))),
    ("cosine_embedding_loss", (X[0], X[0], np.ones(1, _F32))),
    ("soft_margin_loss", (X[0], X)),
    ("soft_margin_loss", (X[:, :1], X)),
]


@pytest.mark.parametrize("name, args", REFUSED)
def test_shapes_torch_refuses_raise_shape_errors(name, args):
    with pytest.raises((RuntimeError, IndexError)):
        getattr(torch.nn.functional, name)(*map(torch.tensor, args))
    with pytest.raises(ShapeError, match=name):
        getattr(F, name)(*map(ember.tensor, args))


@pytest.mark.parametrize("weight", [np.ones(2, _F32), np.ones((1, 3), _F32)])
def test_multi_margin_loss_checks_the_weight_shape(weight):
    x, t = np.zeros((2, 3), _F32), np.zeros(2, _I64)
    with pytest.raises((RuntimeError, ValueError)):
        torch.nn.functional.multi_margin_loss(torch.tensor(x), torch.tensor(t),
                                              weight=torch.tensor(weight))
    with pytest.raises(ShapeError, match="weight"):
        F.multi_margin_loss(ember.tensor(x), ember.tensor(t), weight=ember.tensor(weight))


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_of_a_0d_input_as_torch(p):
    x = ember.tensor(0.7, requires_grad=True)
    loss = F.multi_margin_loss(x, ember.tensor(0), p=p, reduction="none")
    ref = torch.nn.functional.multi_margin_loss(torch.tensor(0.7), torch.tensor(0), p=p,
                                                reduction="none")
    assert loss.shape == ref.shape and loss.item() == ref.item()
    loss.backward()
    assert x.grad.item() == 0.0


@pytest.mark.parametrize("x_shape, t_shape", [((2,), (1,)), ((1, 2), ()), ((2,), ()),
                                              ((1, 2), (1,))])
def test_multi_margin_loss_none_has_the_targets_shape_as_torch(x_shape, t_shape):
    x, t = np.array([0.5, 0.2], _F32).reshape(x_shape), np.ones(t_shape, _I64)
    mine = F.multi_margin_loss(ember.tensor(x), ember.tensor(t), reduction="none")
    ref = torch.nn.functional.multi_margin_loss(torch.tensor(x), torch.tensor(t),
                                                reduction="none")
    assert tuple(mine.shape) == tuple(ref.shape) == t_shape
    np.testing.assert_allclose(mine.numpy(), ref.numpy())


def test_multi_margin_loss_of_an_empty_batch():
    # PyTorch 2.13 returns uninitialized memory for 'mean' and 'sum' here (a different value
    # each call); Ember gives the empty sum 0 and the empty mean NaN, as cross_entropy's
    x, t = ember.zeros(0, 3), ember.zeros(0, dtype=ember.int64)
    assert F.multi_margin_loss(x, t, reduction="sum").item() == 0.0
    assert np.isnan(F.multi_margin_loss(x, t).item())
    assert tuple(F.multi_margin_loss(x, t, reduction="none").shape) == (0,)


def test_multilabel_soft_margin_loss_sums_the_inputs_class_dim_as_torch():
    x, t = X[0], (X > 0).astype(np.float32)  # a (C,) input against a (N, C) target
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    mine = F.multilabel_soft_margin_loss(xe, ember.tensor(t))
    ref = torch.nn.functional.multilabel_soft_margin_loss(xt, torch.tensor(t))
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-6)
    mine.backward()
    ref.backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_fixed_losses_gradcheck():
    x = ember.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    t = ember.tensor(np.array([[-0.5, 0.0, 0.5, 1.0]] * 3))
    assert ember.autograd.gradcheck(lambda v: F.kl_div(v, t.abs(), reduction="sum"), (x,))
    y = ember.tensor(RNG.standard_normal(4), requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda v: F.multilabel_soft_margin_loss(v, (t > 0).double()), (y,))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss", "kl_div"])
def test_elementwise_mean_is_mean_with_a_warning_as_torch(name):
    target = np.abs(X[::-1])  # kl_div: non-negative
    x, t = ember.tensor(X), ember.tensor(target)
    mine = []
    got = _warnings(lambda: mine.append(getattr(F, name)(x, t, reduction="elementwise_mean")))
    ref = _warnings(lambda: getattr(torch.nn.functional, name)(
        torch.tensor(X), torch.tensor(target), reduction="elementwise_mean"))
    assert len(got) == len(ref) == 1 and "elementwise_mean" in got[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert mine[0].item() == getattr(F, name)(x, t, reduction="mean").item()
        assert nn.MSELoss(reduction="elementwise_mean")(x, t).item() == mine[0].item() \
            or name != "mse_loss"
