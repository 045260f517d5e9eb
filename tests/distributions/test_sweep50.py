"""Differences the sweep50dist sweep found against torch.distributions 2.13."""

import pytest
import torch

import ember
import ember.distributions as D

from .cases import close


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, p", [("Bernoulli", 0.0), ("Bernoulli", 1.0), ("Geometric", 1.0)])
def test_entropy_slope_at_probs_zero_and_one_is_torchs_clamped_one(name, p, dtype):
    # the exact slope is +-inf; it was NaN (0 * inf from xlogy / xlog1py); torch's clamp gives
    # -logit(eps) there, and the KLs that take the entropy (Bernoulli || Poisson) follow it
    e = ember.tensor(p, dtype=getattr(ember, dtype)).requires_grad_()
    t = torch.tensor(p, dtype=getattr(torch, dtype), requires_grad=True)
    he = getattr(D, name)(probs=e).entropy()
    ht = getattr(torch.distributions, name)(probs=t).entropy()
    assert float(he) == 0.0
    close(ember.autograd.grad(he, [e])[0], torch.autograd.grad(ht, [t])[0], rtol=1e-6)
    if name == "Bernoulli":
        e2, t2 = e.detach().requires_grad_(), t.detach().requires_grad_()
        qe = D.Poisson(ember.tensor(2.0, dtype=e.dtype))
        qt = torch.distributions.Poisson(torch.tensor(2.0, dtype=t.dtype))
        ke = D.kl_divergence(D.Bernoulli(probs=e2), qe)
        kt = torch.distributions.kl_divergence(torch.distributions.Bernoulli(probs=t2), qt)
        close(ember.autograd.grad(ke, [e2])[0], torch.autograd.grad(kt, [t2])[0], rtol=1e-6)


def test_wrappers_name_a_base_or_transform_of_the_wrong_kind():
    # a non-Distribution base was AttributeError "'int' object has no attribute 'batch_shape'"
    # (torch's too); a non-Transform a TypeError where torch raises ValueError
    normal = D.Normal(0.0, 1.0)
    for make in (lambda: D.Independent(3, 0), lambda: D.TransformedDistribution(3, [])):
        with pytest.raises(ember.errors.ArgumentTypeError, match="base_distribution must be a "
                           "Distribution, got int"):
            make()
    with pytest.raises(ValueError, match="transforms must be Transform instances, got int"):
        D.TransformedDistribution(normal, [1])
    with pytest.raises(ValueError):  # as torch's
        torch.distributions.TransformedDistribution(torch.distributions.Normal(0.0, 1.0), [1])
