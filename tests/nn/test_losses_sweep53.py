"""Differences a torch-differential sweep of the losses found (fuzz loss53), each compared
with PyTorch 2.13."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, GradError

RNG = np.random.default_rng(53)
X = RNG.standard_normal((3, 4))
P = np.exp(X[::-1]) / np.exp(X[::-1]).sum(1, keepdims=True)


@pytest.mark.parametrize("ignore_index", [0, 1, 7])
def test_cross_entropy_probability_target_refuses_ignore_index_as_torch(ignore_index):
    with pytest.raises(RuntimeError, match="ignore_index"):
        torch.nn.functional.cross_entropy(torch.tensor(X), torch.tensor(P),
                                          ignore_index=ignore_index)
    with pytest.raises(ArgumentError, match=r"cross_entropy: ignore_index"):
        F.cross_entropy(ember.tensor(X), ember.tensor(P), ignore_index=ignore_index)


@pytest.mark.parametrize("ignore_index", [-100, -1])
def test_cross_entropy_probability_target_negative_ignore_index_is_unused(ignore_index):
    mine = F.cross_entropy(ember.tensor(X), ember.tensor(P), ignore_index=ignore_index)
    ref = torch.nn.functional.cross_entropy(torch.tensor(X), torch.tensor(P),
                                            ignore_index=ignore_index)
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-12)


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32"),
                                    ("float32", "float16"), ("float16", "float64")])
def test_soft_margin_loss_result_has_the_input_dtype_as_torch(dtypes):
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([1.0, -1.0, -1.0])
    xe = ember.tensor(x, dtype=getattr(ember, dtypes[0]), requires_grad=True)
    xt = torch.tensor(x, dtype=getattr(torch, dtypes[0]), requires_grad=True)
    mine = F.soft_margin_loss(xe, ember.tensor(y, dtype=getattr(ember, dtypes[1])))
    ref = torch.nn.functional.soft_margin_loss(xt, torch.tensor(y, dtype=getattr(torch, dtypes[1])))
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-3)
    mine.backward()
    ref.backward()
    assert xe.grad.dtype == xe.dtype
    np.testing.assert_allclose(xe.grad.double().numpy(), xt.grad.double().numpy(), rtol=1e-3)


def test_kl_div_bad_reduction_error_lists_batchmean():
    x = ember.tensor(X).log_softmax(1)
    with pytest.raises(ArgumentError, match="'batchmean'"):
        F.kl_div(x, ember.tensor(P), reduction="batchmean2")
    with pytest.raises(ArgumentError, match="'none'$"):
        F.mse_loss(x, ember.tensor(P), reduction="avg")


@pytest.mark.parametrize("name,target", [("cross_entropy", [0, 3, 1]), ("nll_loss", [0, 3, 1]),
                                         ("multi_margin_loss", [0, 3, 1])])
def test_class_index_losses_refuse_a_weight_that_requires_grad_as_torch(name, target):
    w = np.abs(X[0]) + 0.1
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        getattr(torch.nn.functional, name)(torch.tensor(X, requires_grad=True),
                                           torch.tensor(target),
                                           weight=torch.tensor(w, requires_grad=True))
    x = ember.tensor(X, requires_grad=True)
    with pytest.raises(GradError, match=rf"{name}: .*not differentiable with respect to weight"):
        getattr(F, name)(x, ember.tensor(target), weight=ember.tensor(w, requires_grad=True))
    with ember.no_grad():  # no graph: nothing to refuse, as torch
        getattr(F, name)(x, ember.tensor(target), weight=ember.tensor(w, requires_grad=True))
    getattr(F, name)(x, ember.tensor(target), weight=ember.tensor(w))


def test_probability_target_cross_entropy_keeps_its_weight_gradient():
    w = ember.tensor(np.abs(X[0]) + 0.1, requires_grad=True)
    F.cross_entropy(ember.tensor(X), ember.tensor(P), weight=w).backward()
    wt = torch.tensor(np.abs(X[0]) + 0.1, requires_grad=True)
    torch.nn.functional.cross_entropy(torch.tensor(X), torch.tensor(P), weight=wt).backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10)


def test_broadcast_warning_names_the_shapes_as_tuples():
    with pytest.warns(UserWarning) as caught:
        F.mse_loss(ember.tensor(X), ember.tensor(X[:1]))
    with pytest.warns(UserWarning, match="Using a target size"):  # torch warns too
        torch.nn.functional.mse_loss(torch.tensor(X), torch.tensor(X[:1]))
    message = str(caught[0].message)
    assert "broadcast to (3, 4), which" in message and "Size" not in message
