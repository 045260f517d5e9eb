"""Fixes from the distributions sweep of session 54, each checked against torch 2.13 in
float64."""

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D


@pytest.mark.parametrize("cls", ["Bernoulli", "ContinuousBernoulli"])
@pytest.mark.parametrize("given", ["probs", "logits"])
def test_bernoulli_log_prob_gradient_keeps_precision_at_extreme_probabilities(cls, given):
    # d/dlogits of -BCE(l, v) is v - sigmoid(l); written as (1 - v) - sigmoid(-l) it lost
    # every digit below 1e-16 of sigmoid(-l) ~ 1: relative error 9e-5 at probs = 1e-12 (and
    # torch's log_prob(0) at probs = 1e-12 is off by 2e-3 relative)
    probs = np.array([1e-12, 1e-8, 0.3, 1 - 1e-9, 0.9])
    param = probs if given == "probs" else np.log(probs) - np.log1p(-probs)
    param = np.concatenate([param, param])
    value = np.array([0.0] * 5 + [1.0] * 5) if cls == "Bernoulli" else np.linspace(0, 1, 10)
    pe = ember.tensor(param, requires_grad=True)
    lp = getattr(D, cls)(**{given: pe}).log_prob(ember.tensor(value))
    lp.sum().backward()
    if cls == "Bernoulli":  # exact values (torch's log_prob and gradient cancel near 0 and 1)
        logit = param if given == "logits" else np.log(param) - np.log1p(-param)
        exact_lp = -value * np.log1p(np.exp(-logit)) - (1 - value) * np.log1p(np.exp(logit))
        np.testing.assert_allclose(lp.detach().numpy(), exact_lp, rtol=1e-12)
        exact = (value / param - (1 - value) / (1 - param) if given == "probs"
                 else value / (1 + np.exp(param)) - (1 - value) / (1 + np.exp(-param)))
        np.testing.assert_allclose(pe.grad.numpy(), exact, rtol=1e-9)
    else:
        torch_lp = torch.distributions.ContinuousBernoulli(**{given: torch.tensor(param)})
        np.testing.assert_allclose(lp.detach().numpy(),
                                   torch_lp.log_prob(torch.tensor(value)).numpy(), rtol=1e-12)
        pt = torch.tensor(param, requires_grad=True)
        torch.distributions.ContinuousBernoulli(**{given: pt}).log_prob(
            torch.tensor(value)).sum().backward()
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-9)


def test_sample_n_is_sample_of_n_with_torchs_future_warning():
    with pytest.warns(FutureWarning, match=r"sample_n\(n\)` will be deprecated"):
        torch_shape = torch.distributions.Dirichlet(torch.ones(2, 3)).sample_n(4).shape
    with pytest.warns(FutureWarning, match=r"sample_n\(n\)` will be deprecated"):
        x = D.Dirichlet(ember.ones(2, 3)).sample_n(4)
    assert tuple(x.shape) == tuple(torch_shape) == (4, 2, 3)
    with pytest.warns(FutureWarning):
        assert tuple(D.Normal(0.0, 1.0).sample_n(ember.tensor(2)).shape) == (2,)


def test_uniform_mode_is_nan_times_high_and_tracks_its_gradient():
    # torch's mode is nan * high: a tensor in the graph, so mode.sum().backward() runs (it was
    # a constant, and backward raised 'does not require grad')
    high = ember.tensor([1.0, 2.0], requires_grad=True)
    mode = D.Uniform(ember.zeros(2), high).mode
    assert mode.requires_grad and np.isnan(mode.detach().numpy()).all()
    mode.sum().backward()
    high_t = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.distributions.Uniform(torch.zeros(2), high_t).mode.sum().backward()
    np.testing.assert_array_equal(high.grad.numpy(), high_t.grad.numpy())


@pytest.mark.parametrize("given", ["probs", "logits"])
def test_binomial_log_prob_keeps_precision_near_probs_0_and_1(given):
    # v l - n softplus(l) cancels for large |l|: log_prob(5) of Binomial(5, 1 - 1e-9) was
    # off by 8e-7 relative (torch's too), and d/dprobs at probs = 1e-12 by 8e-8
    probs = np.array([1e-12, 1e-6, 0.3, 1 - 1e-6, 1 - 1e-9])
    logit = np.log(probs) - np.log1p(-probs)
    param = np.concatenate([probs, probs]) if given == "probs" else np.concatenate([logit, logit])
    value = np.array([0.0] * 5 + [5.0] * 5)
    pe = ember.tensor(param, requires_grad=True)
    lp = D.Binomial(5, **{given: pe}).log_prob(ember.tensor(value))
    lp.sum().backward()
    logit = np.concatenate([logit, logit])  # log sigmoid(+-l) = -log1p(exp(-+l)), exact here
    exact = -value * np.log1p(np.exp(-logit)) - (5 - value) * np.log1p(np.exp(logit))
    np.testing.assert_allclose(lp.detach().numpy(), exact, rtol=1e-12)
    p = np.concatenate([probs, probs])
    exact_grad = (value / p - (5 - value) / (1 - p) if given == "probs"
                  else value / (1 + np.exp(logit)) - (5 - value) / (1 + np.exp(-logit)))
    np.testing.assert_allclose(pe.grad.numpy(), exact_grad, rtol=1e-9)


def test_log_prob_at_infinite_logits_is_the_limit_on_both_sides():
    # torch gives NaN at logits +-inf (0 * inf); Ember gave NaN on one side and the limit -inf
    # on the other: now the limit on both (0 where the value is certain), as docs say
    inf = float("inf")
    logits = ember.tensor([inf, inf, -inf, -inf], dtype=ember.float64, requires_grad=True)
    got = D.Bernoulli(logits=logits).log_prob(ember.tensor([1.0, 0.0, 1.0, 0.0],
                                                            dtype=ember.float64))
    assert got.tolist() == [0.0, -inf, -inf, 0.0]
    got.sum().backward()
    assert logits.grad.tolist() == [0.0, -1.0, 1.0, 0.0]  # (torch's: the same)
    want = torch.distributions.Bernoulli(logits=torch.tensor([inf, -inf])).log_prob(
        torch.tensor([1.0, 1.0]))
    assert torch.isnan(want).all()  # (the difference the docs name)
    got = D.Binomial(5, logits=ember.tensor([inf, inf, -inf, -inf], dtype=ember.float64))
    assert got.log_prob(ember.tensor([5.0, 0.0, 5.0, 0.0], dtype=ember.float64)).tolist() == \
        [0.0, -inf, -inf, 0.0]
    assert D.Binomial(ember.tensor([0.0, 3.0]), logits=ember.tensor([2.0, 0.5])).log_prob(
        ember.tensor([0.0, 1.0])).tolist() == pytest.approx(
        torch.distributions.Binomial(torch.tensor([0.0, 3.0]), logits=torch.tensor(
            [2.0, 0.5])).log_prob(torch.tensor([0.0, 1.0])).tolist())
