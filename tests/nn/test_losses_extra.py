"""The margin, likelihood, triplet and CTC loss modules against torch.nn's, in every
reduction mode, with weights and the deprecated size_average/reduce pair."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5))
SIGNS = np.array([1.0, -1.0, -1.0, 1.0])
LABELS = (RNG.random((4, 5)) > 0.5).astype(np.float64)
CLASSES = np.array([0, 4, 2, 2])
LISTS = np.array([[3, 0, -1, 1, 2], [1, 1, 2, -1, 0], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0]])
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5, 0.7])


def _run(module, arrays, grads, lib):
    made = [lib.tensor(a, requires_grad=g) if g else lib.tensor(a)
            for a, g in zip(arrays, grads, strict=True)]
    out = module(*made)
    w = np.random.default_rng(1).standard_normal(tuple(out.shape))
    (out * lib.tensor(w, dtype=out.dtype)).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t, g in zip(made, grads) if g]


def check(name, arrays, grads, *args, reductions=("mean", "sum", "none"), **kwargs):
    """``nn.<name>`` and ``torch.nn.<name>`` built alike give the same loss and gradients."""
    for reduction in reductions:
        kw = dict(kwargs, reduction=reduction)
        conv = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        mine = _run(getattr(nn, name)(*args, **{k: ember.tensor(v) if isinstance(v, np.ndarray)
                                                else v for k, v in kw.items()}),
                    arrays, grads, ember)
        ref = _run(getattr(torch.nn, name)(*args, **conv), arrays, grads, torch)
        np.testing.assert_allclose(mine[0], ref[0], rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name} {reduction}")
        for m, r in zip(mine[1], ref[1], strict=True):
            np.testing.assert_allclose(m, r, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name} {reduction} grad")


def test_margin_ranking_loss():
    check("MarginRankingLoss", [X[:, 0], X[:, 1], SIGNS], [True, True, False])
    check("MarginRankingLoss", [X[:, 0], X[:, 1], SIGNS], [True, True, False], margin=0.5)


def test_hinge_embedding_loss():
    check("HingeEmbeddingLoss", [np.abs(X[:, :4]), SIGNS], [True, False], margin=1.5)


def test_soft_margin_losses():
    check("SoftMarginLoss", [X[:, :4], SIGNS], [True, False])
    check("MultiLabelSoftMarginLoss", [X, LABELS], [True, False])
    check("MultiLabelSoftMarginLoss", [X, LABELS], [True, False], weight=WEIGHT)


def test_multi_margin_loss():
    x = X * 0.3
    check("MultiMarginLoss", [x, CLASSES], [True, False])
    check("MultiMarginLoss", [x, CLASSES], [True, False], p=2, margin=0.7, weight=WEIGHT)
    with pytest.raises(ValueError, match="p = 1 and p = 2"):
        nn.MultiMarginLoss(p=3)


def test_multilabel_margin_loss():
    check("MultiLabelMarginLoss", [X, LISTS], [True, False])
    check("MultiLabelMarginLoss", [X[0], LISTS[0]], [True, False])


def test_triplet_losses():
    a, p, n = (RNG.standard_normal((4, 3)) for _ in range(3))
    check("TripletMarginLoss", [a, p, n], [True, True, True], margin=2.0)
    check("TripletMarginLoss", [a, p, n], [True, True, True], p=1.0, swap=True, margin=3.0)
    check("TripletMarginWithDistanceLoss", [a, p, n], [True, True, True], margin=2.0,
          swap=True)
    mine = nn.TripletMarginWithDistanceLoss(
        distance_function=nn.PairwiseDistance(p=1.0), margin=3.0, reduction="none")
    ref = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=torch.nn.PairwiseDistance(p=1.0), margin=3.0, reduction="none")
    np.testing.assert_allclose(_run(mine, [a, p, n], [True] * 3, ember)[0],
                               _run(ref, [a, p, n], [True] * 3, torch)[0], rtol=1e-12)
    for cls in (nn.TripletMarginLoss, nn.TripletMarginWithDistanceLoss):
        with pytest.raises(ValueError, match="margin must be greater than 0"):
            cls(margin=0)


def test_likelihood_losses():
    counts = RNG.integers(0, 5, (4, 5)).astype(np.float64)
    check("PoissonNLLLoss", [X, counts], [True, False])
    check("PoissonNLLLoss", [np.abs(X) + 0.1, counts], [True, False], log_input=False,
          full=True, eps=1e-4)
    var = np.abs(RNG.standard_normal((4, 5))) + 0.2
    check("GaussianNLLLoss", [X, X[::-1].copy(), var], [True, False, True])
    check("GaussianNLLLoss", [X, X[::-1].copy(), var[:, :1].copy()], [True, True, True],
          full=True, eps=1e-3)


def test_ctc_loss_module():
    logits = RNG.standard_normal((6, 2, 5))

    def run(module, lib):
        x = lib.tensor(logits, requires_grad=True)
        loss = module(x.log_softmax(2), lib.tensor([[1, 2, 2], [3, 0, 0]]),
                      lib.tensor([6, 5]), lib.tensor([3, 1]))
        loss.sum().backward()
        return loss.detach().numpy(), x.grad.numpy()

    for kw in ({}, {"reduction": "sum"}, {"reduction": "none", "blank": 4},
               {"zero_infinity": True}):
        mine, ref = run(nn.CTCLoss(**kw), ember), run(torch.nn.CTCLoss(**kw), torch)
        for m, r in zip(mine, ref, strict=True):
            np.testing.assert_allclose(m, r, rtol=1e-10, atol=1e-12, err_msg=str(kw))


@pytest.mark.parametrize("legacy, reduction", [((None, False), "none"), ((False, None), "sum"),
                                               ((True, True), "mean")])
def test_legacy_reduction_arguments(legacy, reduction):
    size_average, reduce = legacy
    for name in ("MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
                 "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
                 "TripletMarginLoss", "PoissonNLLLoss"):
        module = getattr(nn, name)(size_average=size_average, reduce=reduce)
        assert module.reduction == reduction, name


def test_weights_are_buffers_and_reprs():
    w = ember.tensor(WEIGHT)
    assert list(nn.MultiMarginLoss(weight=w).state_dict()) == ["weight"]
    assert list(nn.MultiLabelSoftMarginLoss(weight=w).state_dict()) == ["weight"]
    assert repr(nn.TripletMarginWithDistanceLoss()) == repr(
        torch.nn.TripletMarginWithDistanceLoss())
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.CTCLoss(reduction="avg")
