"""Margin, ranking, embedding and likelihood losses against PyTorch and finite differences."""

import numpy as np
import pytest
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import Const, OpCase, S, arg, op_tests

SIGNS = Const(np.array([1.0, -1.0, -1.0, 1.0]))
LABELS = Const(np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]))

CASES = [
    OpCase("poisson_nll_loss", F.poisson_nll_loss, TF.poisson_nll_loss, [
        S(arg(3, 4), arg(3, 4, low=0.0, high=4.0)),
        S(arg(3, 4, low=0.1, high=3.0), arg(3, 4, low=0.0, high=4.0), log_input=False,
          full=True, reduction="sum"),
    ]),
    OpCase("gaussian_nll_loss", F.gaussian_nll_loss, TF.gaussian_nll_loss, [
        S(arg(3, 4), arg(3, 4), arg(3, 4, low=0.2, high=2.0)),
        S(arg(3, 4), arg(3, 4), arg(3, low=0.2, high=2.0), full=True, reduction="none"),
        S(arg(3, 4), arg(3, 4), arg(3, 1, low=0.2, high=2.0), reduction="sum"),
    ]),
    OpCase("margin_ranking_loss", F.margin_ranking_loss, TF.margin_ranking_loss, [
        S(arg(4), arg(4), SIGNS),
        S(arg(4), arg(4), SIGNS, margin=0.5, reduction="none"),
    ]),
    OpCase("hinge_embedding_loss", F.hinge_embedding_loss, TF.hinge_embedding_loss, [
        S(arg(4, low=0.0, high=2.0), SIGNS),
        S(arg(2, 4, low=0.0, high=2.0), SIGNS, margin=1.5, reduction="sum"),
    ]),
    OpCase("soft_margin_loss", F.soft_margin_loss, TF.soft_margin_loss, [
        S(arg(4), SIGNS), S(arg(3, 4), SIGNS, reduction="none"),
    ]),
    OpCase("multilabel_soft_margin_loss", F.multilabel_soft_margin_loss,
           TF.multilabel_soft_margin_loss, [
               S(arg(2, 3), LABELS),
               S(arg(2, 3), LABELS, arg(3, low=0.5, high=2.0, grad=False), reduction="none"),
           ]),
    OpCase("multi_margin_loss", F.multi_margin_loss, TF.multi_margin_loss, [
        S(arg(4, 5, low=-0.5, high=0.5), Const(np.array([0, 4, 2, 2]))),
        S(arg(4, 5, low=-0.5, high=0.5), Const(np.array([0, 4, 2, 2])), p=2, margin=0.7,
          reduction="sum"),
        S(arg(5, low=-0.5, high=0.5), Const(np.array(3))),
    ]),
    OpCase("multi_margin_loss_weight",
           lambda x, t, w: F.multi_margin_loss(x, t, weight=w, reduction="none"),
           lambda x, t, w: TF.multi_margin_loss(x, t, weight=w, reduction="none"),
           [S(arg(4, 5, low=-0.5, high=0.5), Const(np.array([0, 4, 2, 2])),
              arg(5, low=0.5, high=2.0, grad=False))]),
    OpCase("cosine_embedding_loss", F.cosine_embedding_loss, TF.cosine_embedding_loss, [
        S(arg(4, 3), arg(4, 3), SIGNS),
        S(arg(4, 3), arg(4, 3), SIGNS, margin=-0.5, reduction="none"),
    ]),
    OpCase("triplet_margin_loss", F.triplet_margin_loss, TF.triplet_margin_loss, [
        S(arg(4, 3), arg(4, 3), arg(4, 3), margin=2.0),
        S(arg(4, 3), arg(4, 3), arg(4, 3), p=1, swap=True, reduction="none", margin=3.0),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_margin_loss_errors():
    with pytest.raises(IndexError, match="target class 5"):
        F.multi_margin_loss(ember.randn(2, 5), ember.tensor([0, 5]))
    with pytest.raises(ValueError, match="p = 1 and p = 2"):
        F.multi_margin_loss(ember.randn(2, 5), ember.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(ember.randn(3), ember.randn(3), ember.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="does not fit"):
        F.gaussian_nll_loss(ember.randn(3, 4), ember.randn(3, 4), ember.ones(2))


def test_compiled_multi_margin_loss_follows_each_calls_targets():
    models, steps = [], []
    for _ in range(2):
        ember.manual_seed(0)
        model = ember.nn.Linear(4, 3)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        weight = ember.tensor([1.0, 2.0, 0.5])

        def step(x, y, model=model, opt=opt, weight=weight):
            loss = F.multi_margin_loss(model(x), y, p=2, weight=weight)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        models.append(model)
        steps.append(step)
    eager, compiled = steps[0], ember.jit.compile(steps[1])
    x = ember.randn(6, 4)
    for y in ([0] * 6, [2] * 6, [1, 2, 0, 1, 2, 0]):
        y = ember.tensor(y)
        np.testing.assert_allclose(compiled(x, y).item(), eager(x, y).item(), rtol=1e-6)
    np.testing.assert_allclose(models[1].weight.detach().numpy(),
                               models[0].weight.detach().numpy(), rtol=1e-6)
    for bad in (-1, 3):
        for fn in (eager, compiled):
            with pytest.raises(IndexError, match=rf"multi_margin_loss: target class {bad} is "
                                                 r"out of range for 3 classes"):
                fn(x, ember.tensor([0, 1, bad, 0, 1, 2]))
